package rtt

import (
	"testing"
	"time"
)

const ms = time.Millisecond

func TestInitialRTOIsOneSecondBeforeAnySample(t *testing.T) {
	e := New(Config{})
	if e.HasSample() || e.SRTT() != 0 || e.MinRTT() != 0 {
		t.Fatalf("fresh estimator has state: has=%v srtt=%v min=%v", e.HasSample(), e.SRTT(), e.MinRTT())
	}
	if got := e.RTO(); got != time.Second {
		t.Fatalf("RTO = %v, want 1s (RFC 6298 §2.1)", got)
	}
}

func TestFirstSampleSetsSRTTAndHalfVariance(t *testing.T) {
	e := New(Config{})
	e.Sample(0, 100*ms)
	if e.SRTT() != 100*ms || e.RTTVar() != 50*ms {
		t.Fatalf("srtt=%v rttvar=%v, want 100ms/50ms (RFC 6298 §2.2)", e.SRTT(), e.RTTVar())
	}
	// RTO = 100 + 4*50 = 300 ms.
	if e.RTO() != 300*ms {
		t.Fatalf("RTO = %v, want 300ms", e.RTO())
	}
}

func TestLaterSamplesFollowAlphaOneEighthBetaOneQuarter(t *testing.T) {
	cases := []struct {
		name         string
		samples      []time.Duration
		srtt, rttvar time.Duration
	}{
		// rttvar = 3/4*50 + 1/4*|100-200| = 37.5+25 = 62.5; srtt = 7/8*100+1/8*200 = 112.5
		{"rise", []time.Duration{100 * ms, 200 * ms}, 112500 * time.Microsecond, 62500 * time.Microsecond},
		// rttvar = 3/4*50 + 1/4*0 = 37.5; srtt stays 100
		{"steady", []time.Duration{100 * ms, 100 * ms}, 100 * ms, 37500 * time.Microsecond},
		// rttvar = 3/4*50 + 1/4*60 = 52.5; srtt = 7/8*100+1/8*40 = 92.5
		{"fall", []time.Duration{100 * ms, 40 * ms}, 92500 * time.Microsecond, 52500 * time.Microsecond},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			e := New(Config{})
			for i, s := range c.samples {
				e.Sample(time.Duration(i)*ms, s)
			}
			if e.SRTT() != c.srtt || e.RTTVar() != c.rttvar {
				t.Fatalf("srtt=%v rttvar=%v, want %v/%v", e.SRTT(), e.RTTVar(), c.srtt, c.rttvar)
			}
		})
	}
}

func TestRTOIsClampedToMinAndMax(t *testing.T) {
	e := New(Config{})
	e.Sample(0, time.Millisecond) // 1 + 4*0.5 = 3 ms: the variation term is floored at 200 ms
	if e.RTO() != time.Millisecond+DefaultMinRTO {
		t.Fatalf("RTO = %v, want SRTT + the 200ms floor", e.RTO())
	}
	e2 := New(Config{MaxRTO: 5 * time.Second})
	e2.Sample(0, 3*time.Second) // 3 + 6 = 9 s
	if e2.RTO() != 5*time.Second {
		t.Fatalf("RTO = %v, want the 5s ceiling", e2.RTO())
	}
}

// TestRTOStaysMinRTOPastASmoothRTT pins the floor of the variation term: per-ACK
// samples of a smoothly rising 600 ms round trip drive RTTVAR to under a
// millisecond, and the RTO must still leave MinRTO past SRTT for a queue
// that grows while a loss is repaired (RFC 6298's sum gave SRTT + 4 ms).
func TestRTOStaysMinRTOPastASmoothRTT(t *testing.T) {
	e := New(Config{})
	rtt := 600 * ms
	for i := 0; i < 2000; i++ {
		e.Sample(time.Duration(i)*ms, rtt)
		rtt += 50 * time.Microsecond // the queue grows 50 µs an ACK
	}
	if e.RTTVar() > ms {
		t.Fatalf("RTTVAR = %v, want it decayed under 1ms for the test to mean anything", e.RTTVar())
	}
	if got, want := e.RTO(), e.SRTT()+DefaultMinRTO; got != want {
		t.Fatalf("RTO = %v with SRTT %v, RTTVAR %v: want SRTT + MinRTO = %v", got, e.SRTT(), e.RTTVar(), want)
	}
}

func TestGranularityBoundsTheVarianceTerm(t *testing.T) {
	e := New(Config{MinRTO: time.Nanosecond, Granularity: 10 * ms})
	for i := 0; i < 50; i++ {
		e.Sample(time.Duration(i)*ms, 20*ms) // rttvar decays towards 0
	}
	if e.RTO() != 30*ms {
		t.Fatalf("RTO = %v, want SRTT + G = 30ms", e.RTO())
	}
}

func TestBackoffDoublesUntilMaxAndASampleCollapsesIt(t *testing.T) {
	e := New(Config{})
	e.Sample(0, 100*ms) // RTO 300 ms
	want := []time.Duration{600 * ms, 1200 * ms, 2400 * ms}
	for i, w := range want {
		e.Backoff()
		if e.RTO() != w || e.Backoffs() != i+1 {
			t.Fatalf("after %d backoffs RTO=%v count=%d, want %v", i+1, e.RTO(), e.Backoffs(), w)
		}
	}
	for i := 0; i < 200; i++ {
		e.Backoff()
	}
	if e.RTO() != DefaultMaxRTO {
		t.Fatalf("RTO = %v after many backoffs, want the max %v", e.RTO(), DefaultMaxRTO)
	}
	if e.Backoffs() != 64 {
		t.Fatalf("Backoffs = %d, want saturation at 64", e.Backoffs())
	}
	e.Sample(time.Second, 100*ms)
	if e.Backoffs() != 0 || e.RTO() >= 600*ms {
		t.Fatalf("a new sample left backoff: count=%d RTO=%v", e.Backoffs(), e.RTO())
	}
	e.Backoff()
	e.ResetBackoff()
	if e.Backoffs() != 0 {
		t.Fatal("ResetBackoff left a count")
	}
}

func TestInitialRTOBacksOffBeforeAnySample(t *testing.T) {
	e := New(Config{})
	e.Backoff()
	e.Backoff()
	if e.RTO() != 4*time.Second {
		t.Fatalf("RTO = %v, want 4s (SYN lost twice)", e.RTO())
	}
}

func TestNegativeSampleIsIgnored(t *testing.T) {
	e := New(Config{})
	e.Sample(0, -time.Second)
	if e.HasSample() {
		t.Fatal("a negative sample was taken")
	}
}

func TestMinRTTIsTheWindowedMinimumAndAgesOut(t *testing.T) {
	e := New(Config{})
	e.Sample(0, 50*ms)
	e.Sample(time.Second, 80*ms)
	if e.MinRTT() != 50*ms {
		t.Fatalf("MinRTT = %v, want 50ms", e.MinRTT())
	}
	// The path's delay rises for good: after the window the old minimum is gone.
	for now := 2 * time.Second; now <= 14*time.Second; now += 500 * ms {
		e.Sample(now, 80*ms)
	}
	if e.MinRTT() != 80*ms {
		t.Fatalf("MinRTT = %v after the window passed, want 80ms", e.MinRTT())
	}
	// A new lower sample counts at once.
	e.Sample(14*time.Second+ms, 30*ms)
	if e.MinRTT() != 30*ms {
		t.Fatalf("MinRTT = %v, want 30ms", e.MinRTT())
	}
}

func TestMinRTTKeepsAMinimumWithinTheWindow(t *testing.T) {
	e := New(Config{})
	e.Sample(0, 80*ms)
	e.Sample(3*time.Second, 20*ms)
	for now := 3 * time.Second; now < 12*time.Second; now += 100 * ms {
		e.Sample(now, 90*ms)
	}
	if e.MinRTT() != 20*ms {
		t.Fatalf("MinRTT = %v, want 20ms (sample 9s old, window 10s)", e.MinRTT())
	}
}
