//go:build linux

package tap

import (
	"bytes"
	"errors"
	"testing"

	"gvisor.dev/gvisor/pkg/buffer"
	"gvisor.dev/gvisor/pkg/tcpip"
	"gvisor.dev/gvisor/pkg/tcpip/checksum"
	"gvisor.dev/gvisor/pkg/tcpip/header"
	"gvisor.dev/gvisor/pkg/tcpip/stack"
)

// gsoPacket is an outbound IPv4 + TCP packet as a TCP offering GSO builds
// it: headers pushed, payload behind them, the TCP checksum left as the
// pseudo-header sum over the whole length.
func gsoPacket(payload []byte, mss uint16) *stack.PacketBuffer {
	src, dst := tcpip.AddrFrom4([4]byte{198, 18, 0, 1}), tcpip.AddrFrom4([4]byte{198, 18, 0, 2})
	pkt := stack.NewPacketBuffer(stack.PacketBufferOptions{ReserveHeaderBytes: 40, Payload: buffer.MakeWithData(payload)})
	tcp := header.TCP(pkt.TransportHeader().Push(header.TCPMinimumSize))
	tcp.Encode(&header.TCPFields{SrcPort: 1, DstPort: 2, SeqNum: 5000, AckNum: 7, DataOffset: header.TCPMinimumSize,
		Flags: header.TCPFlagAck | header.TCPFlagPsh, WindowSize: 1000})
	tcpLen := uint16(header.TCPMinimumSize + len(payload))
	tcp.SetChecksum(header.PseudoHeaderChecksum(header.TCPProtocolNumber, src, dst, tcpLen))
	ip := header.IPv4(pkt.NetworkHeader().Push(header.IPv4MinimumSize))
	ip.Encode(&header.IPv4Fields{TotalLength: header.IPv4MinimumSize + tcpLen, TTL: 64, Flags: header.IPv4FlagDontFragment,
		Protocol: uint8(header.TCPProtocolNumber), SrcAddr: src, DstAddr: dst})
	ip.SetChecksum(^ip.CalculateChecksum())
	pkt.NetworkProtocolNumber = header.IPv4ProtocolNumber
	pkt.GSOOptions = stack.GSO{Type: stack.GSOTCPv4, NeedsCsum: true, CsumOffset: header.TCPChecksumOffset,
		MSS: mss, L3HdrLen: header.IPv4MinimumSize, MaxSize: gsoMaxSize}
	return pkt
}

// A GSO packet goes to the kernel whole, behind a virtio-net header that
// describes it: splitting it as that header says (what the kernel does)
// gives MSS-sized segments with valid checksums carrying the payload.
func TestGSOPacketIsWrittenWholeWithAHeaderTheKernelCanSegment(t *testing.T) {
	e, err := New(&Device{cfg: Config{TUN: true, VnetHdr: true}}, Options{GSO: true})
	if err != nil {
		t.Fatal(err)
	}
	if e.SupportedGSO() != stack.HostGSOSupported || e.GSOMaxSize() == 0 {
		t.Fatal("a TAP endpoint with GSO does not offer it")
	}
	var writes [][]byte
	e.tx.writev = func(bufs [][]byte) (int, error) {
		w := bytes.Join(bufs, nil)
		writes = append(writes, w)
		return len(w), nil
	}
	payload := make([]byte, 4000)
	for i := range payload {
		payload[i] = byte(i * 3)
	}
	var l stack.PacketBufferList
	l.PushBack(gsoPacket(payload, 1448))
	l.PushBack(stack.NewPacketBuffer(stack.PacketBufferOptions{Payload: buffer.MakeWithData(make([]byte, 60))}))
	if n, err := e.WritePackets(l); n != 2 || err != nil {
		t.Fatalf("WritePackets = %d, %v", n, err)
	}
	l.DecRef()
	if len(writes) != 2 {
		t.Fatalf("%d writes, want 2: the GSO packet whole, then the plain one", len(writes))
	}
	h, _ := DecodeVnetHdr(writes[0])
	want := VnetHdr{Flags: VnetFlagNeedsCsum, GSOType: VnetGSOTCPv4, HdrLen: 40, GSOSize: 1448, CsumStart: 20, CsumOffset: 16}
	if h != want {
		t.Fatalf("header %+v, want %+v", h, want)
	}
	var got []byte
	segs := 0
	err = Segment(h, writes[0][VnetHdrLen:], 0, func(b []byte) {
		segs++
		ip := header.IPv4(b)
		tcp := header.TCP(ip.Payload())
		sum := header.PseudoHeaderChecksum(header.TCPProtocolNumber, ip.SourceAddress(), ip.DestinationAddress(), uint16(len(tcp)))
		if !ip.IsChecksumValid() || checksum.Checksum(tcp, sum) != 0xffff || len(tcp.Payload()) > 1448 {
			t.Errorf("segment %d: bad checksum or %d bytes", segs, len(tcp.Payload()))
		}
		got = append(got, tcp.Payload()...)
	})
	if err != nil || segs != 3 || !bytes.Equal(got, payload) {
		t.Fatalf("split into %d segments (%v); payload intact %v", segs, err, bytes.Equal(got, payload))
	}
	if h, _ := DecodeVnetHdr(writes[1]); h != (VnetHdr{}) {
		t.Errorf("a plain frame's header is %+v, want zero", h)
	}
	if c := e.Counters(); c.TxGSO.Load() != 1 || c.TxFrames.Load() != 2 {
		t.Errorf("tx.gso %d, tx.frames %d; want 1 and 2", c.TxGSO.Load(), c.TxFrames.Load())
	}
}

func TestGSOWithoutVnetHeaderIsRefused(t *testing.T) {
	_, err := New(&Device{cfg: Config{TUN: true}}, Options{GSO: true})
	if !errors.Is(err, ErrBadConfig) {
		t.Fatalf("err %v, want ErrBadConfig", err)
	}
	e, err := New(&Device{cfg: Config{TUN: true, VnetHdr: true}}, Options{})
	if err != nil || e.SupportedGSO() != stack.GSONotSupported || e.GSOMaxSize() != 0 {
		t.Fatalf("a TAP endpoint without Options.GSO offers GSO (%v)", err)
	}
}
