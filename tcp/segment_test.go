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
	t    *testing.T
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

func newSegHarness(t *testing.T, o tcp.Options) *segHarness { return newSegHarnessCredit(t, o, true) }

func newSegHarnessCredit(t *testing.T, o tcp.Options, credit bool) *segHarness {
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

// synOptions builds a SYN's options: MSS, and optionally WS, SACK-permitted
// and timestamps.
func synOptions(mss uint16, ws int, sack bool, ts bool, tsVal uint32) []byte {
	return tcptest.SynOpts(mss, ws, sack, ts, tsVal)
}

func tsOption(val, ecr uint32) []byte { return tcptest.TSOpt(val, ecr) }

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
