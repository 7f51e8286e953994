package tcp_test

import (
	"bytes"
	"crypto/sha256"
	"hash"
	"net/netip"
	"testing"
	"time"

	"gvisor.dev/gvisor/pkg/tcpip"
	"gvisor.dev/gvisor/pkg/tcpip/checksum"
	"gvisor.dev/gvisor/pkg/tcpip/header"
	"gvisor.dev/gvisor/pkg/tcpip/network/ipv4"
	"gvisor.dev/gvisor/pkg/waiter"

	"github.com/netramp/netramp/cc"
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
	p.a, err = stack.New(stack.Options{TCP: oa, Clock: clk, Seed: seed, Counters: p.ra,
		NICs: []stack.NIC{{Link: w.A(), Addr: netip.PrefixFrom(addrA, 24)}}})
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

func TestOneMegabyteCrossesWireInVirtualTime(t *testing.T) {
	p := newVPair(t, lanCfg(), tcp.Options{}, tcp.Options{}, 1)
	d, _ := p.transfer(t, 1<<20, 30*time.Second)
	t.Logf("1 MB in %v virtual", d)
	if d > 200*time.Millisecond {
		t.Errorf("1 MB over 1 Gbit/s, 2 ms RTT took %v", d)
	}
}

func TestSixtyFourMegabytesCrossWireIntact(t *testing.T) {
	if testing.Short() {
		t.Skip("64 MB in virtual time")
	}
	p := newVPair(t, lanCfg(), tcp.Options{}, tcp.Options{}, 2)
	d, _ := p.transfer(t, 64<<20, 60*time.Second)
	t.Logf("64 MB in %v virtual (%.0f Mbit/s)\n%s", d, float64(64<<23)/d.Seconds()/1e6, p.ra.Snapshot())
}

func TestSameSeedGivesSameWireTrace(t *testing.T) {
	cfg := lanCfg()
	cfg.AtoB.Loss = 0.01
	run := func() ([32]byte, time.Duration) {
		p := newVPair(t, cfg, tcp.Options{}, tcp.Options{}, 7)
		d, h := p.transfer(t, 2<<20, 60*time.Second)
		return h, d
	}
	h1, d1 := run()
	h2, d2 := run()
	if h1 != h2 || d1 != d2 {
		t.Fatalf("two runs with seed 7 differ: %x/%v vs %x/%v", h1[:8], d1, h2[:8], d2)
	}
}

func TestTransferWorksWithEachOptionDeclined(t *testing.T) {
	for _, tc := range []struct {
		name string
		o    tcp.Options
	}{
		{"no-sack", tcp.Options{NoSACK: true}},
		{"no-timestamps", tcp.Options{NoTimestamps: true}},
		{"no-window-scale", tcp.Options{NoWindowScale: true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// Only the receiver declines: the sender offers, and must cope.
			cfg := lanCfg()
			cfg.AtoB.Loss = 0.005
			p := newVPair(t, cfg, tcp.Options{}, tc.o, 3)
			d, _ := p.transfer(t, 4<<20, 120*time.Second)
			t.Logf("%s: 4 MB in %v", tc.name, d)
		})
	}
}

func TestTwoPercentLossStillDeliversEverything(t *testing.T) {
	cfg := lanCfg()
	cfg.AtoB.Loss = 0.02
	cfg.BtoA.Loss = 0.02
	p := newVPair(t, cfg, tcp.Options{}, tcp.Options{}, 4)
	d, _ := p.transfer(t, 8<<20, 300*time.Second)
	s := p.ra.Snapshot()
	t.Logf("8 MB at 2%% loss in %v: retransmitted %d, rto %d, recoveries %d, probes %d",
		d, s["tcp.retransmitted.bytes"], s["tcp.rto"], s["tcp.recoveries"], s["tcp.loss-probes"])
	if s["tcp.recoveries"] == 0 {
		t.Error("2% loss caused no SACK recovery")
	}
}

func TestT14PresetRunsCardLimitedWithoutRefusals(t *testing.T) {
	cfg, err := wire.Preset("t14")
	if err != nil {
		t.Fatal(err)
	}
	cfg.AtoB.TxRing = 16 // a small ring, so the card ends opportunities
	p := newVPair(t, cfg, tcp.Options{}, tcp.Options{}, 5)
	d, _ := p.transfer(t, 16<<20, 60*time.Second)
	s := p.ra.Snapshot()
	t.Logf("16 MB on t14 with a 16-slot ring in %v: card stops %d, refusals %d", d, s["tcp.card-stops"], s["tcp.card-refusals"])
	if s["tcp.card-stops"] == 0 {
		t.Error("a 16-slot TX ring never ended a send opportunity")
	}
	if s["tcp.card-refusals"] != 0 {
		t.Errorf("the sender wrote %d segments the card had no credit for", s["tcp.card-refusals"])
	}
}

// TestReceiveBufferAutotuningOpensTheWindowPastItsStart: the receive buffer
// starts at 128 KiB, which on 1 Gbit/s with 2 ms RTT caps a transfer at
// 64 MB/s (512 Mbit/s); autotuning grows it to what the reader drains per
// RTT, so 16 MB must go faster than the untuned window allows, with
// timestamps and without.
func TestReceiveBufferAutotuningOpensTheWindowPastItsStart(t *testing.T) {
	for _, ts := range []bool{true, false} {
		p := newVPair(t, lanCfg(), tcp.Options{}, tcp.Options{NoTimestamps: !ts}, 6)
		d, _ := p.transfer(t, 16<<20, 30*time.Second)
		rate := float64(16<<23) / d.Seconds() / 1e6
		t.Logf("timestamps %v: 16 MB in %v (%.0f Mbit/s)", ts, d, rate)
		if rate < 600 {
			t.Errorf("timestamps %v: %.0f Mbit/s, not above the 512 Mbit/s a 128 KiB window allows", ts, rate)
		}
	}
}

func TestPacedAndArmATransfersComplete(t *testing.T) {
	for _, tc := range []struct {
		name string
		o    tcp.Options
	}{
		{"paced", tcp.Options{Pacing: true}},
		{"arm-a", tcp.Options{Arm: cc.ArmA}},
		{"stretch-ack", tcp.Options{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ob := tcp.Options{}
			if tc.name == "stretch-ack" {
				ob.StretchAck = 8
			}
			p := newVPair(t, lanCfg(), tc.o, ob, 8)
			d, _ := p.transfer(t, 8<<20, 30*time.Second)
			t.Logf("%s: 8 MB in %v", tc.name, d)
		})
	}
}

// TestPacingSpreadsTheWindow: unpaced, each ACK releases segments in one
// burst at one instant; paced, segments leave one by one at cc's pacing rate
// once an RTT is known (at most the pacer's two-segment burst at an instant).
func TestPacingSpreadsTheWindow(t *testing.T) {
	d := wire.Dir{RateBps: 10e9, Delay: 5 * time.Millisecond}
	cfg := wire.Config{AtoB: d, BtoA: d}
	run := func(pacing bool) int {
		p := newVPair(t, cfg, tcp.Options{Pacing: pacing}, tcp.Options{StretchAck: 8}, 9)
		burst := 0
		var last time.Duration
		run := 0
		p.w.SetTrace(func(ev wire.TraceEvent) {
			if ev.Kind != wire.TraceSend || ev.Dir != "a2b" || len(ev.Frame) < 1000 || ev.At < 50*time.Millisecond {
				return
			}
			if ev.At == last {
				run++
			} else {
				run, last = 1, ev.At
			}
			burst = max(burst, run)
		})
		p.transfer(t, 4<<20, 60*time.Second)
		return burst
	}
	unpaced, paced := run(false), run(true)
	t.Logf("largest burst at one instant after the first RTTs: unpaced %d, paced %d segments", unpaced, paced)
	if unpaced < 8 {
		t.Errorf("unpaced sender's largest burst is %d segments; the test needs stretch-ACK bursts", unpaced)
	}
	if paced > 2 {
		t.Errorf("paced sender sent %d segments at one instant", paced)
	}
}

// TestBlackoutRecoversByBackedOffRTOsWithoutGivingUp: five seconds with the
// path down in both directions; RTOs back off, no reset, and the transfer
// completes once the path returns.
func TestBlackoutRecoversByBackedOffRTOsWithoutGivingUp(t *testing.T) {
	c := lanCfg()
	c.AtoB.Blackouts = []wire.Window{{Start: 20 * time.Millisecond, End: 5020 * time.Millisecond}}
	c.BtoA.Blackouts = c.AtoB.Blackouts
	p := newVPair(t, c, tcp.Options{}, tcp.Options{}, 21)
	d, _ := p.transfer(t, 8<<20, 120*time.Second)
	s := p.ra.Snapshot()
	t.Logf("8 MB across a 5 s blackout in %v: %d RTOs", d, s["tcp.rto"])
	if s["tcp.rto"] < 3 || s["tcp.rto"] > 8 {
		t.Errorf("%d RTOs across a 5 s blackout; backoff from 1 s wants 3 to 8", s["tcp.rto"])
	}
	if d > 12*time.Second {
		t.Errorf("took %v after a 5 s blackout", d)
	}
}

// TestLossyLongPathCompletes is the lossy-proxy rig (100 ms RTT, 5% loss
// each way) that stalled transfers for minutes: 1 MB must arrive intact, and
// no RTO retransmission budget may run out.
func TestLossyLongPathCompletes(t *testing.T) {
	c, err := wire.Preset("pilot-5")
	if err != nil {
		t.Fatal(err)
	}
	p := newVPair(t, c, tcp.Options{}, tcp.Options{}, 22)
	d, _ := p.transfer(t, 1<<20, 120*time.Second)
	s := p.ra.Snapshot()
	t.Logf("1 MB at 5%% loss, 100 ms RTT: %v, %d recoveries, %d RTOs", d, s["tcp.recoveries"], s["tcp.rto"])
	if s["tcp.give-ups"] != 0 {
		t.Fatal("a connection gave up")
	}
}

// TestOneDSACKDoesNotUndoARecoveryWithRealLosses: slow start overflows a
// queue and loses hundreds of segments; a D-SACK for one needless
// retransmission among them must not restore the window (RFC 9438 §4.9 undoes
// only a congestion event shown spurious).
func TestOneDSACKDoesNotUndoARecoveryWithRealLosses(t *testing.T) {
	p := newVPair(t, lanCfg(), tcp.Options{}, tcp.Options{}, 21)
	p.transfer(t, 8<<20, 60*time.Second)
	ab, _ := p.w.Stats()
	s := p.ra.Snapshot()
	if ab.DropQueue < 100 {
		t.Fatalf("only %d queue drops; the test needs a real loss episode", ab.DropQueue)
	}
	if s["tcp.spurious"] != 0 || s["tcp.cc.undos"] != 0 {
		t.Fatalf("recovery undone (%d spurious, %d undos) after %d real drops", s["tcp.spurious"], s["tcp.cc.undos"], ab.DropQueue)
	}
}

// TestGrownWindowKeepsEveryOutOfOrderSegment: slow start overflows a queue
// with a window grown far past its start, leaving hundreds of holes; the
// receiver keeps every segment that arrived (the store's byte and range
// bounds follow the window), so each loss is retransmitted once and nothing
// arrives twice.
func TestGrownWindowKeepsEveryOutOfOrderSegment(t *testing.T) {
	p := newVPair(t, lanCfg(), tcp.Options{}, tcp.Options{}, 21)
	const n = 8 << 20
	p.transfer(t, n, 60*time.Second)
	ab, _ := p.w.Stats()
	rb := p.rb.Snapshot()
	unique := uint64((n + 1447) / 1448)
	t.Logf("drops %d, delivered %d frames for %d segments, ooo-full %d", ab.DropQueue, ab.DeliveredFrames, unique, rb["tcp.drops.ooo-full"])
	if ab.DropQueue < 100 {
		t.Fatalf("only %d drops; the test needs many holes", ab.DropQueue)
	}
	if rb["tcp.drops.ooo-full"] != 0 {
		t.Errorf("receiver dropped %d out-of-order bytes inside its window", rb["tcp.drops.ooo-full"])
	}
	if dup := int64(ab.DeliveredFrames) - int64(unique) - 8; dup > 8 {
		t.Errorf("%d data segments arrived twice", dup)
	}
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

// TestArmBOpensTheT14WindowFasterThanArmA is the arms' A/B on the t14 emulated
// path (1 Gbit/s, 2 ms, one stretch ACK per 34 segments, a 256-slot
// TX ring): arm A (RFC 5681 growth, the old card rule) has received under
// 2 MB by 300 ms, arm B (HyStart++ L = 8, the half-window card rule) over
// 15 MB, with no loss in either.
func TestArmBOpensTheT14WindowFasterThanArmA(t *testing.T) {
	got := map[cc.Arm]int64{}
	for _, arm := range []cc.Arm{cc.ArmA, cc.ArmB} {
		cfg, err := wire.Preset("t14")
		if err != nil {
			t.Fatal(err)
		}
		cfg.BtoA.AckAggCoalesce = true // one stretch ACK per 34 segments, as the peer sends
		p := newVPair(t, cfg, tcp.Options{Arm: arm}, tcp.Options{}, 31)
		by := p.receivedBy(t, 100*time.Millisecond, 300*time.Millisecond)
		s := p.ra.Snapshot()
		t.Logf("arm %v: %.2f MB by 100 ms, %.2f MB by 300 ms; card stops %d, retransmitted %d",
			arm, float64(by[0])/1e6, float64(by[1])/1e6, s["tcp.card-stops"], s["tcp.retransmitted.bytes"])
		if s["tcp.retransmitted.bytes"] != 0 {
			t.Errorf("arm %v lost data on a loss-free path", arm)
		}
		got[arm] = by[1]
	}
	if got[cc.ArmA] > 2e6 || got[cc.ArmB] < 15e6 {
		t.Errorf("by 300 ms: A %d bytes (want < 2 MB), B %d bytes (want > 15 MB)", got[cc.ArmA], got[cc.ArmB])
	}
}

// TestEverySegmentFitsTheMTUWithItsOptions: data flows both ways over loss,
// so data segments carry SACK blocks beside timestamps; each segment must
// still fit the MTU whole (options count against the MSS, RFC 9293 §3.7.1),
// never relying on IP fragmentation, with a valid checksum.
func TestEverySegmentFitsTheMTUWithItsOptions(t *testing.T) {
	cfg := lanCfg()
	cfg.AtoB.Loss, cfg.BtoA.Loss = 0.02, 0.02
	p := newVPair(t, cfg, tcp.Options{}, tcp.Options{}, 12)
	var frames, frags, bad int
	p.w.SetTrace(func(ev wire.TraceEvent) {
		if ev.Kind != wire.TraceSend {
			return
		}
		ip := header.IPv4(ev.Frame)
		frames++
		if ip.More() || ip.FragmentOffset() != 0 {
			frags++
			return
		}
		th := header.TCP(ip.Payload())
		x := header.PseudoHeaderChecksum(header.TCPProtocolNumber, ip.SourceAddress(), ip.DestinationAddress(), uint16(len(th)))
		if checksum.Checksum(th, x) != 0xffff {
			bad++
		}
	})
	cli, srv := p.dial(t, 5001)
	const n = 4 << 20
	s1, s2 := startSink(srv), startSink(cli)
	startSource(cli, 3, n)
	startSource(srv, 4, n)
	if !p.clk.RunUntil(func() bool { return s1.done() && s2.done() }, p.clk.Elapsed()+120*time.Second) {
		t.Fatalf("bidirectional transfer incomplete: %d and %d of %d", s1.n, s2.n, n)
	}
	h1, h2 := s1.h.Sum(nil), s2.h.Sum(nil)
	w1, w2 := streamHash(3, n), streamHash(4, n)
	if s1.n != n || s2.n != n || string(h1) != string(w1[:]) || string(h2) != string(w2[:]) {
		t.Fatal("bytes differ from the streams sent")
	}
	t.Logf("%d frames, %d IP fragments, %d bad checksums", frames, frags, bad)
	if frags != 0 || bad != 0 {
		t.Fatalf("%d of %d frames were IP fragments, %d had bad checksums", frags, frames, bad)
	}
}
