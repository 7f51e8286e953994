package tap

import (
	"bytes"
	"testing"

	"gvisor.dev/gvisor/pkg/tcpip"
	"gvisor.dev/gvisor/pkg/tcpip/checksum"
	"gvisor.dev/gvisor/pkg/tcpip/header"
)

// gsoFrame builds an Ethernet + IPv4 + TCP frame carrying payload in one
// segment, with the TCP checksum left partial as the kernel leaves it.
func gsoFrame(payload []byte, flags header.TCPFlags) []byte {
	src, dst := tcpip.AddrFrom4([4]byte{198, 18, 0, 1}), tcpip.AddrFrom4([4]byte{198, 18, 0, 2})
	b := make([]byte, header.EthernetMinimumSize+header.IPv4MinimumSize+header.TCPMinimumSize+len(payload))
	header.Ethernet(b).Encode(&header.EthernetFields{Type: header.IPv4ProtocolNumber})
	ip := header.IPv4(b[header.EthernetMinimumSize:])
	ip.Encode(&header.IPv4Fields{
		TotalLength: uint16(len(b) - header.EthernetMinimumSize), ID: 100, TTL: 64,
		Protocol: uint8(header.TCPProtocolNumber), SrcAddr: src, DstAddr: dst,
	})
	tcp := header.TCP(ip[header.IPv4MinimumSize:])
	tcp.Encode(&header.TCPFields{SrcPort: 1, DstPort: 2, SeqNum: 0xfffff000, AckNum: 7,
		DataOffset: header.TCPMinimumSize, Flags: flags, WindowSize: 1000})
	copy(tcp[header.TCPMinimumSize:], payload)
	tcp.SetChecksum(header.PseudoHeaderChecksum(header.TCPProtocolNumber, src, dst, uint16(len(tcp))))
	return b
}

func TestSegmentSplitsGSOFrameLikeTSO(t *testing.T) {
	payload := make([]byte, 3000)
	for i := range payload {
		payload[i] = byte(i * 7)
	}
	frame := gsoFrame(payload, header.TCPFlagAck|header.TCPFlagPsh|header.TCPFlagCwr|header.TCPFlagFin)
	h := VnetHdr{Flags: VnetFlagNeedsCsum, GSOType: VnetGSOTCPv4, GSOSize: 1448,
		HdrLen: 54, CsumStart: 34, CsumOffset: 16}
	var segs [][]byte
	if err := Segment(h, frame, header.EthernetMinimumSize, func(b []byte) { segs = append(segs, bytes.Clone(b)) }); err != nil {
		t.Fatal(err)
	}
	wantLens := []int{1448, 1448, 104}
	if len(segs) != len(wantLens) {
		t.Fatalf("got %d segments, want %d", len(segs), len(wantLens))
	}
	var got []byte
	for i, s := range segs {
		ip := header.IPv4(s[header.EthernetMinimumSize:])
		if !ip.IsChecksumValid() {
			t.Errorf("segment %d: bad IPv4 checksum", i)
		}
		if ip.ID() != uint16(100+i) {
			t.Errorf("segment %d: IP ID %d, want %d", i, ip.ID(), 100+i)
		}
		tcp := header.TCP(ip.Payload())
		if n := len(tcp.Payload()); n != wantLens[i] {
			t.Errorf("segment %d: %d payload bytes, want %d", i, n, wantLens[i])
		}
		if want := uint32(0xfffff000) + uint32(i*1448); tcp.SequenceNumber() != want {
			t.Errorf("segment %d: seq %#x, want %#x", i, tcp.SequenceNumber(), want)
		}
		xsum := header.PseudoHeaderChecksum(header.TCPProtocolNumber, ip.SourceAddress(), ip.DestinationAddress(), uint16(len(tcp)))
		if checksum.Checksum(tcp, xsum) != 0xffff {
			t.Errorf("segment %d: bad TCP checksum", i)
		}
		f := tcp.Flags()
		last := i == len(segs)-1
		if (f&header.TCPFlagFin != 0) != last || (f&header.TCPFlagPsh != 0) != last {
			t.Errorf("segment %d: flags %v: FIN and PSH belong on the last segment only", i, f)
		}
		if (f&header.TCPFlagCwr != 0) != (i == 0) {
			t.Errorf("segment %d: flags %v: CWR belongs on the first segment only", i, f)
		}
		got = append(got, tcp.Payload()...)
	}
	if !bytes.Equal(got, payload) {
		t.Error("payload not reassembled intact")
	}
}

func TestFinishChecksumCompletesPartialSum(t *testing.T) {
	frame := gsoFrame([]byte("hello, kernel"), header.TCPFlagAck)
	h := VnetHdr{Flags: VnetFlagNeedsCsum, CsumStart: 34, CsumOffset: 16}
	if err := FinishChecksum(h, frame); err != nil {
		t.Fatal(err)
	}
	ip := header.IPv4(frame[header.EthernetMinimumSize:])
	tcp := header.TCP(ip.Payload())
	xsum := header.PseudoHeaderChecksum(header.TCPProtocolNumber, ip.SourceAddress(), ip.DestinationAddress(), uint16(len(tcp)))
	if checksum.Checksum(tcp, xsum) != 0xffff {
		t.Error("TCP checksum not valid after FinishChecksum")
	}
}

func TestMalformedOffloadFramesAreErrors(t *testing.T) {
	frame := gsoFrame(make([]byte, 100), header.TCPFlagAck)
	cases := []struct {
		name string
		h    VnetHdr
		b    []byte
	}{
		{"udp gso", VnetHdr{GSOType: VnetGSOUDP, GSOSize: 1000}, frame},
		{"zero gso size", VnetHdr{GSOType: VnetGSOTCPv4}, frame},
		{"truncated", VnetHdr{GSOType: VnetGSOTCPv4, GSOSize: 1000}, frame[:20]},
		{"bad data offset", VnetHdr{GSOType: VnetGSOTCPv4, GSOSize: 1000}, func() []byte {
			b := bytes.Clone(frame)
			b[14+20+12] = 0x10 // data offset 4 bytes
			return b
		}()},
	}
	for _, c := range cases {
		if err := Segment(c.h, c.b, 14, func([]byte) {}); err == nil {
			t.Errorf("%s: Segment accepted it", c.name)
		}
	}
	if err := FinishChecksum(VnetHdr{Flags: VnetFlagNeedsCsum, CsumStart: 200, CsumOffset: 16}, frame); err == nil {
		t.Error("FinishChecksum accepted a checksum offset past the frame")
	}
	if _, err := DecodeVnetHdr(make([]byte, 5)); err == nil {
		t.Error("DecodeVnetHdr accepted 5 bytes")
	}
}
