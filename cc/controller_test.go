package cc

import (
	"errors"
	"strings"
	"testing"
	"time"
)

func TestNewRejectsBadConfigNamingTheField(t *testing.T) {
	cases := []struct {
		cfg   Config
		field string
	}{
		{Config{SMSS: 0}, "SMSS"},
		{Config{SMSS: -1}, "SMSS"},
		{Config{SMSS: 70000}, "SMSS"},
		{Config{SMSS: 1460, InitialWindow: -1}, "InitialWindow"},
		{Config{SMSS: 1460, InitialWindow: 1 << 20}, "InitialWindow"},
		{Config{SMSS: 1460, Arm: Arm(7)}, "Arm"},
	}
	for _, tc := range cases {
		t.Run(tc.field, func(t *testing.T) {
			c, err := New(tc.cfg)
			if err == nil || c != nil {
				t.Fatalf("New(%+v) = %v, %v; want an error", tc.cfg, c, err)
			}
			if !errors.Is(err, ErrConfig) {
				t.Errorf("error %v is not ErrConfig", err)
			}
			if !strings.Contains(err.Error(), tc.field) {
				t.Errorf("error %q does not name %s", err, tc.field)
			}
		})
	}
}

func TestNewStartsAtTenSegmentsWithInfiniteSsthresh(t *testing.T) {
	c, err := New(Config{SMSS: smss})
	if err != nil {
		t.Fatal(err)
	}
	if c.Cwnd() != 10*smss || c.Ssthresh() != InfiniteSsthresh || !c.InSlowStart() {
		t.Fatalf("cwnd %d ssthresh %d slow start %v", c.Cwnd(), c.Ssthresh(), c.InSlowStart())
	}
	c, _ = New(Config{SMSS: smss, InitialWindow: 4})
	if c.Cwnd() != 4*smss {
		t.Fatalf("IW 4: cwnd %d", c.Cwnd())
	}
}

func TestStretchAckGrowsByEightSegments(t *testing.T) {
	s := newSim(t, Config{Arm: ArmB})
	s.fill()
	s.ack(10*smss, 0) // the initial window: +8 SMSS
	s.fill()
	before := s.c.Cwnd()
	if g := s.ack(34*smss, 0); g != 8*smss {
		t.Fatalf("stretch ACK of 34 segments grew cwnd by %d, want %d (cwnd before %d)", g, 8*smss, before)
	}
}

// TestDefaultArmGrowsByEverySegmentAStretchAckCovers pins the default arm's
// L = infinity: after the initial window, one ACK of 16 segments (a parity
// path's stretch ACK) grows cwnd by 16 segments in the initial slow start,
// as the kernel's slow start grows by every segment an ACK covers, where
// arm B, keeping the seed's L = 8, grows 8.
func TestDefaultArmGrowsByEverySegmentAStretchAckCovers(t *testing.T) {
	for _, tc := range []struct {
		cfg  Config
		want int
	}{{Config{}, 16 * smss}, {Config{Arm: ArmD}, 16 * smss}, {Config{Arm: ArmB}, 8 * smss}} {
		s := newSim(t, tc.cfg)
		s.fill()
		s.ack(10*smss, 0)
		s.fill()
		if g := s.ack(16*smss, 0); g != tc.want {
			t.Errorf("arm %v: stretch ACK of 16 segments grew cwnd by %d segments, want %d", tc.cfg.Arm, g/smss, tc.want/smss)
		}
	}
}

func TestStretchAckAfterLossGrowsByOneSegment(t *testing.T) {
	s := newSim(t, Config{})
	s.fill()
	s.ack(10*smss, 0)
	s.fill()
	s.c.OnRTO(s.now, s.inFlight())
	s.una = s.nxt
	s.fill()
	if !s.c.InSlowStart() {
		t.Fatal("not in slow start after the RTO")
	}
	if g := s.ack(34*smss, 0); g != smss {
		t.Fatalf("after an RTO a stretch ACK of 34 segments grew cwnd by %d, want %d", g, smss)
	}
}

func TestArmAGrowsByOneSegmentInInitialSlowStart(t *testing.T) {
	s := newSim(t, Config{Arm: ArmA})
	s.fill()
	if g := s.ack(34*smss, 0); g != smss {
		t.Fatalf("arm A stretch ACK grew %d, want %d", g, smss)
	}
}

func TestPacedStretchAckGrowsByAllItDelivers(t *testing.T) {
	s := newSim(t, Config{Pacing: true})
	s.fill()
	if g := s.ack(34*smss, 0); g != 34*smss {
		t.Fatalf("paced stretch ACK grew %d, want %d (L = infinity for a paced sender)", g, 34*smss)
	}
}

func TestHalfOfCwndInFlightAtCardStopGrows(t *testing.T) {
	cases := []struct {
		name       string
		segments   int
		wantGrowth int
	}{
		{"nine of eighteen segments in flight (exactly half) grows", 9, smss},
		{"eight in flight (a segment under half) grows nothing", 8, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := newSim(t, Config{SMSS: smss, InitialWindow: 10, Arm: ArmB})
			s.fill()
			s.ack(10*smss, 0)
			if s.c.Cwnd() != 26280 {
				t.Fatalf("after the initial window's ACK cwnd = %d, want 26280", s.c.Cwnd())
			}
			s.send(tc.segments*smss, StopCard)
			if s.inFlight() != tc.segments*smss {
				t.Fatalf("in flight %d", s.inFlight())
			}
			if g := s.ack(smss, 0); g != tc.wantGrowth {
				t.Fatalf("card stop with %d bytes in flight of cwnd 26280: next ACK grew %d, want %d",
					tc.segments*smss, g, tc.wantGrowth)
			}
		})
	}
}

func TestPacingRatePacesTheGrowthOfEachPhase(t *testing.T) {
	const srtt, minRTT = 20 * time.Millisecond, 10 * time.Millisecond
	iw := float64(10 * smss)
	cases := []struct {
		name  string
		cfg   Config
		event func(s *sim)
		want  float64
	}{
		{"P, slow start: twice cwnd a min RTT", Config{Pacing: true}, func(*sim) {}, 2 * iw / 0.01},
		{"B: not paced", Config{}, func(*sim) {}, 0},
		{"P, CSS: a quarter more than cwnd a min RTT", Config{Pacing: true}, enterCSS, 0},
		{"P, congestion avoidance: 1.2 cwnd an srtt", Config{Pacing: true}, func(s *sim) { s.c.OnCongestion(0, 10*smss) }, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := newSim(t, tc.cfg)
			tc.event(s)
			want := tc.want
			switch {
			case s.c.State().CSS:
				want = 1.25 * float64(s.c.Cwnd()) / 0.01
			case tc.cfg.Pacing && !s.c.InSlowStart():
				want = 1.2 * float64(s.c.Cwnd()) / 0.02
			}
			if r := s.c.PacingRate(srtt, minRTT); r != want {
				t.Fatalf("rate %v, want %v", r, want)
			}
			if r := s.c.PacingRate(0, 0); r != 0 {
				t.Fatalf("rate without an RTT %v, want 0", r)
			}
		})
	}
}

// enterCSS drives HyStart++ into CSS: a round at 10 ms, then 8 samples at 20 ms.
func enterCSS(s *sim) {
	s.round(rep(8, 10*ms)...)
	s.send(40*smss, StopCwnd)
	for range 8 {
		s.ack(smss, 20*ms)
	}
	if !s.c.State().CSS {
		s.t.Fatal("not in CSS")
	}
}

// TestRecoveryNeedsOnRecoveryEnd: cc keeps no recovery point; only the
// sender's OnRecoveryEnd ends a recovery, whatever the ACKs acknowledge.
func TestRecoveryNeedsOnRecoveryEnd(t *testing.T) {
	c, _ := New(Config{SMSS: smss})
	c.OnSend(0, 10*smss)
	c.OnCongestion(0, 10*smss)
	c.OnAck(Ack{Acked: 20 * smss, SndUna: 20 * smss, SndNxt: 20 * smss})
	if !c.InRecovery() {
		t.Fatal("an ACK past SND.NXT at the loss ended recovery without OnRecoveryEnd")
	}
	c.OnRecoveryEnd(0)
	if c.InRecovery() {
		t.Fatal("OnRecoveryEnd did not end recovery")
	}
}

func TestInRecoveryCoversLossAndTimeout(t *testing.T) {
	c, _ := New(Config{SMSS: smss})
	if c.InRecovery() {
		t.Fatal("a new controller is in recovery")
	}
	c.OnCongestion(0, 10*smss)
	if st := c.State(); !c.InRecovery() || !st.FastRecovery || st.RTOEpisode {
		t.Fatalf("after a loss: %+v", st)
	}
	c.OnRTO(0, 10*smss)
	if st := c.State(); !c.InRecovery() || st.FastRecovery || !st.RTOEpisode {
		t.Fatalf("after an RTO in recovery: %+v", st)
	}
}

func TestInitialWindowScalesWithSMSS(t *testing.T) {
	for _, tc := range []struct{ smss, iw, want int }{{536, 0, 5360}, {1460, 3, 4380}, {9000, 10, 90000}, {1, 1, 1}} {
		c, err := New(Config{SMSS: tc.smss, InitialWindow: tc.iw})
		if err != nil || c.Cwnd() != tc.want {
			t.Errorf("SMSS %d IW %d: cwnd %d err %v, want %d", tc.smss, tc.iw, c.Cwnd(), err, tc.want)
		}
	}
}

// rampRounds runs n round trips in which the sender fills cwnd, up to a
// flight of cardSegs segments when the card's credit ends the opportunity
// first (0 = no card limit), and the peer acknowledges every stretch segments
// with one ACK. It returns cwnd at the end.
func rampRounds(t *testing.T, arm Arm, n, stretch, cardSegs int) int {
	s := newSim(t, Config{Arm: arm})
	for r := 0; r < n; r++ {
		s.advance(2 * ms)
		if cardSegs > 0 && s.c.Cwnd() > cardSegs*smss {
			s.send(cardSegs*smss-s.inFlight(), StopCard)
		} else {
			s.fill()
		}
		for s.inFlight() > 0 {
			s.ack(min(s.inFlight(), stretch*smss), 2*ms)
		}
	}
	return s.c.Cwnd()
}

func TestStretchAckedRampIsFasterInArmB(t *testing.T) {
	// 34 segments an ACK: arm B grows up to 8 segments an ACK (8/34 of a
	// window per round trip), arm A (RFC 5681's min(N, SMSS)) one segment.
	a := rampRounds(t, ArmA, 20, 34, 0)
	b := rampRounds(t, ArmB, 20, 34, 0)
	if a > 30*smss {
		t.Fatalf("arm A reached %d segments in 20 round trips, want at most 30", a/smss)
	}
	if b < 50*a {
		t.Fatalf("arm B reached %d segments, arm A %d: want arm B 50 times larger", b/smss, a/smss)
	}
}

func TestCardHeldSenderRampsInArmBOnly(t *testing.T) {
	// The card admits 12 segments an opportunity and the peer ACKs each
	// segment. Both arms grow from IW 10 to 20 in the first, window-limited,
	// round trip. Then the card holds the sender at 12 of 20: arm A (room of
	// 8 segments) grows nothing; arm B (12 ≥ 20/2) grows by the 12 ACKs to 32,
	// and stops there because 12 < 32/2.
	a := rampRounds(t, ArmA, 20, 1, 12)
	b := rampRounds(t, ArmB, 20, 1, 12)
	if a != 20*smss {
		t.Fatalf("arm A cwnd %v segments, want 20", float64(a)/smss)
	}
	if b != 32*smss {
		t.Fatalf("arm B cwnd %v segments, want 32", float64(b)/smss)
	}
}
