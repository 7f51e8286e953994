package tcp_test

import (
	"bytes"
	"encoding/binary"
	"net/netip"
	"testing"
	"time"

	"gvisor.dev/gvisor/pkg/buffer"
	"gvisor.dev/gvisor/pkg/tcpip"
	"gvisor.dev/gvisor/pkg/tcpip/checksum"
	"gvisor.dev/gvisor/pkg/tcpip/header"
	"gvisor.dev/gvisor/pkg/tcpip/link/channel"
	"gvisor.dev/gvisor/pkg/tcpip/network/ipv4"
	"gvisor.dev/gvisor/pkg/tcpip/seqnum"
	gstack "gvisor.dev/gvisor/pkg/tcpip/stack"
	"gvisor.dev/gvisor/pkg/waiter"

	"github.com/netramp/netramp/counters"
	"github.com/netramp/netramp/nic"
	"github.com/netramp/netramp/stack"
	"github.com/netramp/netramp/stack/vclock"
	"github.com/netramp/netramp/tcp"
)

// captureLink is a channel endpoint that can refuse writes (as a full TX
// ring does) while reporting credit, and that records what it refused.
type captureLink struct {
	*channel.Endpoint
	refuse  bool
	refused int
	credit  int // reported TxFree; 0 = unlimited
	waiters []func()
}

func (l *captureLink) WritePackets(pkts gstack.PacketBufferList) (int, tcpip.Error) {
	if l.refuse {
		l.refused += pkts.Len()
		return 0, &tcpip.ErrNoBufferSpace{}
	}
	return l.Endpoint.WritePackets(pkts)
}

func (l *captureLink) TxCredit() nic.Credit { return l }

func (l *captureLink) TxFree() int {
	if l.credit == 0 {
		return 1 << 20
	}
	return l.credit
}

func (l *captureLink) NotifyTxFree(f func()) func() {
	l.waiters = append(l.waiters, f)
	return func() {}
}

// release lets writes through again and runs the credit waiters.
func (l *captureLink) release() {
	l.refuse = false
	ws := l.waiters
	l.waiters = nil
	for _, f := range ws {
		f()
	}
}

// segHarness is one stack with our TCP on a capture link, and a scripted peer.
type segHarness struct {
	t    *testing.T
	clk  *vclock.Clock
	link *captureLink
	s    *stack.Stack
	reg  *counters.Registry
}

var (
	hostAddr = netip.MustParseAddr("10.0.0.1")
	peerAddr = netip.MustParseAddr("10.0.0.2")
)

const peerPort = 40000

func newSegHarness(t *testing.T, o tcp.Options) *segHarness { return newSegHarnessCredit(t, o, true) }

// noCreditLink hides the capture link's credit interface from the stack.
type noCreditLink struct{ gstack.LinkEndpoint }

func newSegHarnessCredit(t *testing.T, o tcp.Options, credit bool) *segHarness {
	t.Helper()
	clk := vclock.New(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	link := &captureLink{Endpoint: channel.New(1024, 1500, "")}
	reg := counters.NewRegistry()
	o.Counters = reg
	var l gstack.LinkEndpoint = link
	if !credit {
		l = noCreditLink{link}
	}
	s, err := stack.New(stack.Options{TCP: o, Clock: clk, Seed: 11, Counters: reg,
		NICs: []stack.NIC{{Link: l, Addr: netip.PrefixFrom(hostAddr, 24)}}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	return &segHarness{t: t, clk: clk, link: link, s: s, reg: reg}
}

// pseg is a segment the peer sends, or one read back from the host.
type pseg struct {
	srcPort, dstPort uint16
	seq, ack         uint32
	flags            header.TCPFlags
	wnd              uint16
	opts             []byte
	payload          []byte
}

func (s pseg) has(f header.TCPFlags) bool { return s.flags&f != 0 }

func (s pseg) synOpts() header.TCPSynOptions {
	return header.ParseSynOptions(s.opts, s.has(header.TCPFlagAck))
}

func (s pseg) tcpOpts() header.TCPOptions { return header.ParseTCPOptions(s.opts) }

// inject delivers s from the peer to the host, as if it came off the wire.
func (h *segHarness) inject(s pseg) {
	h.injectRaw(s, nil)
}

// injectRaw delivers s, letting mangle edit the TCP header bytes afterwards
// (the checksum is recomputed after mangle unless mangle returns false).
func (h *segHarness) injectRaw(s pseg, mangle func(header.TCP) bool) {
	pkt := gstack.NewPacketBuffer(gstack.PacketBufferOptions{Payload: buffer.MakeWithData(frame(s, mangle))})
	h.link.InjectInbound(ipv4.ProtocolNumber, pkt)
	pkt.DecRef()
}

// frame is s as an IPv4 datagram from the peer to the host.
func frame(s pseg, mangle func(header.TCP) bool) []byte {
	optLen := (len(s.opts) + 3) &^ 3
	tcpLen := header.TCPMinimumSize + optLen
	b := make([]byte, header.IPv4MinimumSize+tcpLen+len(s.payload))
	ip := header.IPv4(b)
	ip.Encode(&header.IPv4Fields{TotalLength: uint16(len(b)), TTL: 64, Protocol: uint8(header.TCPProtocolNumber),
		SrcAddr: tcpip.AddrFromSlice(peerAddr.AsSlice()), DstAddr: tcpip.AddrFromSlice(hostAddr.AsSlice())})
	ip.SetChecksum(^ip.CalculateChecksum())
	th := header.TCP(b[header.IPv4MinimumSize:])
	th.Encode(&header.TCPFields{SrcPort: s.srcPort, DstPort: s.dstPort, SeqNum: s.seq, AckNum: s.ack,
		DataOffset: uint8(tcpLen), Flags: s.flags, WindowSize: s.wnd})
	copy(th[header.TCPMinimumSize:], s.opts)
	copy(th[tcpLen:], s.payload)
	fix := true
	if mangle != nil {
		fix = mangle(th)
	}
	if fix {
		th.SetChecksum(0)
		xsum := header.PseudoHeaderChecksum(header.TCPProtocolNumber, ip.SourceAddress(), ip.DestinationAddress(), uint16(len(th)))
		xsum = checksum.Checksum(th, xsum)
		th.SetChecksum(^xsum)
	}
	return b
}

// out returns every segment the host has sent since the last call.
func (h *segHarness) out() []pseg {
	var segs []pseg
	for {
		pkt := h.link.Read()
		if pkt == nil {
			return segs
		}
		v := pkt.ToView()
		b := v.AsSlice()
		ip := header.IPv4(b)
		th := header.TCP(b[ip.HeaderLength():])
		off := int(th.DataOffset())
		segs = append(segs, pseg{
			srcPort: th.SourcePort(), dstPort: th.DestinationPort(), seq: th.SequenceNumber(), ack: th.AckNumber(),
			flags: th.Flags(), wnd: th.WindowSize(),
			opts:    append([]byte(nil), th[header.TCPMinimumSize:off]...),
			payload: append([]byte(nil), th[off:]...),
		})
		v.Release()
		pkt.DecRef()
	}
}

// one returns the single segment sent since the last call.
func (h *segHarness) one() pseg {
	h.t.Helper()
	segs := h.out()
	if len(segs) != 1 {
		h.t.Fatalf("host sent %d segments, want 1: %+v", len(segs), segs)
	}
	return segs[0]
}

func (h *segHarness) none() {
	h.t.Helper()
	if segs := h.out(); len(segs) != 0 {
		h.t.Fatalf("host sent %d segments, want none: %+v", len(segs), segs)
	}
}

func (h *segHarness) count(name string) uint64 { return h.reg.Snapshot()[name] }

func (h *segHarness) listen(port uint16, backlog int) (tcpip.Endpoint, *waiter.Queue) {
	h.t.Helper()
	wq := new(waiter.Queue)
	ep, err := h.s.Gvisor().NewEndpoint(tcp.ProtocolNumber, ipv4.ProtocolNumber, wq)
	if err != nil {
		h.t.Fatal(err)
	}
	if err := ep.Bind(tcpip.FullAddress{Port: port}); err != nil {
		h.t.Fatal(err)
	}
	if err := ep.Listen(backlog); err != nil {
		h.t.Fatal(err)
	}
	h.t.Cleanup(ep.Close)
	return ep, wq
}

// synOptions builds a SYN's options: MSS, and optionally WS, SACK-permitted
// and timestamps.
func synOptions(mss uint16, ws int, sack bool, ts bool, tsVal uint32) []byte {
	b := make([]byte, 40)
	n := header.EncodeMSSOption(uint32(mss), b)
	if ws >= 0 {
		n += header.EncodeNOP(b[n:])
		n += header.EncodeWSOption(ws, b[n:])
	}
	if sack {
		n += header.EncodeNOP(b[n:])
		n += header.EncodeNOP(b[n:])
		n += header.EncodeSACKPermittedOption(b[n:])
	}
	if ts {
		n += header.EncodeNOP(b[n:])
		n += header.EncodeNOP(b[n:])
		n += header.EncodeTSOption(tsVal, 0, b[n:])
	}
	return b[:n]
}

func tsOption(val, ecr uint32) []byte {
	b := make([]byte, 12)
	n := header.EncodeNOP(b)
	n += header.EncodeNOP(b[n:])
	n += header.EncodeTSOption(val, ecr, b[n:])
	return b[:n]
}

// conn is an established passive connection with the scripted peer's
// sequence state.
type conn struct {
	h        *segHarness
	ep       tcpip.Endpoint
	wq       *waiter.Queue
	port     uint16
	peerNxt  uint32 // next sequence number the peer sends
	hostNxt  uint32 // next sequence number the host sends (what the peer acks)
	ts       bool
	peerTS   uint32
	hostTS   uint32 // last TSval seen from the host
	wndShift int
}

// accept completes a handshake from the peer to a listener on port with the
// given SYN options and returns the accepted endpoint.
func (h *segHarness) accept(port uint16, opts []byte) *conn {
	h.t.Helper()
	l, _ := h.listen(port, 8)
	c := &conn{h: h, port: port, peerNxt: 1000}
	h.inject(pseg{srcPort: peerPort, dstPort: port, seq: c.peerNxt, flags: header.TCPFlagSyn, wnd: 65535, opts: opts})
	c.peerNxt++
	sa := h.one()
	if !sa.has(header.TCPFlagSyn) || !sa.has(header.TCPFlagAck) || sa.ack != c.peerNxt {
		h.t.Fatalf("want SYN-ACK acking %d, got %+v", c.peerNxt, sa)
	}
	so := sa.synOpts()
	c.ts = so.TS
	c.hostTS = so.TSVal
	c.peerTS = 5000
	c.hostNxt = sa.seq + 1
	ack := pseg{srcPort: peerPort, dstPort: port, seq: c.peerNxt, ack: c.hostNxt, flags: header.TCPFlagAck, wnd: 65535}
	if c.ts {
		ack.opts = tsOption(c.peerTS, c.hostTS)
	}
	h.inject(ack)
	ep, wq, err := l.Accept(nil)
	if err != nil {
		h.t.Fatalf("accept after handshake: %v", err)
	}
	c.ep, c.wq = ep, wq
	return c
}

// send injects a segment from the peer at its current sequence state.
func (c *conn) send(flags header.TCPFlags, payload []byte) {
	s := pseg{srcPort: peerPort, dstPort: c.port, seq: c.peerNxt, ack: c.hostNxt, flags: flags, wnd: 65535, payload: payload}
	if c.ts {
		c.peerTS++
		s.opts = tsOption(c.peerTS, c.hostTS)
	}
	c.h.inject(s)
	c.peerNxt += uint32(len(payload))
	if flags&(header.TCPFlagFin|header.TCPFlagSyn) != 0 {
		c.peerNxt++
	}
}

// sampleRTT gives the host an RTT sample of rtt: one full segment out, its
// ACK back rtt later.
func (c *conn) sampleRTT(t *testing.T, rtt time.Duration) {
	t.Helper()
	c.write(t, make([]byte, 1460))
	c.h.one()
	c.h.clk.RunFor(rtt)
	c.hostNxt += 1460
	c.send(header.TCPFlagAck, nil)
}

func (c *conn) write(t *testing.T, p []byte) {
	t.Helper()
	var r bytes.Reader
	r.Reset(p)
	if n, err := c.ep.Write(&r, tcpip.WriteOptions{}); err != nil || int(n) != len(p) {
		t.Fatalf("Write = %d, %v", n, err)
	}
}

func (c *conn) read(t *testing.T) ([]byte, tcpip.Error) {
	t.Helper()
	buf := make([]byte, 1<<16)
	w := tcpip.SliceWriter(buf)
	res, err := c.ep.Read(&w, tcpip.ReadOptions{})
	return buf[:res.Count], err
}

func be32(b []byte) uint32 { return binary.BigEndian.Uint32(b) }

func seqnumV(v uint32) seqnum.Value { return seqnum.Value(v) }
