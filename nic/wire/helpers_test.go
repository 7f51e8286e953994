package wire

import (
	"encoding/binary"
	"testing"
	"time"

	"gvisor.dev/gvisor/pkg/buffer"
	"gvisor.dev/gvisor/pkg/tcpip"
	"gvisor.dev/gvisor/pkg/tcpip/checksum"
	"gvisor.dev/gvisor/pkg/tcpip/header"
	"gvisor.dev/gvisor/pkg/tcpip/stack"

	"github.com/netramp/netramp/stack/vclock"
)

var (
	epoch = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	addrA = tcpip.AddrFrom4([4]byte{198, 18, 0, 1})
	addrB = tcpip.AddrFrom4([4]byte{198, 18, 0, 2})
)

// seg builds an IPv4/TCP segment with valid checksums: id is carried in the
// sequence number so a test can tell frames apart.
func seg(id uint32, payload int, flags header.TCPFlags) []byte {
	tl := header.IPv4MinimumSize + header.TCPMinimumSize + payload
	b := make([]byte, tl)
	ip := header.IPv4(b)
	ip.Encode(&header.IPv4Fields{
		TotalLength: uint16(tl), ID: uint16(id), TTL: 64, Protocol: uint8(header.TCPProtocolNumber),
		SrcAddr: addrA, DstAddr: addrB,
	})
	ip.SetChecksum(^ip.CalculateChecksum())
	t := header.TCP(b[header.IPv4MinimumSize:])
	t.Encode(&header.TCPFields{
		SrcPort: 1000, DstPort: 2000, SeqNum: id, AckNum: 1,
		DataOffset: header.TCPMinimumSize, Flags: flags, WindowSize: 65535,
	})
	for i := 0; i < payload; i++ {
		b[header.IPv4MinimumSize+header.TCPMinimumSize+i] = byte(id + uint32(i))
	}
	xsum := header.PseudoHeaderChecksum(header.TCPProtocolNumber, addrA, addrB, uint16(header.TCPMinimumSize+payload))
	xsum = checksum.Checksum(b[header.IPv4MinimumSize:], xsum)
	t.SetChecksum(^xsum)
	return b
}

func data(id uint32, payload int) []byte { return seg(id, payload, header.TCPFlagAck) }
func ack(id uint32) []byte               { return seg(id, 0, header.TCPFlagAck) }

// checksumsValid reports whether a segment built by seg still carries valid
// IP and TCP checksums.
func checksumsValid(b []byte) bool {
	ip := header.IPv4(b)
	if !ip.IsChecksumValid() {
		return false
	}
	tl := int(ip.TotalLength())
	if tl != len(b) {
		return false
	}
	tcp := b[header.IPv4MinimumSize:tl]
	xsum := header.PseudoHeaderChecksum(header.TCPProtocolNumber, ip.SourceAddress(), ip.DestinationAddress(), uint16(len(tcp)))
	return checksum.Checksum(tcp, xsum) == 0xffff
}

// ipID returns the IPv4 identification, the low 16 bits of the id: unlike
// the sequence number, corruption (which stays past the IP header) never
// touches it.
func ipID(b []byte) uint32 { return uint32(header.IPv4(b).ID()) }

func segID(b []byte) uint32 {
	return binary.BigEndian.Uint32(b[header.IPv4MinimumSize+4:])
}

// rx is one frame a sink received.
type rx struct {
	at    time.Duration
	proto tcpip.NetworkProtocolNumber
	b     []byte
}

// sink is a NetworkDispatcher that records what it receives; onRx, if set,
// runs after each frame (a stack answering synchronously).
type sink struct {
	clk     *vclock.Clock
	got     []rx
	onRx    func(rx)
	discard bool // count only
	n       int
}

func (s *sink) DeliverNetworkPacket(p tcpip.NetworkProtocolNumber, pkt *stack.PacketBuffer) {
	s.n++
	if s.discard {
		return
	}
	v := pkt.ToView()
	r := rx{at: s.clk.Elapsed(), proto: p, b: append([]byte(nil), v.AsSlice()...)}
	v.Release()
	s.got = append(s.got, r)
	if s.onRx != nil {
		s.onRx(r)
	}
}

func (*sink) DeliverLinkPacket(tcpip.NetworkProtocolNumber, *stack.PacketBuffer) {}

// send writes frames to ep in one WritePackets call.
func send(ep stack.LinkEndpoint, frames ...[]byte) (int, tcpip.Error) {
	var l stack.PacketBufferList
	var pkts []*stack.PacketBuffer
	for _, f := range frames {
		p := stack.NewPacketBuffer(stack.PacketBufferOptions{Payload: buffer.MakeWithData(append([]byte(nil), f...))})
		pkts = append(pkts, p)
		l.PushBack(p)
	}
	n, err := ep.WritePackets(l)
	for _, p := range pkts {
		p.DecRef()
	}
	return n, err
}

// rig is a wire on a virtual clock with a recording sink at each end.
type rig struct {
	clk  *vclock.Clock
	w    *Wire
	a, b *sink
}

func newRig(t testing.TB, cfg Config) *rig {
	t.Helper()
	clk := vclock.New(epoch)
	w, err := New(clk, cfg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	r := &rig{clk: clk, w: w, a: &sink{clk: clk}, b: &sink{clk: clk}}
	w.A().Attach(r.a)
	w.B().Attach(r.b)
	return r
}

// sendEvery writes frames from ep one at a time, the i-th at i*gap.
func (r *rig) sendEvery(t *testing.T, ep stack.LinkEndpoint, gap time.Duration, frames [][]byte) {
	t.Helper()
	r.sendEveryMayFail(t, ep, gap, frames, false)
}

// sendEveryMayFail is sendEvery where a refused write is expected when
// mayFail is set.
func (r *rig) sendEveryMayFail(t *testing.T, ep stack.LinkEndpoint, gap time.Duration, frames [][]byte, mayFail bool) {
	t.Helper()
	for i, f := range frames {
		f := f
		r.clk.AfterFunc(time.Duration(i)*gap, func() {
			if _, err := send(ep, f); err != nil && !mayFail {
				t.Errorf("frame %d: %v", i, err)
			}
		})
	}
}

func (r *rig) drain() {
	for r.clk.Step() {
	}
}
