package cc

import (
	"math"
	"testing"
	"time"
)

// caSim returns a controller that has just reduced from cwndSegs segments
// with the same flight and ended its recovery: cwnd_prior = W_max = cwndSegs,
// cwnd = ssthresh = 0.7·cwndSegs, congestion avoidance next.
func caSim(t *testing.T, cfg Config, cwndSegs int) *sim {
	t.Helper()
	s := newSim(t, cfg)
	s.c.cwnd = cwndSegs * smss
	s.c.OnCongestion(s.now, cwndSegs*smss)
	s.c.OnRecoveryEnd(s.now)
	return s
}

func near(a, b, tol float64) bool { return math.Abs(a-b) <= tol }

func TestCubicKFromWMaxAndCwndEpoch(t *testing.T) {
	cases := []struct {
		wMax, epoch float64 // segments
		wantK       float64 // seconds
	}{
		{100, 70, 4.2172},
		{1000, 700, 9.0856},
		{100, 100, 0},
		{100, 120, 0}, // nothing to climb
		{10.4, 10, 1},
	}
	for _, tc := range cases {
		k := kFor(tc.wMax*smss, tc.epoch*smss, smss)
		if !near(k, tc.wantK, 1e-4) {
			t.Errorf("K(W_max %v, cwnd_epoch %v) = %.5f s, want %.4f s", tc.wMax, tc.epoch, k, tc.wantK)
		}
	}
	// The same K from the controller's own reduction and first ACK.
	s := caSim(t, Config{}, 100)
	s.fill()
	s.ack(smss, 10*ms)
	st := s.c.State()
	if st.CwndEpoch != 70*smss || st.WMax != 100*smss || !near(st.K, 4.2172, 1e-4) {
		t.Fatalf("after a reduction from 100 segments: cwnd_epoch %v W_max %v K %v", st.CwndEpoch/smss, st.WMax/smss, st.K)
	}
}

func TestCubicWindowFunctionMatchesHandComputedValues(t *testing.T) {
	q := cubic{smss: smss, wMax: 100 * smss}
	q.k = kFor(q.wMax, 70*smss, smss)
	cases := []struct {
		t, wantSegs float64
	}{
		{0, 70},
		{q.k, 100},
		{q.k + 1, 100.4},
		{q.k + 2, 103.2},
		{q.k - 1, 99.6},
	}
	for _, tc := range cases {
		if got := q.wCubic(tc.t) / smss; !near(got, tc.wantSegs, 1e-9) {
			t.Errorf("W_cubic(%.4f s) = %.6f segments, want %v", tc.t, got, tc.wantSegs)
		}
	}
}

func TestCubicTargetIsCappedAtOneAndAHalfCwnd(t *testing.T) {
	q := newCubic(smss, true)
	cwnd := 100 * smss
	q.handOff(0, cwnd)
	// 100 s into the epoch W_cubic is hundreds of thousands of segments; the
	// target is held at 1.5·cwnd, so an ACK of the whole window adds half.
	if q.onAck(100*time.Second, cwnd, &cwnd, cwnd, 10*ms, true) {
		t.Fatal("took the Reno-friendly region")
	}
	if cwnd != 150*smss {
		t.Fatalf("cwnd %d after one window's ACK, want %d (1.5·cwnd)", cwnd, 150*smss)
	}
}

func TestCubicTargetBelowCwndHoldsCwnd(t *testing.T) {
	q := newCubic(smss, true)
	q.wMax = 100 * smss
	q.startEpoch(0, 70*smss)
	cwnd := 90 * smss // above W_cubic(t + RTT) = 70 segments
	q.wEst = 60 * smss
	q.onAck(0, 10*smss, &cwnd, 100*smss, 0, true)
	if cwnd != 90*smss {
		t.Fatalf("cwnd went from 90 segments to %v; the target's floor is cwnd", float64(cwnd)/smss)
	}
}

func TestRenoFriendlyRegionSetsCwndToWEst(t *testing.T) {
	s := caSim(t, Config{}, 100)
	s.send(70*smss, StopCwnd)
	// At t = 0, W_cubic = cwnd_epoch = 70 segments; W_est grows past it by
	// α·SMSS·acked/cwnd, and cwnd follows it.
	g := s.ack(smss, 0)
	a := alphaReno
	if want := int(70*smss + a*smss*smss/(70*smss)); s.c.Cwnd() != want || g != want-70*smss {
		t.Fatalf("Reno-friendly ACK of a segment: cwnd %d, want W_est = %d", s.c.Cwnd(), want)
	}
	// Over the rest of the window cwnd grows by α·SMSS, a little less as
	// each step divides by a cwnd that has grown.
	g += s.ack(69*smss, 0)
	if lo, hi := 0.99*a*smss, a*smss; float64(g) < lo || float64(g) > hi {
		t.Fatalf("Reno-friendly window grew %d, want within 1%% under α·SMSS = %.1f", g, a*smss)
	}
	if n := s.counter("tcp.cc.reno-friendly.acks"); n != 2 {
		t.Fatalf("tcp.cc.reno-friendly.acks = %d", n)
	}
}

func TestRenoAlphaSwitchesToOneOnceWEstReachesCwndPrior(t *testing.T) {
	s := caSim(t, Config{}, 100)
	prior := s.c.State().CwndPrior
	if prior != 100*smss {
		t.Fatalf("cwnd_prior %d", prior)
	}
	var before, after []int
	for i := 0; i < 80; i++ {
		switched := s.c.State().WEst >= float64(prior)
		w := s.c.Cwnd()
		s.send(w, StopCwnd)
		g := s.ack(w, 0) // t stays 0: the Reno estimate rules throughout
		if switched {
			after = append(after, g)
		} else {
			before = append(before, g)
		}
	}
	if len(before) < 50 || len(after) < 10 {
		t.Fatalf("%d window ACKs before the switch, %d after", len(before), len(after))
	}
	// A window grows W_est by α·SMSS, less under 2% as cwnd grows within it.
	a := alphaReno * smss
	for _, g := range before[1 : len(before)-1] { // the last window crosses cwnd_prior
		if float64(g) < 0.98*a || float64(g) > a {
			t.Fatalf("before W_est reached cwnd_prior a window grew %d, want ≈ %.1f; growth %v", g, a, before)
		}
	}
	for _, g := range after[1:] {
		if float64(g) < 0.98*smss || g > smss {
			t.Fatalf("after W_est reached cwnd_prior a window grew %d, want ≈ %d (α = 1); growth %v", g, smss, after)
		}
	}
}

func TestFastConvergence(t *testing.T) {
	cases := []struct {
		name     string
		noFC     bool
		wantWMax float64 // segments, after a second loss at 70 segments
	}{
		{"on: a loss below W_max lowers W_max to cwnd·(1+β)/2", false, 70 * 0.85},
		{"off: W_max is the cwnd at the loss", true, 70},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := caSim(t, Config{NoFastConvergence: tc.noFC}, 100)
			if w := s.c.State().WMax; w != 100*smss {
				t.Fatalf("first loss: W_max %v segments, want 100", w/smss)
			}
			s.c.OnCongestion(s.now, 70*smss)
			if w := s.c.State().WMax / smss; !near(w, tc.wantWMax, 1e-9) {
				t.Fatalf("second loss at 70 segments: W_max %v segments, want %v", w, tc.wantWMax)
			}
		})
	}
	// A loss above the last W_max sets W_max = cwnd either way.
	s := caSim(t, Config{}, 100)
	s.c.OnRecoveryEnd(s.now)
	s.c.cwnd = 120 * smss
	s.c.OnCongestion(s.now, 120*smss)
	if w := s.c.State().WMax; w != 120*smss {
		t.Fatalf("loss above W_max: W_max %v segments, want 120", w/smss)
	}
}

func TestReductionIsBetaTimesFlightWithFloors(t *testing.T) {
	cases := []struct {
		name                   string
		flight                 int
		wantSsthresh, wantCwnd int
	}{
		{"full flight", 100 * smss, 70 * smss, 70 * smss},
		{"half the window in flight", 50 * smss, 35 * smss, 35 * smss},
		{"odd bytes truncate", 1001, 2 * smss, 2 * smss},
		{"two segments floor at two", 2 * smss, 2 * smss, 2 * smss},
		{"three segments", 3 * smss, 3066, 3066},
		{"ten segments", 10 * smss, 7 * smss, 7 * smss},
		{"nothing in flight", 0, 2 * smss, 2 * smss},
		{"negative flight is clamped", -5000, 2 * smss, 2 * smss},
		{"flight above cwnd does not raise cwnd", 200 * smss, 140 * smss, 100 * smss},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := newSim(t, Config{})
			s.c.cwnd = 100 * smss
			s.c.OnCongestion(0, tc.flight)
			if s.c.Ssthresh() != tc.wantSsthresh || s.c.Cwnd() != tc.wantCwnd {
				t.Fatalf("flight %d: ssthresh %d cwnd %d, want %d and %d",
					tc.flight, s.c.Ssthresh(), s.c.Cwnd(), tc.wantSsthresh, tc.wantCwnd)
			}
			if s.c.State().CwndPrior != 100*smss {
				t.Fatalf("cwnd_prior %d, want the cwnd before the loss", s.c.State().CwndPrior)
			}
		})
	}
}

func TestSecondLossInSameRecoveryDoesNotReduce(t *testing.T) {
	s := caSim(t, Config{}, 100)
	s.c.OnCongestion(s.now, 70*smss)
	cw, ss := s.c.Cwnd(), s.c.Ssthresh()
	s.c.OnCongestion(s.now, 60*smss)
	s.c.OnCongestion(s.now, 10*smss)
	if s.c.Cwnd() != cw || s.c.Ssthresh() != ss {
		t.Fatalf("repeat losses in one recovery moved cwnd %d→%d, ssthresh %d→%d", cw, s.c.Cwnd(), ss, s.c.Ssthresh())
	}
	if n := s.counter("tcp.cc.repeat-losses"); n != 2 {
		t.Fatalf("tcp.cc.repeat-losses = %d, want 2", n)
	}
	if n := s.counter("tcp.cc.reductions"); n != 2 {
		t.Fatalf("tcp.cc.reductions = %d, want 2", n)
	}
	s.c.OnRecoveryEnd(s.now)
	s.c.OnCongestion(s.now, 40*smss)
	if s.c.Ssthresh() != 28*smss {
		t.Fatalf("a loss after recovery ended: ssthresh %d, want %d", s.c.Ssthresh(), 28*smss)
	}
}

// TestRecoveryLastsUntilOnRecoveryEnd: cc keeps no recovery point of its
// own; the sender's recovery says when a recovery ends (OnRecoveryEnd), and
// until then no ACK grows cwnd, even one past SND.NXT at the loss.
func TestRecoveryLastsUntilOnRecoveryEnd(t *testing.T) {
	s := newSim(t, Config{})
	s.fill()
	s.c.OnCongestion(s.now, s.inFlight())
	cw := s.c.Cwnd()
	s.send(3*smss, StopCwnd)
	if g := s.ack(5*smss, 0); g != 0 || !s.c.InRecovery() {
		t.Fatalf("partial ACK in recovery grew %d, recovery %v", g, s.c.InRecovery())
	}
	s.ack(5*smss, 0) // past SND.NXT at the loss
	if !s.c.InRecovery() || s.c.Cwnd() != cw {
		t.Fatalf("before OnRecoveryEnd: recovery %v cwnd %d (was %d)", s.c.InRecovery(), s.c.Cwnd(), cw)
	}
	s.c.OnRecoveryEnd(s.now)
	if s.c.InRecovery() || s.c.Cwnd() != cw {
		t.Fatalf("after OnRecoveryEnd: recovery %v cwnd %d (was %d)", s.c.InRecovery(), s.c.Cwnd(), cw)
	}
	if n := s.counter("tcp.acks.in-recovery"); n != 2 {
		t.Fatalf("tcp.acks.in-recovery = %d, want 2", n)
	}
}

func TestRTOResetsToOneSegmentThenSlowStartThenCubicFromKZero(t *testing.T) {
	s := newSim(t, Config{})
	s.c.cwnd = 100 * smss
	s.fill()
	s.c.OnRTO(s.now, s.inFlight())
	st := s.c.State()
	if st.Cwnd != smss || st.Ssthresh != 70*smss || !st.AfterRTO || st.CwndPrior != 100*smss {
		t.Fatalf("after the RTO: %+v", st)
	}
	if n := s.counter("tcp.cc.rto-resets"); n != 1 {
		t.Fatalf("tcp.cc.rto-resets = %d", n)
	}
	s.una = s.nxt // everything before the RTO is retransmitted and acknowledged below
	// RFC 5681 slow start: one SMSS per ACK up to ssthresh.
	for s.c.InSlowStart() {
		s.fill()
		if g := s.ack(min(s.inFlight(), 2*smss), 10*ms); g > smss {
			t.Fatalf("slow start after an RTO grew %d in one ACK", g)
		}
		s.advance(10 * ms)
	}
	if s.c.Cwnd() != 70*smss {
		t.Fatalf("slow start ended at %d, want ssthresh %d", s.c.Cwnd(), 70*smss)
	}
	s.fill()
	s.advance(10 * ms)
	s.ack(smss, 10*ms)
	st = s.c.State()
	if st.K != 0 || st.CwndEpoch != 70*smss || st.WMax != 70*smss || st.EpochStart != s.now || st.AfterRTO {
		t.Fatalf("first epoch after the RTO: K %v cwnd_epoch %v W_max %v start %v, want K 0 and W_max = cwnd_epoch = 70 segments",
			st.K, st.CwndEpoch/smss, st.WMax/smss, st.EpochStart)
	}
	if st.WEst < 70*smss || st.WEst > 71*smss {
		t.Fatalf("W_est %v segments, want the cwnd at the epoch's start", st.WEst/smss)
	}
}

func TestRepeatedRTOKeepsSsthresh(t *testing.T) {
	s := newSim(t, Config{})
	s.c.cwnd = 100 * smss
	s.fill()
	s.c.OnRTO(s.now, s.inFlight())
	s.c.OnRTO(s.now+time.Second, smss)
	if s.c.Ssthresh() != 70*smss || s.c.Cwnd() != smss {
		t.Fatalf("second RTO: ssthresh %d cwnd %d, want %d and %d", s.c.Ssthresh(), s.c.Cwnd(), 70*smss, smss)
	}
	// A loss detected during the RTO's recovery reduces nothing either.
	s.c.OnCongestion(s.now, smss)
	if s.c.Ssthresh() != 70*smss {
		t.Fatalf("loss in the RTO episode: ssthresh %d", s.c.Ssthresh())
	}
	s.c.OnRecoveryEnd(s.now)
	s.c.OnRTO(s.now, 10*smss)
	if s.c.Ssthresh() != 7*smss {
		t.Fatalf("RTO after the episode ended: ssthresh %d, want %d", s.c.Ssthresh(), 7*smss)
	}
}

func TestUndoRestoresEverySavedVariable(t *testing.T) {
	s := caSim(t, Config{}, 100)
	for i := 0; i < 20; i++ { // congestion avoidance with a live epoch
		s.advance(50 * ms)
		s.fill()
		s.ack(s.inFlight(), 50*ms)
	}
	before := s.c.State()
	s.c.OnCongestion(s.now, s.inFlight()+before.Cwnd)
	reduced := s.c.State()
	if reduced.Cwnd >= before.Cwnd || reduced.WMax == before.WMax {
		t.Fatalf("loss did not reduce: %+v", reduced)
	}
	s.c.OnSpurious(s.now)
	after := s.c.State()
	if after.Cwnd != before.Cwnd || after.Ssthresh != before.Ssthresh || after.CwndPrior != before.CwndPrior ||
		after.WMax != before.WMax || after.K != before.K || after.EpochStart != before.EpochStart ||
		after.EpochValid != before.EpochValid || after.WEst != before.WEst || after.CwndEpoch != before.CwndEpoch ||
		after.FastRecovery {
		t.Fatalf("undo did not restore:\nbefore %+v\nafter  %+v", before, after)
	}
	if n := s.counter("tcp.cc.undos"); n != 1 {
		t.Fatalf("tcp.cc.undos = %d", n)
	}
	s.c.OnSpurious(s.now) // nothing left to undo
	if s.counter("tcp.cc.undos") != 1 {
		t.Fatal("a second undo of one event")
	}
}

func TestUndoOnlyWhenCwndBelowCwndPrior(t *testing.T) {
	s := caSim(t, Config{}, 100)
	// cwnd grows back to cwnd_prior before the event is found spurious.
	s.c.cwnd = s.c.State().CwndPrior
	s.c.OnSpurious(s.now)
	if s.c.Ssthresh() != 70*smss || s.counter("tcp.cc.undos") != 0 {
		t.Fatalf("undo with cwnd = cwnd_prior: ssthresh %d, undos %d", s.c.Ssthresh(), s.counter("tcp.cc.undos"))
	}
	s2 := caSim(t, Config{}, 100)
	s2.c.OnSpurious(s2.now)
	if s2.c.Cwnd() != 100*smss || s2.c.Ssthresh() != InfiniteSsthresh {
		t.Fatalf("undo with cwnd < cwnd_prior: cwnd %d ssthresh %d", s2.c.Cwnd(), s2.c.Ssthresh())
	}
}

func TestUndoOfInitialSlowStartLossResumesHyStart(t *testing.T) {
	s := newSim(t, Config{Arm: ArmB})
	s.round(rep(8, 10*ms)...)
	s.c.OnCongestion(s.now, s.c.Cwnd())
	s.c.OnSpurious(s.now)
	st := s.c.State()
	if !st.InitialSlowStart || !st.HyStartActive || st.LastRoundMinRTT != 10*ms {
		t.Fatalf("undo did not restore HyStart++: %+v", st)
	}
	s.fill()
	if g := s.ack(34*smss, 0); g != 8*smss {
		t.Fatalf("after the undo a stretch ACK grew %d, want %d", g, 8*smss)
	}
}

func TestUndoAfterRTORestoresTheWindow(t *testing.T) {
	s := caSim(t, Config{}, 100)
	s.fill()
	s.c.OnRTO(s.now, s.inFlight())
	s.c.OnSpurious(s.now)
	if s.c.Cwnd() != 70*smss || s.c.Ssthresh() != 70*smss || s.c.InRecovery() || s.c.State().AfterRTO {
		t.Fatalf("after undoing the RTO: %+v", s.c.State())
	}
}

func TestAppLimitedTimeIsExcludedFromT(t *testing.T) {
	run := func(appLimited bool) (State, int) {
		s := caSim(t, Config{}, 100)
		s.fill()
		s.ack(smss, 10*ms) // starts the epoch at 0
		for i := 0; i < 10; i++ {
			s.advance(100 * ms)
			s.fill()
			s.ack(smss, 10*ms)
		}
		if appLimited {
			// Five seconds of application-limited sending: ACKs arrive, nothing grows.
			for i := 0; i < 50; i++ {
				s.advance(100 * ms)
				s.send(0, StopApp)
				if g := s.ack(smss, 10*ms); g != 0 {
					t.Fatalf("application-limited ACK grew %d", g)
				}
			}
		}
		for i := 0; i < 10; i++ {
			s.advance(100 * ms)
			s.fill()
			s.ack(smss, 10*ms)
		}
		return s.c.State(), s.c.Cwnd()
	}
	base, cw := run(false)
	lim, cwLim := run(true)
	if lim.EpochStart-base.EpochStart != 5*time.Second {
		t.Fatalf("epoch start moved by %v, want the 5 s the sender was application limited", lim.EpochStart-base.EpochStart)
	}
	if cw != cwLim {
		t.Fatalf("cwnd %d with an application-limited gap, %d without: t included the gap", cwLim, cw)
	}
}

func TestOneAckOfNSegmentsGrowsLikeNAcksOfOne(t *testing.T) {
	cases := []struct {
		name  string
		start time.Duration // time into the epoch
		n     int
	}{
		{"concave, 2 segments", 1 * time.Second, 2},
		{"concave, 10 segments", 1 * time.Second, 10},
		{"near W_max, 34 segments", 4 * time.Second, 34},
		{"convex, 34 segments", 8 * time.Second, 34},
		{"Reno-friendly start, 34 segments", 0, 34},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			grow := func(split bool) int {
				s := caSim(t, Config{}, 100)
				s.fill()
				s.ack(smss, 10*ms)
				s.advance(tc.start)
				start := s.c.Cwnd()
				for r := 0; r < 5; r++ { // five round trips of ACKs
					s.advance(20 * ms)
					s.fill()
					w := s.inFlight()
					for sent := 0; sent+tc.n*smss <= w; sent += tc.n * smss {
						if split {
							for range tc.n {
								s.ack(smss, 20*ms)
							}
						} else {
							s.ack(tc.n*smss, 20*ms)
						}
					}
				}
				return s.c.Cwnd() - start
			}
			one, many := grow(false), grow(true)
			if one == 0 || many == 0 {
				t.Fatalf("no growth: %d, %d", one, many)
			}
			if d := math.Abs(float64(one-many)) / float64(many); d > 0.01 {
				t.Fatalf("one ACK of %d segments per step grew %d, %d ACKs of one grew %d: %.2f%% apart",
					tc.n, one, tc.n, many, 100*d)
			}
		})
	}
}

func TestNotLimitedAcksGrowNothingInCongestionAvoidance(t *testing.T) {
	for _, reason := range []StopReason{StopApp, StopPeerWindow} {
		t.Run(reason.String(), func(t *testing.T) {
			s := caSim(t, Config{}, 100)
			s.advance(10 * time.Second)
			s.send(10*smss, reason)
			if g := s.ack(10*smss, 10*ms); g != 0 {
				t.Fatalf("ACK after a %v stop grew %d", reason, g)
			}
		})
	}
}

func TestCubicClimbsBackToWMaxAroundK(t *testing.T) {
	// From W_max = 1000 segments, K = ∛(300/0.4) ≈ 9.086 s; at a 50 ms RTT the
	// Reno estimate stays below the cubic curve, so the curve sets cwnd.
	s := caSim(t, Config{}, 1000)
	rtt := 50 * ms
	var atK int
	for s.now < 15*time.Second {
		s.advance(rtt)
		s.fill()
		w := s.inFlight()
		for acked := 0; acked < w; acked += 10 * smss {
			s.ack(min(10*smss, w-acked), rtt)
		}
		if atK == 0 && s.now >= 9086*ms {
			atK = s.c.Cwnd()
		}
		if s.now >= time.Second && s.c.State().WEst >= float64(s.c.Cwnd()) {
			t.Fatalf("at %v the Reno estimate %v reached cwnd %d", s.now, s.c.State().WEst, s.c.Cwnd())
		}
	}
	// At K cwnd is at W_max (the target looks one RTT ahead); after K it
	// probes beyond, convex.
	if atK < 995*smss || atK > 1005*smss {
		t.Fatalf("cwnd at K = %v segments, want ≈ 1000", float64(atK)/smss)
	}
	// W_cubic(15 s − K) ≈ 1000 + 0.4·5.9³ ≈ 1083 segments.
	if s.c.Cwnd() < 1070*smss || s.c.Cwnd() > 1100*smss {
		t.Fatalf("cwnd at 15 s = %v segments, want convex growth past W_max", float64(s.c.Cwnd())/smss)
	}
}

func TestByteSizedAcksGrowLikeOneSegmentAck(t *testing.T) {
	grow := func(piece int) int {
		s := caSim(t, Config{}, 100)
		s.fill()
		s.ack(smss, 10*ms)
		s.advance(2 * time.Second) // concave: W_cubic well above cwnd
		s.fill()
		start := s.c.Cwnd()
		for acked := 0; acked < 10*smss; acked += piece {
			s.ack(piece, 10*ms)
		}
		return s.c.Cwnd() - start
	}
	whole, bytes := grow(10*smss), grow(73)
	// Each 73-byte step adds well under a byte; only the carried fractions let
	// them add up to what one ACK of ten segments grows (within 1%: cwnd
	// rises between the small steps).
	if whole == 0 || math.Abs(float64(whole-bytes)) > 0.01*float64(whole) {
		t.Fatalf("ten segments acknowledged 73 bytes at a time grew %d, in one ACK %d: the fractions were lost", bytes, whole)
	}
}

func TestFirstAckAfterRecoveryStartsTheEpoch(t *testing.T) {
	s := caSim(t, Config{}, 100)
	if s.c.State().EpochValid {
		t.Fatal("the epoch started at the loss, before congestion avoidance")
	}
	s.advance(300 * ms)
	s.fill()
	s.ack(smss, 10*ms)
	if st := s.c.State(); !st.EpochValid || st.EpochStart != 300*ms || st.CwndEpoch != 70*smss {
		t.Fatalf("epoch %v start %v cwnd_epoch %v, want the first ACK's time and cwnd", st.EpochValid, st.EpochStart, st.CwndEpoch)
	}
}

func TestSlowStartAfterLossStopsAtSsthresh(t *testing.T) {
	s := newSim(t, Config{})
	s.c.cwnd = 20 * smss
	s.c.OnCongestion(0, 20*smss) // ssthresh 14 segments
	s.c.OnRTO(0, 14*smss)        // in the episode: ssthresh kept, cwnd one segment
	if s.c.Ssthresh() != 14*smss || s.c.Cwnd() != smss {
		t.Fatalf("ssthresh %d cwnd %d", s.c.Ssthresh(), s.c.Cwnd())
	}
	s.c.OnRecoveryEnd(0)
	for i := 0; s.c.InSlowStart(); i++ {
		if i > 20 {
			t.Fatalf("slow start did not reach ssthresh: cwnd %d", s.c.Cwnd())
		}
		s.fill()
		s.ack(s.inFlight(), 0)
	}
	if s.c.Cwnd() != 14*smss || s.c.State().EpochValid {
		t.Fatalf("slow start ended at cwnd %d (epoch %v), want exactly ssthresh %d", s.c.Cwnd(), s.c.State().EpochValid, 14*smss)
	}
	s.fill()
	s.ack(smss, 0)
	if !s.c.State().EpochValid {
		t.Fatal("the ACK after reaching ssthresh did not start CUBIC's epoch")
	}
}

func TestStateReportsAlpha(t *testing.T) {
	s := caSim(t, Config{}, 100)
	if a := s.c.State().Alpha; a != alphaReno {
		t.Fatalf("α after a reduction %v, want %v", a, alphaReno)
	}
	s.c.cub.wEst = 100 * smss
	if a := s.c.State().Alpha; a != 1 {
		t.Fatalf("α with W_est = cwnd_prior %v, want 1", a)
	}
}
