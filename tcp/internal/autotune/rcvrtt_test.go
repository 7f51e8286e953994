package autotune

import (
	"testing"
	"time"
)

func TestRcvRTTMeasuresAWindowsArrivalAndKeepsTheSmallest(t *testing.T) {
	var r RcvRTT
	r.OnData(0, 0, 100_000)
	r.OnData(5*ms, 60_000, 160_000)
	if r.RTT() != 0 {
		t.Fatal("sample before the edge was reached")
	}
	r.OnData(10*ms, 100_000, 200_000) // one window in 10 ms
	if r.RTT() != 10*ms {
		t.Fatalf("RTT %v, want 10ms", r.RTT())
	}
	r.OnData(40*ms, 200_000, 300_000) // a slower window: an upper bound, not taken
	if r.RTT() != 10*ms {
		t.Fatalf("RTT %v after a slower window, want 10ms kept", r.RTT())
	}
	r.OnData(48*ms, 300_000, 400_000)
	if r.RTT() != 8*ms {
		t.Fatalf("RTT %v, want 8ms", r.RTT())
	}
}

func TestRcvRTTSmoothsTimestampSamples(t *testing.T) {
	var r RcvRTT
	r.OnTimestampSample(8 * ms)
	r.OnTimestampSample(16 * ms)
	if r.RTT() != 9*ms {
		t.Fatalf("RTT %v, want 7/8·8 + 1/8·16 = 9ms", r.RTT())
	}
	r.OnTimestampSample(-time.Second)
	if r.RTT() != 9*ms {
		t.Fatal("negative sample taken")
	}
}
