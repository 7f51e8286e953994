package wire

import (
	"testing"
	"time"
)

// ackGroups splits the ACKs A received into groups that arrived back to back
// (a 1 Gbit/s line puts pure ACKs 624 ns apart).
func ackGroups(got []rx) (sizes []int, firsts []time.Duration) {
	for i, g := range got {
		if i == 0 || g.at-got[i-1].at > 10*time.Microsecond {
			sizes = append(sizes, 0)
			firsts = append(firsts, g.at)
		}
		sizes[len(sizes)-1]++
	}
	return sizes, firsts
}

func TestAckAggGapReleasesEachBurstSoGroupsGrowWithTheLoad(t *testing.T) {
	const gap = time.Millisecond
	r := newRig(t, Config{
		AtoB: Dir{RateBps: 1e9, Delay: time.Millisecond},
		BtoA: Dir{RateBps: 1e9, Delay: time.Millisecond, AckAggSegments: 34, AckAggHold: time.Second, AckAggGap: gap},
	})
	r.b.onRx = func(x rx) { send(r.w.B(), ack(segID(x.b))) }
	// A burst of 5, then 20 ms later one of 80, 20 µs apart: the small
	// flight is answered once it ends, the large one per 34 and its tail
	// once it ends; neither waits the 1 s hold.
	var frames [][]byte
	for i := 0; i < 5; i++ {
		frames = append(frames, data(uint32(i), 1000))
	}
	r.sendEvery(t, r.w.A(), 20*time.Microsecond, frames)
	var big [][]byte
	for i := 0; i < 80; i++ {
		big = append(big, data(uint32(5+i), 1000))
	}
	r.clk.AfterFunc(20*time.Millisecond, func() { r.sendEvery(t, r.w.A(), 20*time.Microsecond, big) })
	// A lone ACK long after the bursts passes at once: the peer is idle.
	r.clk.AfterFunc(60*time.Millisecond, func() { send(r.w.B(), ack(1000)) })
	r.drain()
	sizes, firsts := ackGroups(r.a.got)
	want := []int{5, 34, 34, 12, 1}
	if len(sizes) != len(want) {
		t.Fatalf("ACK groups %v, want %v", sizes, want)
	}
	for i := range want {
		if sizes[i] != want[i] {
			t.Fatalf("ACK groups %v, want %v", sizes, want)
		}
	}
	path := time.Millisecond + time.Duration(40+EthernetOverhead)*8 // ns at 1 Gbit/s
	if got, want := firsts[0], r.b.got[4].at+gap+path; got != want {
		t.Errorf("the small flight's ACKs arrived at %v, want its last segment's arrival %v + gap + path = %v", got, r.b.got[4].at, want)
	}
	if got, want := firsts[3], r.b.got[84].at+gap+path; got != want {
		t.Errorf("the large flight's tail arrived at %v, want %v", got, want)
	}
	if got, want := firsts[4], 60*time.Millisecond+path; got != want {
		t.Errorf("the lone ACK arrived at %v, want %v (not held)", got, want)
	}
}

func TestJitterPeriodKeepsOneDrawPerPeriod(t *testing.T) {
	const (
		delay, jitter, period = time.Millisecond, 5 * time.Millisecond, 2 * time.Millisecond
		every, n              = 100 * time.Microsecond, 1000
	)
	// Reorder set, so no frame waits for one ahead: each delay is its draw.
	r := newRig(t, Config{AtoB: Dir{Delay: delay, Jitter: jitter, JitterPeriod: period, Reorder: true}, Seed: 3})
	var frames [][]byte
	for i := 0; i < n; i++ {
		frames = append(frames, data(uint32(i), 10))
	}
	r.sendEvery(t, r.w.A(), every, frames)
	r.drain()
	draw := map[time.Duration]time.Duration{} // period start -> extra delay
	lo, hi := jitter, time.Duration(0)
	for _, g := range r.b.got {
		sent := time.Duration(segID(g.b)) * every
		extra := g.at - sent - delay
		if extra < 0 || extra >= jitter {
			t.Fatalf("frame sent at %v: extra delay %v outside [0, %v)", sent, extra, jitter)
		}
		p := sent - sent%period
		if d, ok := draw[p]; ok && d != extra {
			t.Fatalf("period at %v: delays %v and %v, want one draw", p, d, extra)
		}
		draw[p] = extra
		lo, hi = min(lo, extra), max(hi, extra)
	}
	if want := n * int(every) / int(period); len(draw) != want {
		t.Fatalf("%d periods, want %d", len(draw), want)
	}
	if hi-lo < jitter/2 {
		t.Fatalf("draws span only %v..%v", lo, hi)
	}
}
