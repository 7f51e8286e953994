package tcp_test

import (
	"bytes"
	"encoding/binary"
	"testing"
	"time"

	"gvisor.dev/gvisor/pkg/tcpip"
	"gvisor.dev/gvisor/pkg/tcpip/header"
	"gvisor.dev/gvisor/pkg/tcpip/seqnum"
	"gvisor.dev/gvisor/pkg/waiter"

	"github.com/netramp/netramp/counters"
	"github.com/netramp/netramp/stack"
	"github.com/netramp/netramp/stack/tcptest"
	"github.com/netramp/netramp/stack/vclock"
	"github.com/netramp/netramp/tcp"
)

// segHarness is one stack with our TCP on a tcptest link, and a scripted peer.
type segHarness struct {
	host *tcptest.Host
	t    testing.TB
	clk  *vclock.Clock
	link *tcptest.Link
	s    *stack.Stack
	reg  *counters.Registry
}

var (
	hostAddr = tcptest.HostAddr
	peerAddr = tcptest.PeerAddr
)

const peerPort = tcptest.PeerPort

func newSegHarness(t testing.TB, o tcp.Options) *segHarness { return newSegHarnessCredit(t, o, true) }

func newSegHarnessCredit(t testing.TB, o tcp.Options, credit bool) *segHarness {
	t.Helper()
	h := tcptest.NewConfig(t, tcptest.Config{TCP: o, NoCredit: !credit})
	return &segHarness{host: h, t: t, clk: h.Clock, link: h.Link, s: h.Stack, reg: h.Counters}
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

func (s pseg) seg() tcptest.Seg {
	return tcptest.Seg{SrcPort: s.srcPort, DstPort: s.dstPort, Seq: s.seq, Ack: s.ack, Flags: s.flags, Wnd: s.wnd,
		Opts: s.opts, Payload: s.payload}
}

func fromSeg(s tcptest.Seg) pseg {
	return pseg{srcPort: s.SrcPort, dstPort: s.DstPort, seq: s.Seq, ack: s.Ack, flags: s.Flags, wnd: s.Wnd,
		opts: s.Opts, payload: s.Payload}
}

// inject delivers s from the peer to the host, as if it came off the wire.
func (h *segHarness) inject(s pseg) { h.host.Inject(s.seg()) }

// injectRaw delivers s, letting mangle edit the TCP header bytes afterwards
// (the checksum is recomputed after mangle unless mangle returns false).
func (h *segHarness) injectRaw(s pseg, mangle func(header.TCP) bool) {
	h.host.InjectMangled(s.seg(), mangle)
}

// out returns every segment the host has sent since the last call.
func (h *segHarness) out() []pseg {
	var segs []pseg
	for _, s := range h.host.Out() {
		segs = append(segs, fromSeg(s))
	}
	return segs
}

// one returns the single segment sent since the last call.
func (h *segHarness) one() pseg {
	h.t.Helper()
	return fromSeg(h.host.One())
}

func (h *segHarness) none() {
	h.t.Helper()
	h.host.None()
}

func (h *segHarness) count(name string) uint64 { return h.host.Count(name) }

func (h *segHarness) listen(port uint16, backlog int) (tcpip.Endpoint, *waiter.Queue) {
	h.t.Helper()
	return h.host.Listen(port, backlog)
}

// sendSYNs sends n SYNs to port from peer ports 30000 on, each offering
// every option: half-open connections, enough to fill a SYN queue.
func (h *segHarness) sendSYNs(port uint16, n int) {
	for i := 0; i < n; i++ {
		h.inject(pseg{srcPort: uint16(30000 + i), dstPort: port, seq: 1, flags: header.TCPFlagSyn, wnd: 65535,
			opts: synOptions(1460, 7, true, true, 1)})
	}
}

// connect starts an active open from the host to the peer's port and
// returns Connect's answer; the endpoint closes at the test's end.
func (h *segHarness) connect(port uint16) (tcpip.Endpoint, tcpip.Error) {
	h.t.Helper()
	ep, _ := h.host.NewEndpoint()
	h.t.Cleanup(ep.Close)
	return ep, ep.Connect(tcpip.FullAddress{Addr: tcpip.AddrFromSlice(peerAddr.AsSlice()), Port: port})
}

// synOptions builds a SYN's options: MSS, and optionally WS, SACK-permitted
// and timestamps.
func synOptions(mss uint16, ws int, sack bool, ts bool, tsVal uint32) []byte {
	return tcptest.SynOpts(mss, ws, sack, ts, tsVal)
}

func tsOption(val, ecr uint32) []byte { return tcptest.TSOpt(val, ecr) }

// sackOption is a SACK option whose blocks are the pairs of edges
// [start, end), in order.
func sackOption(edges ...uint32) []byte {
	var blocks []header.SACKBlock
	for i := 0; i+1 < len(edges); i += 2 {
		blocks = append(blocks, header.SACKBlock{Start: seqnumV(edges[i]), End: seqnumV(edges[i+1])})
	}
	return tcptest.SACKOpt(blocks...)
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
// given SYN options (tcptest's script) and returns the accepted endpoint.
func (h *segHarness) accept(port uint16, opts []byte) *conn {
	h.t.Helper()
	p := h.host.Accept(port, opts)
	return &conn{h: h, ep: p.EP, wq: p.WQ, port: port, peerNxt: p.PeerNxt, hostNxt: p.HostNxt,
		ts: p.TS, peerTS: p.PeerTS, hostTS: p.HostTS}
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

// ackWith injects the peer's pure ACK of ack carrying opts, at the peer's
// sequence state and without the timestamps send adds.
func (c *conn) ackWith(ack uint32, opts []byte) {
	c.h.inject(pseg{srcPort: peerPort, dstPort: c.port, seq: c.peerNxt, ack: ack, flags: header.TCPFlagAck,
		wnd: 65535, opts: opts})
}

// wantState fails the test unless the connection is in state want.
func (c *conn) wantState(t *testing.T, want tcp.State) {
	t.Helper()
	if s := tcp.State(c.ep.State()); s != want {
		t.Fatalf("state %v, want %v", s, want)
	}
}

// flight writes segs full segments of 1460 bytes and returns what the host
// sent at once, failing the test unless that is want segments.
func (c *conn) flight(t *testing.T, segs, want int) []pseg {
	t.Helper()
	c.write(t, make([]byte, segs*1460))
	out := c.h.out()
	if len(out) != want {
		t.Fatalf("sent %d segments, want %d", len(out), want)
	}
	return out
}

// wantGiveUp: with data written and never answered, the connection is still
// open after alive, closed after a further by, and a read then fails with a
// timeout.
func (c *conn) wantGiveUp(t *testing.T, alive, by time.Duration) {
	t.Helper()
	c.write(t, make([]byte, 1000))
	c.h.out()
	c.h.clk.RunFor(alive)
	if tcp.State(c.ep.State()) == tcp.StateClosed {
		t.Fatalf("gave up within %v", alive)
	}
	c.h.clk.RunFor(by)
	if s := tcp.State(c.ep.State()); s != tcp.StateClosed {
		t.Fatalf("still %v %v into an unanswered flight", s, alive+by)
	}
	if _, err := c.read(t); err == nil {
		t.Fatal("read succeeded after the give-up")
	} else if _, ok := err.(*tcpip.ErrTimeout); !ok {
		t.Fatalf("read after the give-up: %v, want timeout", err)
	}
}

// sampleRTT gives the host an RTT sample of rtt: one full segment out, its
// ACK back rtt later.
func (c *conn) sampleRTT(t testing.TB, rtt time.Duration) {
	t.Helper()
	c.write(t, make([]byte, 1460))
	c.h.one()
	c.h.clk.RunFor(rtt)
	c.hostNxt += 1460
	c.send(header.TCPFlagAck, nil)
}

func (c *conn) write(t testing.TB, p []byte) {
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
