package hosttests

import (
	"fmt"
	"testing"
	"time"

	gstack "gvisor.dev/gvisor/pkg/tcpip/stack"

	"github.com/netramp/netramp/nic/wire"
	"github.com/netramp/netramp/stack"
	"github.com/netramp/netramp/stack/vclock"
	"github.com/netramp/netramp/stack/vtest"
	"github.com/netramp/netramp/tcp"
)

// lastEchoStall holds the longest wait between two arrivals in either direction
// of the last echo (a stall: the field report's transfers stopped for minutes).
var lastEchoStall time.Duration

// longestStall is the longest time between two read instants of a sink.
func longestStall(si *vtest.Sink) time.Duration {
	var m time.Duration
	marks := si.Marks()
	for i := 1; i < len(marks); i++ {
		m = max(m, marks[i].At-marks[i-1].At)
	}
	return m
}

// echo runs n bytes A→B and n bytes B→A on one connection at once (the
// round trip of an echo) and returns the virtual time until both sinks saw
// EOF.
func echo(t *testing.T, p *vtest.Pair, n int64, horizon time.Duration) time.Duration {
	t.Helper()
	c, s := dial(t, p, vtest.SideA, 7)
	start := p.Clock.Elapsed()
	so1, si1 := p.Start(c, s, n, 1)
	so2, si2 := p.Start(s, c, n, 2)
	si1.KeepOpen, si2.KeepOpen = true, true
	done := func() bool { return si1.Done() && si2.Done() }
	if err := p.Run(done, horizon); err != nil {
		t.Fatalf("%v: A→B %d/%d, B→A %d/%d;\nA:%s\nB:%s", err, si1.Bytes(), n, si2.Bytes(), n,
			tcpCounters(p.A.Counters()), tcpCounters(p.B.Counters()))
	}
	for _, e := range []error{vtest.Check(so1, si1, n), vtest.Check(so2, si2, n)} {
		if e != nil {
			t.Fatal(e)
		}
	}
	c.Close()
	s.Close()
	lastEchoStall = max(longestStall(si1), longestStall(si2))
	return p.Clock.Elapsed() - start
}

func TestPilotLossyPresetsEveryTransferCompletes(t *testing.T) {
	for _, name := range []string{"pilot", "pilot-2", "pilot-5"} {
		for _, n := range []int64{1 << 20, 8 << 20} {
			t.Run(fmt.Sprintf("%s/%dMB", name, n>>20), func(t *testing.T) {
				for seed := int64(1); seed <= 3; seed++ {
					cfg := preset(t, name)
					cfg.Seed = seed
					p := newPair(t, cfg, tcp.Options{}, tcp.Options{}, seed)
					d := echo(t, p, n, 600*time.Second)
					// Progress never stops for long: losses are repaired by
					// ACK-clocked recovery, and a timeout's backoff stays short.
					if lastEchoStall > 5*time.Second {
						t.Errorf("seed %d: %v without a byte arriving", seed, lastEchoStall)
					}
					a, b := p.Wire.Stats()
					t.Logf("seed %d: %s each way in %v virtual (%.2f MB/s round trip), longest stall %v; wire drops a→b %d b→a %d; A:%s",
						seed, mb(n), d, float64(n)/1e6/d.Seconds(), lastEchoStall, a.DropLoss, b.DropLoss, tcpCounters(p.A.Counters()))
				}
			})
		}
	}
}

// pairWithDropper builds a pair whose A side drops the data segments drop
// selects.
func pairWithDropper(t *testing.T, cfg wire.Config, a, b tcp.Options, drop func(n int) bool) (*vtest.Pair, *dropper) {
	t.Helper()
	var d *dropper
	p, err := vtest.NewPairLinks(cfg, stack.Options{TCP: a}, stack.Options{TCP: b}, 1,
		func(side vtest.Side, ep gstack.LinkEndpoint, _ *vclock.Clock) gstack.LinkEndpoint {
			if side != vtest.SideA {
				return ep
			}
			d = newDropper(ep, drop)
			return d
		})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Close)
	return p, d
}

func TestOneLostSegmentInAFullWindowCostsOneRetransmission(t *testing.T) {
	// A full window in flight and one segment lost: the receiver must keep
	// every later segment of the window, so one retransmission repairs it.
	const mss = 1448
	dir := wire.Dir{RateBps: 100e6, Delay: 25 * time.Millisecond}
	cfg := wire.Config{AtoB: dir, BtoA: dir}
	for _, lost := range []int{300, 1000, 3000} {
		t.Run(fmt.Sprint(lost), func(t *testing.T) {
			p, d := pairWithDropper(t, cfg, tcp.Options{}, tcp.Options{}, func(n int) bool { return n == lost })
			c, s := dial(t, p, vtest.SideA, 5001)
			if _, _, err := p.Transfer(c, s, 16<<20, 5, 120*time.Second); err != nil {
				t.Fatal(err)
			}
			retx := counter(p.A.Counters(), "tcp.retransmitted.bytes")
			oooFull := counter(p.B.Counters(), "tcp.drops.ooo-full")
			t.Logf("dropped %d; retransmitted %d bytes; B ooo-full drops %d;%s", d.Dropped(), retx, oooFull, tcpCounters(p.A.Counters()))
			if d.Dropped() != 1 {
				t.Fatalf("dropper dropped %d segments, want 1", d.Dropped())
			}
			if oooFull != 0 {
				t.Errorf("receiver dropped %d out-of-order bytes: one loss amplified", oooFull)
			}
			// One retransmission, and at most one tail-loss probe beside it.
			if retx > 2*mss {
				t.Errorf("retransmitted %d bytes for one lost segment (%d segments)", retx, (retx+mss-1)/mss)
			}
		})
	}
}

// TestALostResendIsRepairedWithoutAnRTO: on a 600 ms path the 2000th
// segment and its first resend are both lost, while the window has room for
// new data behind them (arms A, B and P). RACK finds the resend lost a round trip later (RFC
// 8985 §6.2) and sends it again, which restarts the RTO; the recovery then
// ends by that copy's ACK, with no RTO and nothing resent needlessly.
// Before, the RTO ran from the last advance of SND.UNA: about SRTT + 200 ms,
// short of the two round trips the repair needs, it fired (tcp.rto 1) and
// resent a segment already on its way (1448 spurious bytes).
func TestALostResendIsRepairedWithoutAnRTO(t *testing.T) {
	dir := wire.Dir{RateBps: 100e6, Delay: 300 * time.Millisecond}
	cfg := wire.Config{AtoB: dir, BtoA: dir}
	for _, a := range armsABP {
		t.Run(a.name, func(t *testing.T) {
			p, d := pairWithDropper(t, cfg, a.opts, tcp.Options{}, func(n int) bool { return n == 2000 })
			d.resends = 1 // before any data: the dropper reads it only for data segments
			c, s := dial(t, p, vtest.SideA, 5001)
			if _, _, err := p.Transfer(c, s, 8<<20, 5, time.Minute); err != nil {
				t.Fatal(err)
			}
			st := p.A.Counters()
			t.Logf("dropped %d;%s", d.Dropped(), tcpCounters(st))
			if d.Dropped() != 2 {
				t.Fatalf("dropper dropped %d copies, want the segment and its first resend", d.Dropped())
			}
			if n := counter(st, "tcp.rto"); n != 0 {
				t.Errorf("%d RTOs: the second resend's ACK was not waited for", n)
			}
			if n := counter(st, "tcp.retransmitted.spurious.bytes"); n != 0 {
				t.Errorf("%d bytes resent spuriously", n)
			}
		})
	}
}

// longPath is 100 Mbit/s with 50 ms one-way delay each way (the lossy rig's
// RTT at a rate that lets the window open to megabytes).
func longPath() wire.Config {
	d := wire.Dir{RateBps: 100e6, Delay: 50 * time.Millisecond}
	return wire.Config{AtoB: d, BtoA: d}
}

// baseline is the virtual time a 32 MB transfer takes on cfg without loss.
func baseline(t *testing.T, cfg wire.Config) time.Duration {
	t.Helper()
	p := newPair(t, cfg, tcp.Options{}, tcp.Options{}, 1)
	c, s := dial(t, p, vtest.SideA, 5001)
	_, si, err := p.Transfer(c, s, 32<<20, 5, 120*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	return si.Duration()
}

func TestHoleOf180SegmentsIsRepairedByTheACKClockWithoutTimeout(t *testing.T) {
	// 180 consecutive segments lost from a multi-megabyte window: recovery
	// must resend the whole hole as the ACKs allow, within a few round trips,
	// not one segment per retransmission timeout.
	const mss = 1448
	base := baseline(t, longPath())
	p, d := pairWithDropper(t, longPath(), tcp.Options{}, tcp.Options{}, func(n int) bool { return n >= 2000 && n < 2180 })
	c, s := dial(t, p, vtest.SideA, 5001)
	_, si, err := p.Transfer(c, s, 32<<20, 5, 120*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	rto := counter(p.A.Counters(), "tcp.rto")
	retx := counter(p.A.Counters(), "tcp.retransmitted.bytes")
	t.Logf("hole of %d: %v (no loss: %v), %d RTOs, %d bytes resent;%s", d.Dropped(), si.Duration(), base, rto, retx, tcpCounters(p.A.Counters()))
	if d.Dropped() != 180 {
		t.Fatalf("dropped %d, want 180", d.Dropped())
	}
	if rto != 0 {
		t.Errorf("%d retransmission timeouts: the hole was not repaired by ACK-clocked recovery", rto)
	}
	if retx < 180*mss || retx > 182*mss {
		t.Errorf("resent %d bytes, want the 180 lost segments (%d) and at most two probes", retx, 180*mss)
	}
	if si.Duration() > base+time.Second {
		t.Errorf("transfer took %v, more than 10 RTTs beyond the loss-free %v", si.Duration(), base)
	}
}

func TestBlackoutOfOneSecondRecoversTheWholeWindowAfterOneTimeout(t *testing.T) {
	// Everything in flight (megabytes) is lost in a blackout; after the
	// timeout the lost window must drain at the ACK clock's pace.
	base := baseline(t, longPath())
	cfg := longPath()
	cfg.AtoB.Blackouts = []wire.Window{{Start: 1500 * time.Millisecond, End: 2500 * time.Millisecond}}
	p := newPair(t, cfg, tcp.Options{}, tcp.Options{}, 1)
	c, s := dial(t, p, vtest.SideA, 5001)
	_, si, err := p.Transfer(c, s, 32<<20, 5, 300*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	a, _ := p.Wire.Stats()
	rto := counter(p.A.Counters(), "tcp.rto")
	t.Logf("blackout dropped %d frames; %v (no loss: %v), %d RTOs;%s", a.DropBlackout, si.Duration(), base, rto, tcpCounters(p.A.Counters()))
	if a.DropBlackout < 500 {
		t.Fatalf("blackout dropped only %d frames: the window was not large", a.DropBlackout)
	}
	// Timeouts fire during the blackout (backing off); after it, at most one.
	if rto > 3 {
		t.Errorf("%d RTOs: recovery after the blackout relied on the timer", rto)
	}
	if si.Duration() > base+time.Second+3*time.Second {
		t.Errorf("transfer took %v; loss-free %v plus the 1 s blackout plus 3 s of backoff bounds it", si.Duration(), base)
	}
}

func TestSlowStartOvershootIsUnderOneBDPOnABDPQueue(t *testing.T) {
	// 100 Mbit/s, 40 ms RTT, a queue of one BDP (500 kB): the first slow
	// start must leave before the queue overflows by a whole BDP, and the
	// losses it causes are repaired without a timeout.
	const mss = 1448
	dir := wire.Dir{RateBps: 100e6, Delay: 20 * time.Millisecond, QueueBytes: 500000}
	cfg := wire.Config{AtoB: dir, BtoA: wire.Dir{Delay: 20 * time.Millisecond}}
	p := newPair(t, cfg, tcp.Options{}, tcp.Options{}, 1)
	c, s := dial(t, p, vtest.SideA, 5001)
	_, si, err := p.Transfer(c, s, 32<<20, 5, 120*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	a, _ := p.Wire.Stats()
	rto := counter(p.A.Counters(), "tcp.rto")
	t.Logf("%v, queue drops %d, queue high %d B, RTOs %d;%s", si.Duration(), a.DropQueue, a.QueueHighBytes, rto, tcpCounters(p.A.Counters()))
	if bdpSegs := uint64(500000 / mss); a.DropQueue >= bdpSegs {
		t.Errorf("%d segments dropped at the queue, a BDP is %d: slow start overshot", a.DropQueue, bdpSegs)
	}
	if rto != 0 {
		t.Errorf("%d RTOs after slow start's exit", rto)
	}
}
