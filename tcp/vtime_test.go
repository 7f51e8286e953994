package tcp_test

import (
	"bytes"
	"crypto/sha256"
	"hash"
	"net/netip"
	"testing"
	"time"

	"gvisor.dev/gvisor/pkg/tcpip"
	"gvisor.dev/gvisor/pkg/tcpip/network/ipv4"
	gstack "gvisor.dev/gvisor/pkg/tcpip/stack"
	"gvisor.dev/gvisor/pkg/waiter"

	"github.com/netramp/netramp/counters"
	"github.com/netramp/netramp/nic/wire"
	"github.com/netramp/netramp/stack"
	"github.com/netramp/netramp/stack/vclock"
	"github.com/netramp/netramp/tcp"
)

// vpair is two stacks with our TCP on a wire, on one virtual clock; every
// event (wire deliveries, TCP timers, the source and sink below) runs on the
// test goroutine inside the clock's RunUntil.
type vpair struct {
	clk    *vclock.Clock
	w      *wire.Wire
	a, b   *stack.Stack
	ra, rb *counters.Registry
}

var (
	addrA = netip.MustParseAddr("198.18.0.1")
	addrB = netip.MustParseAddr("198.18.0.2")
)

func newVPair(t testing.TB, cfg wire.Config, oa, ob tcp.Options, seed int64) *vpair {
	t.Helper()
	return newVPairLink(t, cfg, oa, ob, seed, nil)
}

// newVPairLink is newVPair with A's wire end passed through wrapA (nil:
// none) before A's stack is built on it.
func newVPairLink(t testing.TB, cfg wire.Config, oa, ob tcp.Options, seed int64, wrapA func(gstack.LinkEndpoint) gstack.LinkEndpoint) *vpair {
	t.Helper()
	clk := vclock.New(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	if cfg.Seed == 0 {
		cfg.Seed = seed
	}
	w, err := wire.New(clk, cfg)
	if err != nil {
		t.Fatal(err)
	}
	p := &vpair{clk: clk, w: w, ra: counters.NewRegistry(), rb: counters.NewRegistry()}
	oa.Counters, ob.Counters = p.ra, p.rb
	var la gstack.LinkEndpoint = w.A()
	if wrapA != nil {
		la = wrapA(la)
	}
	p.a, err = stack.New(stack.Options{TCP: oa, Clock: clk, Seed: seed, Counters: p.ra,
		NICs: []stack.NIC{{Link: la, Addr: netip.PrefixFrom(addrA, 24)}}})
	if err != nil {
		t.Fatal(err)
	}
	p.b, err = stack.New(stack.Options{TCP: ob, Clock: clk, Seed: seed + 1, Counters: p.rb,
		NICs: []stack.NIC{{Link: w.B(), Addr: netip.PrefixFrom(addrB, 24)}}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.a.Close(); p.b.Close() })
	return p
}

type vconn struct {
	ep tcpip.Endpoint
	wq *waiter.Queue
}

// dial connects A to a listener on B and runs the clock until both ends are
// established.
func (p *vpair) dial(t testing.TB, port uint16) (cli, srv vconn) {
	t.Helper()
	lwq := new(waiter.Queue)
	l, err := p.b.Gvisor().NewEndpoint(tcp.ProtocolNumber, ipv4.ProtocolNumber, lwq)
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Bind(tcpip.FullAddress{Port: port}); err != nil {
		t.Fatal(err)
	}
	if err := l.Listen(16); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(l.Close)
	cwq := new(waiter.Queue)
	c, err := p.a.Gvisor().NewEndpoint(tcp.ProtocolNumber, ipv4.ProtocolNumber, cwq)
	if err != nil {
		t.Fatal(err)
	}
	if e := c.Connect(tcpip.FullAddress{Addr: tcpip.AddrFromSlice(addrB.AsSlice()), Port: port}); e != nil {
		if _, ok := e.(*tcpip.ErrConnectStarted); !ok {
			t.Fatal(e)
		}
	}
	var s tcpip.Endpoint
	var swq *waiter.Queue
	ok := p.clk.RunUntil(func() bool {
		if s == nil {
			s, swq, _ = l.Accept(nil)
		}
		return s != nil && c.Readiness(waiter.WritableEvents) != 0
	}, p.clk.Elapsed()+30*time.Second)
	if !ok {
		t.Fatalf("handshake did not complete (client state %d)", c.State())
	}
	if err := c.LastError(); err != nil {
		t.Fatalf("connect: %v", err)
	}
	return vconn{c, cwq}, vconn{s, swq}
}

// The test stream repeats a table of patternLen bytes (a prime, so the
// stream does not align with segments or buffers): byte i of stream seed is
// patternTable(seed)[i%patternLen].
const patternLen = 65521

func patternTable(seed int64) []byte {
	b := make([]byte, 2*patternLen) // doubled, so any window is one slice
	for j := range b {
		k := int64(j % patternLen)
		b[j] = byte(k*131 + k>>7 + seed*7)
	}
	return b
}

// source writes n bytes of the pattern whenever the endpoint is writable,
// then shuts down writing.
type source struct {
	c       vconn
	seed, n int64
	sent    int64
	buf     []byte
	busy    bool
	again   bool
	shut    bool
	err     tcpip.Error
	entry   waiter.Entry
}

func startSource(c vconn, seed, n int64) *source {
	s := &source{c: c, seed: seed, n: n, buf: patternTable(seed)}
	s.entry = waiter.NewFunctionEntry(waiter.WritableEvents, func(waiter.EventMask) { s.pump() })
	c.wq.EventRegister(&s.entry)
	s.pump()
	return s
}

func (s *source) pump() {
	if s.busy {
		s.again = true
		return
	}
	s.busy = true
	defer func() { s.busy = false }()
	for {
		s.again = false
		for s.sent < s.n && s.err == nil {
			at := s.sent % patternLen
			k := min(int64(patternLen), s.n-s.sent)
			var r bytes.Reader
			r.Reset(s.buf[at : at+k])
			w, err := s.c.ep.Write(&r, tcpip.WriteOptions{})
			s.sent += w
			if err != nil {
				if _, ok := err.(*tcpip.ErrWouldBlock); !ok {
					s.err = err
				}
				break
			}
			if w == 0 {
				break
			}
		}
		if s.sent == s.n && s.err == nil && !s.shut {
			// (No EventUnregister here: the queue is locked during Notify.)
			s.shut = true
			s.c.ep.Shutdown(tcpip.ShutdownWrite)
			return
		}
		if !s.again {
			return
		}
	}
}

// sink reads everything until EOF, hashing it.
type sink struct {
	c     vconn
	h     hash.Hash
	n     int64
	eof   bool
	err   tcpip.Error
	buf   []byte
	busy  bool
	again bool
	entry waiter.Entry
	marks map[time.Duration]int64
}

func startSink(c vconn) *sink {
	s := &sink{c: c, h: sha256.New(), buf: make([]byte, 64<<10)}
	s.entry = waiter.NewFunctionEntry(waiter.ReadableEvents|waiter.EventHUp|waiter.EventErr, func(waiter.EventMask) { s.pump() })
	c.wq.EventRegister(&s.entry)
	s.pump()
	return s
}

func (s *sink) pump() {
	if s.busy {
		s.again = true
		return
	}
	s.busy = true
	defer func() { s.busy = false }()
	for {
		s.again = false
		for !s.eof && s.err == nil {
			w := tcpip.SliceWriter(s.buf)
			res, err := s.c.ep.Read(&w, tcpip.ReadOptions{})
			if err != nil {
				switch err.(type) {
				case *tcpip.ErrWouldBlock:
				case *tcpip.ErrClosedForReceive:
					s.eof = true
				default:
					s.err = err
				}
				break
			}
			s.h.Write(s.buf[:res.Count])
			s.n += int64(res.Count)
		}
		if !s.again {
			return
		}
	}
}

func (s *sink) done() bool { return s.eof || s.err != nil }

func streamHash(seed, n int64) [32]byte {
	h := sha256.New()
	tab := patternTable(seed)
	for off := int64(0); off < n; {
		k := min(int64(patternLen), n-off)
		at := off % patternLen
		h.Write(tab[at : at+k])
		off += k
	}
	var out [32]byte
	copy(out[:], h.Sum(nil))
	return out
}

// transfer sends n bytes A→B and checks the SHA-256; it returns the virtual
// time the transfer took and the wire's trace hash.
func (p *vpair) transfer(t testing.TB, n int64, horizon time.Duration) (time.Duration, [32]byte) {
	t.Helper()
	cli, srv := p.dial(t, 5001)
	start := p.clk.Elapsed()
	si := startSink(srv)
	so := startSource(cli, 3, n)
	if !p.clk.RunUntil(si.done, start+horizon) {
		t.Fatalf("transfer incomplete after %v: sent %d, received %d of %d (src err %v)\nA:\n%s\nB:\n%s",
			horizon, so.sent, si.n, n, so.err, p.ra.Snapshot(), p.rb.Snapshot())
	}
	if si.err != nil || so.err != nil {
		t.Fatalf("errors: sink %v source %v", si.err, so.err)
	}
	if si.n != n {
		t.Fatalf("received %d bytes, want %d", si.n, n)
	}
	var got [32]byte
	copy(got[:], si.h.Sum(nil))
	if got != streamHash(3, n) {
		t.Fatal("SHA-256 of received bytes differs from the stream sent")
	}
	d := p.clk.Elapsed() - start
	cli.ep.Close()
	srv.ep.Close()
	p.clk.RunFor(time.Second)
	return d, p.w.TraceHash()
}

func lanCfg() wire.Config {
	d := wire.Dir{RateBps: 1e9, Delay: time.Millisecond}
	return wire.Config{AtoB: d, BtoA: d}
}

// receivedBy runs an unbounded transfer on the pair and returns what the
// sink had received by each mark.
func (p *vpair) receivedBy(t testing.TB, marks ...time.Duration) []int64 {
	cli, srv := p.dial(t, 5001)
	start := p.clk.Elapsed()
	si := startSink(srv)
	startSource(cli, 3, 1<<40)
	var got []int64
	for _, d := range marks {
		p.clk.RunUntil(func() bool { return false }, start+d)
		got = append(got, si.n)
	}
	return got
}
