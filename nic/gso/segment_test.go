package gso

import (
	"bytes"
	"errors"
	"testing"

	"gvisor.dev/gvisor/pkg/buffer"
	"gvisor.dev/gvisor/pkg/tcpip"
	"gvisor.dev/gvisor/pkg/tcpip/checksum"
	"gvisor.dev/gvisor/pkg/tcpip/header"
	"gvisor.dev/gvisor/pkg/tcpip/link/channel"
	"gvisor.dev/gvisor/pkg/tcpip/stack"

	"github.com/netramp/netramp/counters"
)

// ipv4Packet is an IPv4 + TCP packet carrying payload, checksum partial.
func ipv4Packet(payload []byte) []byte {
	src, dst := tcpip.AddrFrom4([4]byte{198, 18, 0, 1}), tcpip.AddrFrom4([4]byte{198, 18, 0, 2})
	b := make([]byte, header.IPv4MinimumSize+header.TCPMinimumSize+len(payload))
	ip := header.IPv4(b)
	ip.Encode(&header.IPv4Fields{TotalLength: uint16(len(b)), TTL: 64, Protocol: uint8(header.TCPProtocolNumber), SrcAddr: src, DstAddr: dst})
	tcp := header.TCP(b[header.IPv4MinimumSize:])
	tcp.Encode(&header.TCPFields{SrcPort: 1, DstPort: 2, SeqNum: 1000, DataOffset: header.TCPMinimumSize,
		Flags: header.TCPFlagAck | header.TCPFlagPsh, WindowSize: 100})
	copy(tcp[header.TCPMinimumSize:], payload)
	return b
}

func TestSegmentRejectsMalformedPacketsWithAnError(t *testing.T) {
	good := ipv4Packet(make([]byte, 3000))
	badOffset := bytes.Clone(good)
	header.TCP(badOffset[header.IPv4MinimumSize:]).SetDataOffset(60)
	udp := bytes.Clone(good)
	udp[9] = uint8(header.UDPProtocolNumber)
	for _, c := range []struct {
		name  string
		kind  Kind
		mss   int
		frame []byte
		l3    int
	}{
		{"no kind", 0, 1460, good, 0},
		{"zero mss", TCPv4, 0, good, 0},
		{"negative l3", TCPv4, 1460, good, -1},
		{"l3 past the end", TCPv4, 1460, good, len(good)},
		{"empty", TCPv4, 1460, nil, 0},
		{"short IPv4", TCPv4, 1460, good[:10], 0},
		{"short IPv6", TCPv6, 1460, good[:30], 0},
		{"IPv6 kind on IPv4", TCPv6, 1460, good, 0},
		{"not TCP", TCPv4, 1460, udp, 0},
		{"short TCP", TCPv4, 1460, good[:header.IPv4MinimumSize+8], 0},
		{"data offset past the end", TCPv4, 1460, badOffset[:header.IPv4MinimumSize+40], 0},
		{"mss beyond IP", TCPv4, 70000, good, 0},
	} {
		emitted := 0
		err := Segment(c.kind, c.mss, c.frame, c.l3, func([]byte) { emitted++ })
		if !errors.Is(err, ErrMalformed) || emitted != 0 {
			t.Errorf("%s: err %v after %d frames, want ErrMalformed and none", c.name, err, emitted)
		}
		if c.mss <= 0 || c.mss > 0xffff {
			continue // Whole takes no MSS
		}
		err = Whole(c.kind, bytes.Clone(c.frame), c.l3, func([]byte) { emitted++ })
		if !errors.Is(err, ErrMalformed) || emitted != 0 {
			t.Errorf("%s: Whole: err %v after %d frames, want ErrMalformed and none", c.name, err, emitted)
		}
	}
	if err := Whole(TCPv4, ipv4Packet(make([]byte, 0xffff-40+1)), 0, func([]byte) {}); !errors.Is(err, ErrMalformed) {
		t.Errorf("Whole passed a packet longer than IP can say: err %v", err)
	}
}

// Whole passes a GSO frame on as one segment, its IP length, header
// checksum and TCP checksum made to cover it all, wherever its IP header
// lies.
func TestWholeFixesLengthsAndChecksumsOfTheAggregate(t *testing.T) {
	payload := make([]byte, 40000)
	for i := range payload {
		payload[i] = byte(i*13 + 1)
	}
	for _, l3 := range []int{0, header.EthernetMinimumSize} {
		frame := append(make([]byte, l3), ipv4Packet(payload)...)
		header.IPv4(frame[l3:]).SetTotalLength(1500) // as a GSO frame may say
		var got [][]byte
		if err := Whole(TCPv4, frame, l3, func(b []byte) { got = append(got, bytes.Clone(b)) }); err != nil {
			t.Fatal(err)
		}
		if len(got) != 1 || len(got[0]) != len(frame) {
			t.Fatalf("l3 %d: %d frames, want the one of %d bytes", l3, len(got), len(frame))
		}
		ip := header.IPv4(got[0][l3:])
		if !ip.IsChecksumValid() || int(ip.TotalLength()) != len(frame)-l3 {
			t.Errorf("l3 %d: IPv4 length %d of %d bytes or checksum bad", l3, ip.TotalLength(), len(frame)-l3)
		}
		tcp := header.TCP(ip.Payload())
		sum := header.PseudoHeaderChecksum(header.TCPProtocolNumber, ip.SourceAddress(), ip.DestinationAddress(), uint16(len(tcp)))
		if checksum.Checksum(tcp, sum) != 0xffff || !bytes.Equal(tcp.Payload(), payload) {
			t.Errorf("l3 %d: TCP checksum or payload bad", l3)
		}
	}
}

func TestLinkSplitsGSOPacketsAndCountsMalformedDrops(t *testing.T) {
	inner := channel.New(16, 1500, "")
	r := counters.NewRegistry()
	l, err := NewLink(inner, LinkOptions{Counters: r})
	if err != nil {
		t.Fatal(err)
	}
	if l.SupportedGSO() != stack.HostGSOSupported || l.GSOMaxSize() != 1<<16 {
		t.Fatalf("offers %v up to %d", l.SupportedGSO(), l.GSOMaxSize())
	}
	mk := func(b []byte, g stack.GSO) *stack.PacketBuffer {
		pkt := stack.NewPacketBuffer(stack.PacketBufferOptions{ReserveHeaderBytes: 40, Payload: buffer.MakeWithData(b[40:])})
		copy(pkt.TransportHeader().Push(20), b[20:40])
		copy(pkt.NetworkHeader().Push(20), b[:20])
		pkt.NetworkProtocolNumber = header.IPv4ProtocolNumber
		pkt.GSOOptions = g
		return pkt
	}
	payload := make([]byte, 3000)
	for i := range payload {
		payload[i] = byte(i)
	}
	good := mk(ipv4Packet(payload), stack.GSO{Type: stack.GSOTCPv4, MSS: 1460, NeedsCsum: true})
	short := ipv4Packet(nil)
	header.TCP(short[header.IPv4MinimumSize:]).SetDataOffset(60) // options the packet does not have
	bad := mk(short, stack.GSO{Type: stack.GSOTCPv4, MSS: 1460})
	var pkts stack.PacketBufferList
	pkts.PushBack(good)
	pkts.PushBack(bad)
	if n, err := l.WritePackets(pkts); err != nil || n != 2 {
		t.Fatalf("WritePackets = %d, %v", n, err)
	}
	pkts.DecRef()
	var got []byte
	for i := 0; ; i++ {
		pkt := inner.Read()
		if pkt == nil {
			if i != 3 {
				t.Fatalf("%d frames, want 3", i)
			}
			break
		}
		v := pkt.ToView()
		ip := header.IPv4(v.AsSlice())
		if !ip.IsChecksumValid() || int(ip.TotalLength()) != v.Size() {
			t.Errorf("frame %d: bad IPv4 header", i)
		}
		tcp := header.TCP(ip.Payload())
		sum := header.PseudoHeaderChecksum(header.TCPProtocolNumber, ip.SourceAddress(), ip.DestinationAddress(), uint16(len(tcp)))
		if checksum.Checksum(tcp, sum) != 0xffff || tcp.SequenceNumber() != uint32(1000+1460*i) {
			t.Errorf("frame %d: bad TCP checksum or sequence number %d", i, tcp.SequenceNumber())
		}
		got = append(got, tcp.Payload()...)
		v.Release()
		pkt.DecRef()
	}
	if !bytes.Equal(got, payload) {
		t.Error("the frames' payloads are not the packet's")
	}
	c := l.Counters()
	if c.Packets.Load() != 1 || c.Frames.Load() != 3 || c.Drops.Load() != 1 {
		t.Errorf("counters: packets %d frames %d drops %d, want 1 3 1", c.Packets.Load(), c.Frames.Load(), c.Drops.Load())
	}
}

// Whatever bytes arrive, Segment returns an error or frames that each fit
// the MSS; it never panics. The seeds run with go test; go test -fuzz
// explores further.
func FuzzSegmentNeverPanics(f *testing.F) {
	good := ipv4Packet(make([]byte, 3000))
	f.Add(uint8(TCPv4), 1460, good, 0)
	f.Add(uint8(TCPv6), 1460, good, 0)
	f.Add(uint8(TCPv4), 1, good[:41], 0)
	f.Add(uint8(TCPv4), 1460, append(make([]byte, 14), good...), 14)
	f.Fuzz(func(t *testing.T, kind uint8, mss int, frame []byte, l3 int) {
		if mss > 1<<16 {
			mss %= 1 << 16 // a huge MSS only slows the fuzzer down
		}
		err := Segment(Kind(kind), mss, frame, l3, func(b []byte) {
			if len(b) > len(frame) {
				t.Fatalf("a %d-byte frame from a %d-byte packet", len(b), len(frame))
			}
		})
		if err != nil && !errors.Is(err, ErrMalformed) {
			t.Fatalf("error %v is not ErrMalformed", err)
		}
		err = Whole(Kind(kind), bytes.Clone(frame), l3, func(b []byte) {
			if len(b) != len(frame) {
				t.Fatalf("Whole made a %d-byte frame of a %d-byte packet", len(b), len(frame))
			}
		})
		if err != nil && !errors.Is(err, ErrMalformed) {
			t.Fatalf("Whole: error %v is not ErrMalformed", err)
		}
	})
}

// With GRO the link passes a GSO packet on as one aggregate: the IP length
// and a complete TCP checksum cover the whole payload, the flags are the
// packet's, and a packet whose whole would not fit an IP length field is
// dropped and counted, not cut.
func TestLinkWithGROPassesGSOPacketsWhole(t *testing.T) {
	inner := channel.New(16, 1500, "")
	l, err := NewLink(inner, LinkOptions{GRO: true})
	if err != nil {
		t.Fatal(err)
	}
	mk := func(b []byte) *stack.PacketBuffer {
		pkt := stack.NewPacketBuffer(stack.PacketBufferOptions{ReserveHeaderBytes: 40, Payload: buffer.MakeWithData(b[40:])})
		copy(pkt.TransportHeader().Push(20), b[20:40])
		copy(pkt.NetworkHeader().Push(20), b[:20])
		pkt.NetworkProtocolNumber = header.IPv4ProtocolNumber
		pkt.GSOOptions = stack.GSO{Type: stack.GSOTCPv4, MSS: 1460, NeedsCsum: true}
		return pkt
	}
	payload := make([]byte, 5000)
	for i := range payload {
		payload[i] = byte(i * 7)
	}
	huge := ipv4Packet(make([]byte, 0xffff-40+1)) // one byte past what IP can say
	var pkts stack.PacketBufferList
	pkts.PushBack(mk(ipv4Packet(payload)))
	pkts.PushBack(mk(huge))
	if n, err := l.WritePackets(pkts); err != nil || n != 2 {
		t.Fatalf("WritePackets = %d, %v", n, err)
	}
	pkts.DecRef()
	pkt := inner.Read()
	if pkt == nil {
		t.Fatal("nothing passed on")
	}
	v := pkt.ToView()
	ip := header.IPv4(v.AsSlice())
	if !ip.IsChecksumValid() || int(ip.TotalLength()) != v.Size() || v.Size() != 40+len(payload) {
		t.Errorf("bad IPv4 header: length %d of %d bytes", ip.TotalLength(), v.Size())
	}
	tcp := header.TCP(ip.Payload())
	sum := header.PseudoHeaderChecksum(header.TCPProtocolNumber, ip.SourceAddress(), ip.DestinationAddress(), uint16(len(tcp)))
	if checksum.Checksum(tcp, sum) != 0xffff || tcp.SequenceNumber() != 1000 || tcp.Flags() != header.TCPFlagAck|header.TCPFlagPsh {
		t.Errorf("bad TCP checksum, sequence number %d or flags %v", tcp.SequenceNumber(), tcp.Flags())
	}
	if !bytes.Equal(tcp.Payload(), payload) {
		t.Error("the aggregate's payload is not the packet's")
	}
	v.Release()
	pkt.DecRef()
	if p := inner.Read(); p != nil {
		t.Error("more than the one aggregate passed on")
		p.DecRef()
	}
	c := l.Counters()
	if c.Whole.Load() != 1 || c.Packets.Load() != 0 || c.Frames.Load() != 0 || c.Drops.Load() != 1 {
		t.Errorf("counters: whole %d packets %d frames %d drops %d, want 1 0 0 1", c.Whole.Load(), c.Packets.Load(), c.Frames.Load(), c.Drops.Load())
	}
}
