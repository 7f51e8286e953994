package cc

import (
	"testing"
	"time"
)

// TestClockPacingAfterSlowStartTopsTheACKClockUpToCwnd pins the pacing rate
// arm B puts on top of its ACK clock: in slow start cwnd/min_rtt (one
// round's growth over a round trip); after it, what keeps the sum of the
// two at cwnd/min_rtt, the ACK clock's rate being taken as the flight over
// SRTT. Topped up at cwnd/min_rtt after a recovery the peer's window had
// held short, the sum was twice the bottleneck rate (host_tests sweep, 200
// Mbit/s, 40 ms, 0.2 BDP): a second loss.
func TestClockPacingAfterSlowStartTopsTheACKClockUpToCwnd(t *testing.T) {
	const smss, minRTT, srtt = 1000, 40 * time.Millisecond, 50 * time.Millisecond
	c, err := New(Config{SMSS: smss, Arm: ArmB})
	if err != nil {
		t.Fatal(err)
	}
	iw := c.Cwnd()
	rate, burst := c.ClockPacing(minRTT, srtt, iw)
	if want := float64(iw) / minRTT.Seconds(); !c.InSlowStart() || rate != want || burst != iw {
		t.Fatalf("slow start: rate %.0f burst %d, want %.0f and %d", rate, burst, want, iw)
	}
	c.cwnd, c.ssthresh = 1_000_000, 1_000_000 // congestion avoidance
	cases := []struct {
		inFlight int
		want     float64 // bytes per second
	}{
		{inFlight: 0, want: 25e6},                  // no clock: all of cwnd/min_rtt
		{inFlight: 600_000, want: 25e6 - 12e6},     // 600 KB over 50 ms runs the clock at 12 MB/s
		{inFlight: 1_000_000, want: 25e6 - 20e6},   // a full window
		{inFlight: 1_400_000, want: 10_000 / 0.04}, // clock past cwnd/min_rtt: the initial window per min_rtt
	}
	for _, k := range cases {
		if rate, _ := c.ClockPacing(minRTT, srtt, k.inFlight); rate < k.want-1 || rate > k.want+1 {
			t.Errorf("in flight %d: rate %.0f, want %.0f", k.inFlight, rate, k.want)
		}
	}
	if rate, _ := c.ClockPacing(minRTT, 0, 600_000); rate < 10e6-1 || rate > 10e6+1 {
		t.Errorf("no SRTT yet: rate %.0f, want the clock taken over min_rtt, 10 MB/s", rate)
	}
}
