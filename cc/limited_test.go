package cc

import (
	"testing"
	"time"
)

func TestCongestionWindowStopAlwaysLetsAcksGrow(t *testing.T) {
	for _, arm := range []Arm{ArmA, ArmB} {
		for _, inFlight := range []int{0, smss, 5 * smss, 20 * smss} {
			if !stopIsLimited(arm, StopCwnd, inFlight, 20*smss, smss) {
				t.Errorf("arm %v: a cwnd stop with %d in flight was judged not limited", arm, inFlight)
			}
		}
	}
}

func TestApplicationStopGrowsNothing(t *testing.T) {
	for _, arm := range []Arm{ArmA, ArmB} {
		s := newSim(t, Config{Arm: arm})
		s.send(10*smss, StopApp) // the whole window in flight, but the application ran dry
		if g := s.ack(smss, 0); g != 0 {
			t.Fatalf("arm %v: ACK after an application stop grew %d", arm, g)
		}
	}
}

func TestPeerWindowStopGrowsNothing(t *testing.T) {
	for _, arm := range []Arm{ArmA, ArmB} {
		s := newSim(t, Config{Arm: arm})
		s.send(10*smss, StopPeerWindow)
		if g := s.ack(smss, 0); g != 0 {
			t.Fatalf("arm %v: ACK after a peer-window stop grew %d", arm, g)
		}
	}
}

func TestUnknownStopReasonGrowsNothing(t *testing.T) {
	s := newSim(t, Config{})
	s.send(10*smss, StopReason(42))
	if g := s.ack(smss, 0); g != 0 {
		t.Fatalf("ACK after an unknown stop grew %d", g)
	}
}

func TestCardStopInArmBNeedsHalfOfCwndInFlight(t *testing.T) {
	cases := []struct {
		cwnd, inFlight int
		want           bool
	}{
		{26280, 13140, true},  // exactly half
		{26280, 13139, false}, // a byte under
		{26280, 11680, false}, // a segment under
		{26280, 26280, true},  // full
		{26281, 13140, false}, // odd cwnd: 2·13140 < 26281
		{26281, 13141, true},
		{2 * smss, smss, true},
		{2 * smss, 0, false},
	}
	for _, tc := range cases {
		if got := stopIsLimited(ArmB, StopCard, tc.inFlight, tc.cwnd, smss); got != tc.want {
			t.Errorf("arm B card stop, cwnd %d, in flight %d: limited %v, want %v", tc.cwnd, tc.inFlight, got, tc.want)
		}
	}
}

func TestCardStopInArmANeedsLessThanOneSegmentOfRoom(t *testing.T) {
	cases := []struct {
		cwnd, inFlight int
		want           bool
	}{
		{26280, 26280, true},
		{26280, 26280 - smss + 1, true}, // room one byte under a segment
		{26280, 26280 - smss, false},    // a whole segment of room
		{26280, 13140, false},           // half: the arm B rule would grow
	}
	for _, tc := range cases {
		if got := stopIsLimited(ArmA, StopCard, tc.inFlight, tc.cwnd, smss); got != tc.want {
			t.Errorf("arm A card stop, cwnd %d, in flight %d: limited %v, want %v", tc.cwnd, tc.inFlight, got, tc.want)
		}
	}
}

func TestArmAHalfWindowCardStopGrowsNothing(t *testing.T) {
	s := newSim(t, Config{Arm: ArmA})
	s.fill()
	s.ack(10*smss, 0)
	if s.c.Cwnd() != 11*smss {
		t.Fatalf("arm A cwnd after the initial window %d", s.c.Cwnd())
	}
	s.send(10*smss, StopCard) // 10 of 11 segments: over half, a segment of room
	if g := s.ack(smss, 0); g != 0 {
		t.Fatalf("arm A: card stop with over half of cwnd in flight grew %d", g)
	}
	s.send(s.c.Cwnd()-s.inFlight()-100, StopCard)
	if g := s.ack(smss, 0); g != smss {
		t.Fatalf("arm A: card stop with 100 bytes of room grew %d, want %d", g, smss)
	}
}

func TestGateStartsWindowLimitedBeforeAnyStop(t *testing.T) {
	c, _ := New(Config{SMSS: smss})
	if !c.State().Limited {
		t.Fatal("a new controller's gate is closed before the first stop")
	}
	c.OnAck(Ack{Acked: smss, SndUna: smss, SndNxt: 10 * smss})
	if c.Cwnd() != 11*smss {
		t.Fatalf("first ACK without a reported stop: cwnd %d", c.Cwnd())
	}
}

func TestGateJudgesTheStopAgainstCwndAtThatMoment(t *testing.T) {
	s := newSim(t, Config{})
	s.send(5*smss, StopCard) // 5 of 10 segments: half
	if !s.c.State().Limited {
		t.Fatal("half of cwnd at the stop was not limited")
	}
	// The ACK grows cwnd to 11 segments; the gate keeps the stop's verdict
	// until the next stop, which is judged against the grown cwnd.
	s.ack(smss, 0)
	if !s.c.State().Limited {
		t.Fatal("the verdict changed without a new stop")
	}
	s.send(0, StopCard) // 4 of 11 in flight now
	if s.c.State().Limited {
		t.Fatal("a new stop with under half of the grown cwnd still counted as limited")
	}
}

func TestLastStopWins(t *testing.T) {
	s := newSim(t, Config{})
	s.send(10*smss, StopCwnd)
	s.send(0, StopApp)
	if g := s.ack(smss, 0); g != 0 {
		t.Fatalf("an application stop after a cwnd stop still grew %d", g)
	}
	s.send(0, StopCwnd)
	if g := s.ack(smss, 0); g == 0 {
		t.Fatal("a cwnd stop after an application stop grew nothing")
	}
}

func TestAcksAreCountedByGate(t *testing.T) {
	s := newSim(t, Config{})
	s.send(4*smss, StopCwnd)
	s.ack(smss, 0)
	s.ack(smss, 0)
	s.send(0, StopApp)
	s.ack(smss, 0)
	s.send(0, StopCard) // 1 segment of 12 in flight
	s.ack(smss, 0)
	s.ack(0, 0) // a duplicate ACK counts in neither
	if n := s.counter("tcp.acks.cwnd-limited"); n != 2 {
		t.Errorf("tcp.acks.cwnd-limited = %d, want 2", n)
	}
	if n := s.counter("tcp.acks.not-limited"); n != 2 {
		t.Errorf("tcp.acks.not-limited = %d, want 2", n)
	}
	if n := s.counter("tcp.cwnd.grown.bytes"); n != 2*smss {
		t.Errorf("tcp.cwnd.grown.bytes = %d, want %d", n, 2*smss)
	}
}

func TestCardStopUnderHalfGrowsNothingInCongestionAvoidance(t *testing.T) {
	s := caSim(t, Config{}, 100)
	s.advance(10 * time.Second)
	s.send(30*smss, StopCard) // 30 of 70 segments
	if g := s.ack(10*smss, 10*ms); g != 0 {
		t.Fatalf("congestion avoidance after a card stop under half grew %d", g)
	}
	s.send(10*smss, StopCard) // 30 of 70: still under
	s.send(10*smss, StopCard) // 40 of 70: over half
	if g := s.ack(10*smss, 10*ms); g == 0 {
		t.Fatal("congestion avoidance after a card stop over half grew nothing")
	}
}
