package cc

import (
	"encoding/binary"
	"math"
	"math/rand"
	"testing"
	"time"

	"github.com/netramp/netramp/counters"
)

// checkInvariants holds after every event, whatever the caller fed in.
func checkInvariants(t *testing.T, c *Controller, where string) {
	t.Helper()
	st := c.State()
	if st.Cwnd < c.smss || st.Cwnd > maxWindow {
		t.Fatalf("%s: cwnd %d outside [SMSS, maxWindow]", where, st.Cwnd)
	}
	if st.Ssthresh != InfiniteSsthresh && (st.Ssthresh < 2*c.smss || st.Ssthresh > maxWindow) {
		t.Fatalf("%s: ssthresh %d outside [2·SMSS, maxWindow]", where, st.Ssthresh)
	}
	for name, v := range map[string]float64{"K": st.K, "W_max": st.WMax, "W_est": st.WEst, "cwnd_epoch": st.CwndEpoch} {
		if math.IsNaN(v) || math.IsInf(v, 0) || v < 0 {
			t.Fatalf("%s: %s = %v", where, name, v)
		}
	}
	if r := c.PacingRate(10*time.Millisecond, 5*time.Millisecond); math.IsNaN(r) || math.IsInf(r, 0) || r < 0 {
		t.Fatalf("%s: pacing rate %v", where, r)
	}
}

// drive decodes b into a sequence of events and checks the invariants after
// each. Every byte pattern is a valid sequence, including nonsense values.
func drive(t *testing.T, cfg Config, b []byte) {
	c, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	var now time.Duration
	var una, nxt uint64
	for len(b) >= 5 {
		op := b[0] % 9
		v := int32(binary.LittleEndian.Uint32(b[1:5]))
		b = b[5:]
		n := int(v)
		now += time.Duration(int64(v)%int64(200*time.Millisecond)) * 1 // may go backwards
		switch op {
		case 0, 1:
			nxt += uint64(uint32(v) % (64 * 1500))
			c.OnSend(now, nxt)
			c.OnSendStop(StopReason(uint8(v)%6), int(nxt-una)+n%3000)
		case 2, 3, 4:
			ack := n % (40 * 1500)
			if ack > 0 {
				una = min(una+uint64(ack), nxt)
			}
			rtt := time.Duration(v%50) * time.Millisecond
			c.OnAck(Ack{Now: now, Acked: ack, SndUna: una, SndNxt: nxt, RTT: rtt, SRTT: rtt, InFlight: int(nxt - una)})
		case 5:
			wasRecovering := c.InRecovery()
			c.OnCongestion(now, n)
			if !wasRecovering && c.Cwnd() < 2*c.smss {
				t.Fatalf("after a reduction cwnd %d < 2·SMSS", c.Cwnd())
			}
		case 6:
			c.OnRTO(now, n)
			if c.Cwnd() != c.smss {
				t.Fatalf("after an RTO cwnd %d, want the loss window %d", c.Cwnd(), c.smss)
			}
		case 7:
			if v%2 == 0 {
				c.OnSpurious(now)
			} else {
				c.OnRecoveryEnd(now)
			}
		case 8:
			c.OnIdleRestart(now)
		}
		checkInvariants(t, c, "after an event")
	}
}

func TestRandomEventSequencesKeepInvariants(t *testing.T) {
	for seed := int64(1); seed <= 40; seed++ {
		rng := rand.New(rand.NewSource(seed))
		b := make([]byte, 5*2000)
		rng.Read(b)
		cfg := Config{SMSS: 536 + rng.Intn(9000), Arm: Arm(rng.Intn(3)), Pacing: rng.Intn(2) == 0, NoFastConvergence: rng.Intn(2) == 0}
		drive(t, cfg, b)
	}
}

func TestRealisticLossySequencesKeepInvariants(t *testing.T) {
	for seed := int64(1); seed <= 20; seed++ {
		rng := rand.New(rand.NewSource(seed))
		s := newSim(t, Config{Arm: Arm(seed % 3)})
		for i := 0; i < 3000; i++ {
			s.advance(time.Duration(1+rng.Intn(5)) * ms)
			switch r := rng.Intn(100); {
			case r < 60:
				reason := StopReason(rng.Intn(4))
				if reason == StopCwnd {
					s.fill()
				} else {
					s.send(rng.Intn(4)*smss, reason)
				}
			case r < 95:
				if s.inFlight() > 0 {
					s.ack(min(s.inFlight(), (1+rng.Intn(34))*smss), time.Duration(2+rng.Intn(20))*ms)
				}
			case r < 98:
				s.c.OnCongestion(s.now, s.inFlight())
			case r < 99:
				s.c.OnRTO(s.now, s.inFlight())
			default:
				s.c.OnSpurious(s.now)
			}
			checkInvariants(t, s.c, "lossy run")
		}
	}
}

func FuzzControllerEvents(f *testing.F) {
	f.Add([]byte{0, 0x10, 0x27, 0, 0, 2, 0x10, 0x27, 0, 0})
	f.Add([]byte{0, 0xff, 0xff, 0xff, 0x7f, 2, 0xff, 0xff, 0xff, 0x7f, 5, 0xff, 0xff, 0xff, 0xff})
	f.Add([]byte{6, 0, 0, 0, 0x80, 2, 1, 0, 0, 0, 7, 2, 0, 0, 0, 8, 0, 0, 0, 0})
	f.Add([]byte{1, 0xb4, 0x05, 0, 0, 3, 0xb4, 0x05, 0, 0, 5, 0xb4, 0x05, 0, 0, 7, 1, 0, 0, 0, 4, 0x68, 0x0b, 0, 0})
	f.Add(make([]byte, 100))
	f.Fuzz(func(t *testing.T, b []byte) {
		smssFromInput := 1460
		if len(b) > 0 {
			smssFromInput = 1 + int(b[0])*100
		}
		drive(t, Config{SMSS: smssFromInput, Pacing: len(b)%2 == 0}, b)
	})
}

func TestNegativeAckedIsClampedToZero(t *testing.T) {
	s := newSim(t, Config{})
	s.c.OnAck(Ack{Acked: -5000, SndNxt: 10 * smss})
	if s.c.Cwnd() != 10*smss {
		t.Fatalf("negative Acked changed cwnd to %d", s.c.Cwnd())
	}
	if s.counter("tcp.acks.cwnd-limited")+s.counter("tcp.acks.not-limited") != 0 {
		t.Fatal("an ACK of nothing was counted")
	}
}

func TestNegativeInFlightIsClamped(t *testing.T) {
	s := newSim(t, Config{})
	s.c.OnSendStop(StopCard, math.MinInt)
	if st := s.c.State(); st.StopInFlight != 0 || st.Limited {
		t.Fatalf("negative in-flight card stop: recorded %d, limited %v", st.StopInFlight, st.Limited)
	}
	s.c.OnCongestion(0, -1)
	if s.c.Ssthresh() != 2*smss {
		t.Fatalf("reduction from a negative flight: ssthresh %d", s.c.Ssthresh())
	}
}

func TestHugeValuesAreClampedToMaxWindow(t *testing.T) {
	// Unpaced, L caps each ACK's growth at 8 segments, so the bound takes
	// many ACKs; paced (L = infinity), one.
	for _, paced := range []bool{false, true} {
		c, _ := New(Config{SMSS: smss, Pacing: paced})
		for i := 0; i < 2*maxWindow/(hsL*smss) && c.Cwnd() < maxWindow; i++ {
			c.OnAck(Ack{Acked: math.MaxInt, SndUna: 1, SndNxt: 1 << 62})
		}
		if c.Cwnd() != maxWindow {
			t.Fatalf("paced %v: cwnd %d after a huge ACK, want the bound %d", paced, c.Cwnd(), maxWindow)
		}
		c.OnCongestion(0, math.MaxInt)
		if c.Ssthresh() > maxWindow || c.Cwnd() > maxWindow {
			t.Fatalf("paced %v: ssthresh %d cwnd %d", paced, c.Ssthresh(), c.Cwnd())
		}
		c.OnRecoveryEnd(0)
		c.OnAck(Ack{Now: math.MaxInt64, Acked: math.MaxInt, SndUna: 1 << 62, SndNxt: 1 << 62, RTT: math.MaxInt64, SRTT: math.MaxInt64})
		checkInvariants(t, c, "huge CA ACK")
	}
}

func TestTimeGoingBackwardsDoesNotShrinkOrBreakCwnd(t *testing.T) {
	s := caSim(t, Config{}, 100)
	s.now = 10 * time.Second
	s.fill()
	s.ack(smss, 10*ms)
	cw := s.c.Cwnd()
	s.now = 0
	s.fill()
	s.ack(10*smss, 10*ms)
	if s.c.Cwnd() < cw {
		t.Fatalf("cwnd fell from %d to %d when time went backwards", cw, s.c.Cwnd())
	}
	checkInvariants(t, s.c, "backwards time")
}

func TestNegativeRTTSamplesAreIgnored(t *testing.T) {
	s := newSim(t, Config{})
	s.send(10*smss, StopCwnd)
	s.ack(smss, -5*ms)
	if st := s.c.State(); st.RoundSamples != 0 || st.CurrentRoundMinRTT != 0 {
		t.Fatalf("a negative RTT was taken as a sample: %+v", st)
	}
}

func TestIdleRestartCutsCwndToInitialWindow(t *testing.T) {
	s := caSim(t, Config{}, 100)
	s.c.OnIdleRestart(s.now)
	if s.c.Cwnd() != 10*smss || s.c.Ssthresh() != 70*smss {
		t.Fatalf("after idle: cwnd %d ssthresh %d, want IW and the ssthresh kept", s.c.Cwnd(), s.c.Ssthresh())
	}
	if n := s.counter("tcp.cc.idle-restarts"); n != 1 {
		t.Fatalf("tcp.cc.idle-restarts = %d", n)
	}
	small := newSim(t, Config{InitialWindow: 10})
	small.c.cwnd = 4 * smss
	small.c.OnIdleRestart(0)
	if small.c.Cwnd() != 4*smss {
		t.Fatalf("restart window raised cwnd from 4 segments to %d bytes", small.c.Cwnd())
	}
}

func TestIdleTimeIsExcludedFromT(t *testing.T) {
	s := caSim(t, Config{InitialWindow: 100}, 100) // the restart window leaves 70 segments alone
	s.fill()
	s.ack(smss, 10*ms)
	start := s.c.State().EpochStart
	s.advance(30 * time.Second)
	s.c.OnIdleRestart(s.now)
	if got := s.c.State().EpochStart - start; got != 30*time.Second {
		t.Fatalf("idle restart moved the epoch by %v, want 30 s", got)
	}
}

func TestNewCountersRegistersEveryNameWithADoc(t *testing.T) {
	r := counters.NewRegistry()
	NewCounters(r)
	want := []string{
		"tcp.hystart.css", "tcp.hystart.css.entry-rounds", "tcp.hystart.resumed", "tcp.hystart.exits",
		"tcp.hystart.exit.cwnd.bytes", "tcp.acks.cwnd-limited", "tcp.acks.not-limited", "tcp.acks.in-recovery",
		"tcp.cwnd.grown.bytes", "tcp.cwnd.max.bytes", "tcp.cc.reductions", "tcp.cc.repeat-losses",
		"tcp.cc.undos", "tcp.cc.rto-resets", "tcp.cc.reno-friendly.acks", "tcp.cc.idle-restarts",
	}
	for _, name := range want {
		c := r.Lookup(name)
		if c == nil || c.Doc() == "" {
			t.Errorf("counter %s not registered with a doc", name)
		}
	}
	if got := len(r.Counters()); got != len(want) {
		t.Errorf("%d counters registered, want %d", got, len(want))
	}
	// Two connections of one stack share the counters.
	a, b := NewCounters(r), NewCounters(r)
	a.CSS.Inc()
	if b.CSS.Load() != 1 {
		t.Error("a second NewCounters did not share the counters")
	}
}

func TestNilCountersAreSafe(t *testing.T) {
	for _, cfg := range []Config{{SMSS: smss}, {SMSS: smss, Counters: &Counters{}}, {SMSS: smss, Counters: NewCounters(nil)}} {
		c, err := New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		b := make([]byte, 500)
		rand.New(rand.NewSource(7)).Read(b)
		drive(t, cfg, b)
		c.OnAck(Ack{Acked: smss})
		c.OnCongestion(0, smss)
		c.OnRTO(0, smss)
		c.OnSpurious(0)
	}
}

func TestCwndMaxCounterIsAHighWaterMark(t *testing.T) {
	s := newSim(t, Config{Arm: ArmB})
	s.fill()
	s.ack(10*smss, 0)
	s.c.OnRTO(s.now, s.inFlight())
	if n := s.counter("tcp.cwnd.max.bytes"); n != 18*smss {
		t.Fatalf("tcp.cwnd.max.bytes = %d, want %d", n, 18*smss)
	}
}

func TestStateReportsTheLastAcksGrowth(t *testing.T) {
	s := newSim(t, Config{})
	s.fill()
	s.ack(3*smss, 0)
	if g := s.c.State().GrownLastAck; g != 3*smss {
		t.Fatalf("GrownLastAck %d, want %d", g, 3*smss)
	}
	s.send(0, StopApp)
	s.ack(smss, 0)
	if g := s.c.State().GrownLastAck; g != 0 {
		t.Fatalf("GrownLastAck %d after a not-limited ACK", g)
	}
}

func TestArmAndStopReasonNames(t *testing.T) {
	cases := map[string]string{
		ArmA.String(): "A", ArmB.String(): "B", ArmD.String(): "D", Arm(9).String(): "Arm(9)",
		StopApp.String(): "app", StopPeerWindow.String(): "peer-window", StopCwnd.String(): "cwnd",
		StopCard.String(): "card", StopReason(9).String(): "StopReason(9)",
	}
	for got, want := range cases {
		if got != want {
			t.Errorf("String() = %q, want %q", got, want)
		}
	}
}
