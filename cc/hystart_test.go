package cc

import (
	"testing"
	"time"
)

func TestRttThreshClampsAtFourAndSixteenMilliseconds(t *testing.T) {
	cases := []struct {
		last, want time.Duration
	}{
		{2 * ms, 4 * ms},
		{20 * ms, 4 * ms},
		{32 * ms, 4 * ms},
		{40 * ms, 5 * ms},
		{64 * ms, 8 * ms},
		{128 * ms, 16 * ms},
		{129 * ms, 16 * ms},
		{200 * ms, 16 * ms},
		{time.Second, 16 * ms},
	}
	for _, tc := range cases {
		t.Run(tc.last.String(), func(t *testing.T) {
			if got := rttThresh(tc.last); got != tc.want {
				t.Fatalf("rttThresh(%v) = %v, want %v", tc.last, got, tc.want)
			}
		})
	}
}

func TestCSSIsEnteredOnTheEighthSampleNotTheSeventh(t *testing.T) {
	s := newSim(t, Config{})
	s.round(rep(8, 10*ms)...)
	s.send(10*smss, StopCwnd)
	for i := 1; i <= 8; i++ {
		s.ack(smss, 20*ms)
		if got, want := s.c.State().CSS, i == 8; got != want {
			t.Fatalf("after sample %d of a risen round: CSS = %v, want %v", i, got, want)
		}
	}
	if n := s.counter("tcp.hystart.css"); n != 1 {
		t.Fatalf("tcp.hystart.css = %d, want 1", n)
	}
}

func TestCSSIsEnteredAtExactlyLastPlusThreshold(t *testing.T) {
	cases := []struct {
		name    string
		rtt     time.Duration
		wantCSS bool
	}{
		{"at last + thresh enters", 14 * ms, true},
		{"a nanosecond under stays in slow start", 14*ms - 1, false},
		{"above enters", 15 * ms, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := newSim(t, Config{})
			s.round(rep(8, 10*ms)...) // last = 10 ms, thresh = 4 ms
			s.send(9*smss, StopCwnd)
			for range 8 {
				s.ack(smss, tc.rtt)
			}
			if got := s.c.State().CSS; got != tc.wantCSS {
				t.Fatalf("current %v against last 10 ms: CSS = %v, want %v", tc.rtt, got, tc.wantCSS)
			}
		})
	}
}

func TestCSSNeedsALastRoundMinimum(t *testing.T) {
	s := newSim(t, Config{})
	s.round(rep(20, 50*ms)...) // the first round has no last-round minimum
	if s.c.State().CSS {
		t.Fatal("CSS entered in the first round, with no last-round minimum")
	}
	s.round(rep(8, 0)...) // a round with no RTT samples leaves last unknown
	s.round(rep(8, 90*ms)...)
	if s.c.State().CSS {
		t.Fatal("CSS entered after a round without samples")
	}
}

func TestAcksWithoutRTTSamplesDoNotCountTowardEight(t *testing.T) {
	s := newSim(t, Config{})
	s.round(rep(8, 10*ms)...)
	s.send(20*smss, StopCwnd)
	for range 7 {
		s.ack(smss, 20*ms)
	}
	for range 5 {
		s.ack(smss, 0)
	}
	if s.c.State().CSS {
		t.Fatal("ACKs without RTT samples counted toward N_RTT_SAMPLE")
	}
	s.ack(smss, 20*ms)
	if !s.c.State().CSS {
		t.Fatal("the eighth sample did not enter CSS")
	}
}

func TestSlowStartGrowthIsCappedAtEightSegmentsPerAck(t *testing.T) {
	cases := []struct {
		name          string
		acked, growth int
	}{
		{"one segment", smss, smss},
		{"a partial segment", 700, 700},
		{"eight segments", 8 * smss, 8 * smss},
		{"nine segments", 9 * smss, 8 * smss},
		{"thirty-four segments", 34 * smss, 8 * smss},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := newSim(t, Config{Arm: ArmB})
			s.fill()
			if g := s.ack(tc.acked, 0); g != tc.growth {
				t.Fatalf("ACK of %d bytes grew %d, want %d", tc.acked, g, tc.growth)
			}
		})
	}
}

func TestLAppliesOnlyInTheInitialSlowStart(t *testing.T) {
	cases := []struct {
		name  string
		event func(s *sim)
		want  int
	}{
		{"initial slow start: L = 8", func(s *sim) {}, 8 * smss},
		{"after a loss: one SMSS", func(s *sim) {
			s.c.OnCongestion(s.now, s.inFlight())
			s.c.OnRecoveryEnd(s.now)
			// Raise ssthresh out of reach so the next ACK is in slow start.
			s.c.ssthresh = 1000 * smss
		}, smss},
		{"after an RTO: one SMSS", func(s *sim) {
			s.c.OnRTO(s.now, s.inFlight())
		}, smss},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := newSim(t, Config{Arm: ArmB})
			s.fill()
			s.ack(10*smss, 0)
			s.fill()
			tc.event(s)
			s.fill()
			if !s.c.InSlowStart() {
				t.Fatalf("not in slow start: cwnd %d ssthresh %d", s.c.Cwnd(), s.c.Ssthresh())
			}
			if g := s.ack(34*smss, 0); g != tc.want {
				t.Fatalf("stretch ACK of 34 segments grew %d, want %d", g, tc.want)
			}
		})
	}
}

func TestCSSGrowsByAQuarterKeepingRemainders(t *testing.T) {
	s := newSim(t, Config{Arm: ArmB})
	s.round(rep(8, 10*ms)...)
	s.send(40*smss, StopCwnd)
	for range 8 {
		s.ack(smss, 20*ms)
	}
	if !s.c.State().CSS {
		t.Fatal("not in CSS")
	}
	if g := s.ack(4*smss, 20*ms); g != smss {
		t.Fatalf("CSS ACK of 4 segments grew %d, want %d", g, smss)
	}
	// Four ACKs of 1 byte grow one byte in total: the quarters accumulate.
	var total int
	for range 4 {
		total += s.ack(1, 20*ms)
	}
	if total != 1 {
		t.Fatalf("four 1-byte ACKs in CSS grew %d in total, want 1", total)
	}
	// Twelve ACKs of a segment grow three segments: 1460/4 = 365 each.
	total = 0
	for range 12 {
		total += s.ack(smss, 20*ms)
	}
	if total != 3*smss {
		t.Fatalf("twelve 1-segment ACKs in CSS grew %d, want %d", total, 3*smss)
	}
	// The L cap applies before the quarter: 34 segments grow 8/4 = 2 segments.
	if g := s.ack(34*smss, 20*ms); g != 2*smss {
		t.Fatalf("CSS stretch ACK of 34 segments grew %d, want %d", g, 2*smss)
	}
}

func TestTheAckThatEntersCSSGrowsAtTheFullRate(t *testing.T) {
	s := newSim(t, Config{})
	s.round(rep(8, 10*ms)...)
	s.send(20*smss, StopCwnd)
	for range 7 {
		s.ack(smss, 20*ms)
	}
	if g := s.ack(smss, 20*ms); g != smss || !s.c.State().CSS {
		t.Fatalf("entering ACK grew %d (CSS %v), want a full segment then CSS", g, s.c.State().CSS)
	}
}

func TestCSSResumesSlowStartWhenRTTFallsBelowBaseline(t *testing.T) {
	s := newSim(t, Config{})
	s.round(rep(8, 10*ms)...)
	s.send(30*smss, StopCwnd)
	for range 8 {
		s.ack(smss, 20*ms) // baseline 20 ms
	}
	if !s.c.State().CSS || s.c.State().CSSBaseline != 20*ms {
		t.Fatalf("CSS %v baseline %v", s.c.State().CSS, s.c.State().CSSBaseline)
	}
	s.ack(smss, 20*ms) // equal to the baseline: stays
	if !s.c.State().CSS {
		t.Fatal("a sample equal to the baseline resumed slow start")
	}
	s.ack(smss, 19*ms)
	st := s.c.State()
	if st.CSS || st.CSSBaseline != 0 {
		t.Fatalf("a sample under the baseline left CSS %v, baseline %v", st.CSS, st.CSSBaseline)
	}
	if n := s.counter("tcp.hystart.resumed"); n != 1 {
		t.Fatalf("tcp.hystart.resumed = %d, want 1", n)
	}
	if g := s.ack(2*smss, 19*ms); g != 2*smss {
		t.Fatalf("after resuming, a 2-segment ACK grew %d, want the full %d", g, 2*smss)
	}
}

// enterCSS runs a 10 ms round, then a round whose samples sit at 14 ms, and
// returns with CSS entered in that round (still open) and the round ended.
func enterCSSAndEndRound(s *sim) {
	s.round(rep(8, 10*ms)...)
	s.round(rep(8, 14*ms)...)
}

func TestHyStartExitsAfterFiveCSSRounds(t *testing.T) {
	s := newSim(t, Config{})
	enterCSSAndEndRound(s) // the partial entry round counts as CSS round 1
	if st := s.c.State(); !st.CSS || st.CSSRounds != 1 {
		t.Fatalf("after the entry round: CSS %v rounds %d", st.CSS, st.CSSRounds)
	}
	for r := 2; r <= 4; r++ {
		s.round(rep(8, 14*ms)...)
		if st := s.c.State(); !st.CSS || st.CSSRounds != r || st.Ssthresh != InfiniteSsthresh {
			t.Fatalf("after CSS round %d: CSS %v rounds %d ssthresh %d", r, st.CSS, st.CSSRounds, st.Ssthresh)
		}
	}
	s.advance(time.Second)
	s.round(rep(8, 14*ms)...) // the fifth
	st := s.c.State()
	if st.Ssthresh != st.Cwnd {
		t.Fatalf("after 5 CSS rounds ssthresh %d, want cwnd %d", st.Ssthresh, st.Cwnd)
	}
	if st.SlowStart || st.HyStartActive || st.CSS {
		t.Fatalf("still in slow start: %+v", st)
	}
	if !st.EpochValid || st.K != 0 || st.WMax != float64(st.Cwnd) || st.EpochStart != s.now {
		t.Fatalf("CUBIC hand-off: epoch %v at %v K %v W_max %v, want K 0, W_max %d at %v",
			st.EpochValid, st.EpochStart, st.K, st.WMax, st.Cwnd, s.now)
	}
	if n := s.counter("tcp.hystart.exits"); n != 1 {
		t.Fatalf("tcp.hystart.exits = %d", n)
	}
	if n := s.counter("tcp.hystart.exit.cwnd.bytes"); n != uint64(st.Cwnd) {
		t.Fatalf("tcp.hystart.exit.cwnd.bytes = %d, want %d", n, st.Cwnd)
	}
}

func TestHyStartExitSetsCwndPriorToCwnd(t *testing.T) {
	s := newSim(t, Config{})
	enterCSSAndEndRound(s)
	for range 4 {
		s.round(rep(8, 14*ms)...)
	}
	st := s.c.State()
	if st.InitialSlowStart {
		t.Fatal("HyStart++ did not exit")
	}
	if st.CwndPrior != st.Cwnd {
		t.Fatalf("cwnd_prior %d, want cwnd %d at the hand-off (RFC 9438 §4.10)", st.CwndPrior, st.Cwnd)
	}
	// With W_est = cwnd_prior the Reno estimate grows with α = 1: an ACK of
	// one segment at the epoch's start grows W_est, and cwnd, by SMSS²/cwnd.
	s.send(st.Cwnd, StopCwnd)
	want := int(float64(st.Cwnd) + smss*smss/float64(st.Cwnd))
	if s.ack(smss, 14*ms); s.c.Cwnd() != want {
		t.Fatalf("first congestion-avoidance ACK: cwnd %d, want %d (α = 1)", s.c.Cwnd(), want)
	}
}

func TestWithinRoundFlapCountsFourEntriesInOneEntryRound(t *testing.T) {
	s := newSim(t, Config{})
	s.round(rep(8, 2*ms)...) // last-round minimum 2 ms, thresh 4 ms
	samples := cat(rep(8, 9*ms), []time.Duration{8 * ms, 8 * ms, 7 * ms, 7 * ms, 6 * ms, 6 * ms, 6 * ms, 6 * ms})
	s.round(samples...)
	if n := s.counter("tcp.hystart.css"); n != 4 {
		t.Errorf("tcp.hystart.css = %d, want 4", n)
	}
	if n := s.counter("tcp.hystart.resumed"); n != 3 {
		t.Errorf("tcp.hystart.resumed = %d, want 3", n)
	}
	if n := s.counter("tcp.hystart.css.entry-rounds"); n != 1 {
		t.Errorf("tcp.hystart.css.entry-rounds = %d, want 1", n)
	}
	// The next round stays in CSS without a new entry: no second entry-round.
	s.round(rep(8, 12*ms)...)
	if n := s.counter("tcp.hystart.css.entry-rounds"); n != 1 {
		t.Errorf("a round still in CSS counted as an entry-round: %d", n)
	}
}

func TestEntryRoundsCountsEachRoundThatEntered(t *testing.T) {
	s := newSim(t, Config{})
	s.round(rep(8, 2*ms)...)
	// Enter, then resume within the round; the next round enters again.
	s.round(cat(rep(8, 9*ms), rep(1, 3*ms))...)
	s.round(rep(8, 9*ms)...)
	if n := s.counter("tcp.hystart.css"); n != 2 {
		t.Errorf("tcp.hystart.css = %d, want 2", n)
	}
	if n := s.counter("tcp.hystart.css.entry-rounds"); n != 2 {
		t.Errorf("tcp.hystart.css.entry-rounds = %d, want 2", n)
	}
}

func TestRoundEndsWhenCumulativeAckReachesWindowEnd(t *testing.T) {
	s := newSim(t, Config{})
	s.send(4*smss, StopCwnd)
	s.ack(smss, 5*ms)
	if st := s.c.State(); st.WindowEnd != uint64(4*smss) || st.RoundSamples != 1 {
		t.Fatalf("windowEnd %d samples %d", st.WindowEnd, st.RoundSamples)
	}
	s.send(4*smss, StopCwnd) // sent during the round: belongs to the next
	s.ack(2*smss, 4*ms)
	if st := s.c.State(); st.RoundSamples != 2 || st.LastRoundMinRTT != 0 {
		t.Fatalf("round ended early: %+v", st)
	}
	s.ack(smss, 6*ms) // reaches windowEnd
	st := s.c.State()
	if st.LastRoundMinRTT != 4*ms || st.RoundSamples != 0 || st.WindowEnd != uint64(8*smss) {
		t.Fatalf("after windowEnd: last %v samples %d windowEnd %d", st.LastRoundMinRTT, st.RoundSamples, st.WindowEnd)
	}
}

func TestLossEndsHyStart(t *testing.T) {
	s := newSim(t, Config{})
	s.round(rep(8, 10*ms)...)
	s.round(rep(8, 14*ms)...)
	s.c.OnCongestion(s.now, s.inFlight()+10*smss)
	s.c.OnRecoveryEnd(s.now)
	st := s.c.State()
	if st.HyStartActive || st.CSS || st.InitialSlowStart {
		t.Fatalf("HyStart++ still running after a loss: %+v", st)
	}
	s.round(rep(8, 10*ms)...)
	s.round(rep(8, 30*ms)...)
	if n := s.counter("tcp.hystart.css"); n != 1 {
		t.Fatalf("CSS entered after the loss: tcp.hystart.css = %d", n)
	}
}

func TestArmANeverEntersCSS(t *testing.T) {
	s := newSim(t, Config{Arm: ArmA})
	s.round(rep(8, 10*ms)...)
	s.round(rep(8, 30*ms)...)
	if s.c.State().CSS || s.counter("tcp.hystart.css") != 0 {
		t.Fatal("arm A ran HyStart++")
	}
}

func TestNotLimitedAcksStillFeedHyStartSamples(t *testing.T) {
	s := newSim(t, Config{})
	s.round(rep(8, 10*ms)...)
	s.send(8*smss, StopApp)
	var grown int
	for range 8 {
		grown += s.ack(smss, 20*ms)
	}
	if grown != 0 {
		t.Fatalf("application-limited ACKs grew %d", grown)
	}
	if !s.c.State().CSS {
		t.Fatal("application-limited ACKs' RTT samples were not observed")
	}
}

func TestCSSRoundsRestartOnReentry(t *testing.T) {
	s := newSim(t, Config{})
	enterCSSAndEndRound(s)
	s.round(rep(8, 14*ms)...)
	if s.c.State().CSSRounds != 2 {
		t.Fatalf("CSS rounds %d, want 2", s.c.State().CSSRounds)
	}
	// Resume (a sample under the 14 ms baseline), then re-enter in the same round.
	s.round(cat(rep(8, 14*ms), rep(1, 13*ms))...)
	if s.c.State().CSS {
		t.Fatal("still in CSS after a sample under the baseline")
	}
	s.round(rep(8, 20*ms)...) // last 13 ms, thresh 4 ms: enters again
	if st := s.c.State(); !st.CSS || st.CSSRounds != 1 {
		t.Fatalf("re-entered CSS with %d rounds counted, want 1 (CSS %v)", st.CSSRounds, st.CSS)
	}
}

func TestResumeNeedsEightSamplesInTheRound(t *testing.T) {
	s := newSim(t, Config{})
	enterCSSAndEndRound(s) // baseline 14 ms
	s.send(20*smss, StopCwnd)
	for i := 1; i <= 7; i++ {
		s.ack(smss, 5*ms)
		if !s.c.State().CSS {
			t.Fatalf("resumed on sample %d of the round, before N_RTT_SAMPLE", i)
		}
	}
	s.ack(smss, 5*ms)
	if s.c.State().CSS {
		t.Fatal("did not resume on the eighth sample under the baseline")
	}
}

func TestPacedSenderGrowsAQuarterOfAStretchAckInCSS(t *testing.T) {
	s := newSim(t, Config{Pacing: true})
	s.round(rep(8, 10*ms)...)
	s.send(60*smss, StopCwnd)
	for range 8 {
		s.ack(smss, 20*ms)
	}
	if g := s.ack(34*smss, 20*ms); g != 34*smss/4 {
		t.Fatalf("paced CSS stretch ACK grew %d, want %d", g, 34*smss/4)
	}
}

// TestAPacedStretchAckCountsAsTheAcksItStandsFor pins onRTT's third
// departure: after a 10 ms round, one ACK of 16 segments at 20 ms counts as
// the eight samples of a receiver acknowledging every second segment, so a
// paced sender (P) and the default arm D enter CSS on it; an ACK of 14
// segments counts as seven, too few; arm B counts each ACK once, as RFC 9406
// §4.2 does.
func TestAPacedStretchAckCountsAsTheAcksItStandsFor(t *testing.T) {
	cases := []struct {
		name    string
		cfg     Config
		segs    int
		wantCSS bool
	}{
		{"P, 16 segments: eight samples", Config{Arm: ArmB, Pacing: true}, 16, true},
		{"P, 14 segments: seven samples", Config{Arm: ArmB, Pacing: true}, 14, false},
		{"D, 16 segments: eight samples", Config{Arm: ArmD}, 16, true},
		{"B, 16 segments: one sample", Config{Arm: ArmB}, 16, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := newSim(t, tc.cfg)
			s.round(rep(8, 10*ms)...)
			s.send(40*smss, StopCwnd)
			s.ack(tc.segs*smss, 20*ms)
			counted := tc.cfg.Pacing || tc.cfg.Arm == ArmD
			if st := s.c.State(); st.CSS != tc.wantCSS || st.RoundSamples != map[bool]int{true: tc.segs / 2, false: 1}[counted] {
				t.Fatalf("CSS %v after the stretch ACK (samples %d), want %v", st.CSS, st.RoundSamples, tc.wantCSS)
			}
		})
	}
}

func TestCSSIsEnteredWhenAQueueFormsMidRound(t *testing.T) {
	// Last round 10 ms. This round's first four samples are at the base,
	// then a queue forms: eight samples at 20 ms. The round's running
	// minimum stays 10 ms; the latest eight samples show the queue, and CSS
	// must start in this round, not a round later (hystart.onRTT).
	s := newSim(t, Config{})
	s.round(rep(8, 10*ms)...)
	s.send(40*smss, StopCwnd)
	for _, r := range cat(rep(4, 10*ms), rep(8, 20*ms)) {
		s.ack(smss, r)
	}
	if !s.c.State().CSS {
		t.Fatalf("not in CSS after eight samples of a queue that formed mid-round: %+v", s.c.State())
	}
	if got := s.c.State().CSSBaseline; got != 20*ms {
		t.Fatalf("CSS baseline %v, want the queue's 20 ms", got)
	}
}

func TestPacedCSSEndsSlowStartWhenTheMinimumRisesAgain(t *testing.T) {
	// In CSS at a 20 ms baseline, eight samples at 24 ms (baseline +
	// RttThresh, clamped to 4 ms) show the queue still growing: the slow
	// start of a paced sender (P) and of the default arm D ends at once,
	// with ssthresh = cwnd; arm B stays in CSS for its CSS_ROUNDS
	// (hystart.onRTT).
	for _, cfg := range []Config{{Arm: ArmB, Pacing: true}, {Arm: ArmD}, {Arm: ArmB}} {
		paced := cfg.Pacing || cfg.Arm == ArmD
		s := newSim(t, cfg)
		s.round(rep(8, 10*ms)...)
		s.send(60*smss, StopCwnd)
		for range 8 {
			s.ack(smss, 20*ms)
		}
		for range 7 {
			s.ack(smss, 24*ms)
		}
		if st := s.c.State(); !st.CSS || !st.InitialSlowStart {
			t.Fatalf("arm %v pacing %v: left CSS on the seventh sample: %+v", cfg.Arm, cfg.Pacing, st)
		}
		s.ack(smss, 24*ms)
		st := s.c.State()
		exited := !st.HyStartActive && st.Ssthresh == st.Cwnd && s.counter("tcp.hystart.exits") == 1
		if exited != paced || !paced && !st.CSS {
			t.Fatalf("arm %v pacing %v, after eight samples a threshold above the baseline: active %v, CSS %v, ssthresh %d, cwnd %d, exits %d",
				cfg.Arm, cfg.Pacing, st.HyStartActive, st.CSS, st.Ssthresh, st.Cwnd, s.counter("tcp.hystart.exits"))
		}
	}
}
