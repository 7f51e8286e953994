package wire

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"gvisor.dev/gvisor/pkg/tcpip"
	"gvisor.dev/gvisor/pkg/tcpip/header"

	"github.com/netramp/netramp/counters"
)

// wireTime is how long a frame of an IP packet of size bytes takes at rate.
func wireTime(size int, rate int64) float64 {
	return float64((size+EthernetOverhead)*8) / float64(rate)
}

func TestBottleneckHoldsItsRateWithEthernetOverhead(t *testing.T) {
	const rate = 100e6
	r := newRig(t, Config{AtoB: Dir{RateBps: rate, QueueFrames: 1 << 20}})
	// A train of mixed sizes, all offered at once: the bottleneck alone
	// spaces them.
	sizes := []int{1500, 40, 576, 1500, 1500, 52, 1000}
	var frames [][]byte
	want := 0.0
	for i := 0; i < 7000; i++ {
		p := sizes[i%len(sizes)] - 40
		frames = append(frames, data(uint32(i), p))
		want += wireTime(p+40, rate)
	}
	r.clk.AfterFunc(0, func() {
		for _, f := range frames {
			if _, err := send(r.w.A(), f); err != nil {
				t.Fatal(err)
			}
		}
	})
	r.drain()
	if len(r.b.got) != len(frames) {
		t.Fatalf("delivered %d of %d", len(r.b.got), len(frames))
	}
	got := r.b.got[len(r.b.got)-1].at.Seconds()
	if rel := math.Abs(got-want) / want; rel > 0.005 {
		t.Fatalf("train took %.6fs, want %.6fs at %v bit/s (%.2f%% off)", got, want, rate, 100*rel)
	}
	// Each frame leaves one serialisation after the one ahead of it.
	for i := 1; i < len(r.b.got); i++ {
		gap := (r.b.got[i].at - r.b.got[i-1].at).Seconds()
		w := wireTime(len(r.b.got[i].b), rate)
		if math.Abs(gap-w) > 1e-9 {
			t.Fatalf("frame %d spaced %.9fs after its predecessor, want %.9fs", i, gap, w)
		}
	}
	t.Logf("%d frames in %.6fs, configured %.6fs (%.4f%% off)", len(frames), got, want, 100*math.Abs(got-want)/want)
}

func TestDelayIsExactInVirtualTime(t *testing.T) {
	const rate = 1e9
	const delay = 7 * time.Millisecond
	r := newRig(t, Config{AtoB: Dir{RateBps: rate, Delay: delay}, BtoA: Dir{Delay: 3 * time.Millisecond}})
	var frames [][]byte
	for i := 0; i < 200; i++ {
		frames = append(frames, data(uint32(i), 100+i))
	}
	r.sendEvery(t, r.w.A(), time.Millisecond, frames)
	r.clk.AfterFunc(500*time.Microsecond, func() { send(r.w.B(), ack(9)) })
	r.drain()
	if len(r.b.got) != len(frames) {
		t.Fatalf("delivered %d of %d", len(r.b.got), len(frames))
	}
	for i, g := range r.b.got {
		ser := time.Duration((len(frames[i]) + EthernetOverhead) * 8) // ns at 1 Gbit/s
		if want := time.Duration(i)*time.Millisecond + ser + delay; g.at != want {
			t.Fatalf("frame %d arrived at %v, want %v", i, g.at, want)
		}
		if !bytes.Equal(g.b, frames[i]) || g.proto != header.IPv4ProtocolNumber {
			t.Fatalf("frame %d altered or wrong protocol %d", i, g.proto)
		}
	}
	if len(r.a.got) != 1 || r.a.got[0].at != 3500*time.Microsecond {
		t.Fatalf("reverse frame: %+v, want one at 3.5ms", r.a.got)
	}
}

// within4Sigma checks a binomial count against its expectation.
func within4Sigma(t *testing.T, what string, got, n int, p float64) {
	t.Helper()
	mean := float64(n) * p
	sigma := math.Sqrt(float64(n) * p * (1 - p))
	if math.Abs(float64(got)-mean) > 4*sigma {
		t.Fatalf("%s: %d of %d, want %.0f ± %.0f (4σ)", what, got, n, mean, 4*sigma)
	}
	t.Logf("%s: %d of %d (%.4f, configured %.4f)", what, got, n, float64(got)/float64(n), p)
}

func sendBurst(t *testing.T, r *rig, n, payload int) [][]byte {
	t.Helper()
	frames := make([][]byte, n)
	for i := range frames {
		frames[i] = data(uint32(i), payload)
	}
	r.sendEvery(t, r.w.A(), time.Microsecond, frames)
	r.drain()
	return frames
}

func TestRandomLossMatchesItsRate(t *testing.T) {
	const n, p = 20000, 0.03
	r := newRig(t, Config{AtoB: Dir{Loss: p}, Seed: 3})
	sendBurst(t, r, n, 10)
	s, _ := r.w.Stats()
	lost := n - len(r.b.got)
	if int(s.DropLoss) != lost {
		t.Fatalf("DropLoss %d, frames missing %d", s.DropLoss, lost)
	}
	within4Sigma(t, "lost", lost, n, p)
}

func TestBurstLossMatchesItsRateAndMeanBurst(t *testing.T) {
	const n, rate, burst = 100000, 0.05, 4.0
	r := newRig(t, Config{AtoB: Dir{Burst: BurstLoss(rate, burst)}, Seed: 5})
	sendBurst(t, r, n, 0)
	got := make([]bool, n)
	for _, g := range r.b.got {
		got[segID(g.b)] = true
	}
	lost, bursts := 0, 0
	for i := range got {
		if !got[i] {
			lost++
			if i == 0 || got[i-1] {
				bursts++
			}
		}
	}
	// Losses come in correlated runs, so the count varies more than a
	// binomial's; allow 15% of the rate.
	if lr := float64(lost) / n; math.Abs(lr-rate) > 0.15*rate {
		t.Fatalf("loss rate %.4f, want %.4f ± 15%%", lr, rate)
	}
	mean := float64(lost) / float64(bursts)
	if math.Abs(mean-burst) > 0.1*burst {
		t.Fatalf("mean burst %.2f frames, want %.1f ± 10%%", mean, burst)
	}
	s, _ := r.w.Stats()
	if int(s.DropBurst) != lost {
		t.Fatalf("DropBurst %d, lost %d", s.DropBurst, lost)
	}
	t.Logf("loss rate %.4f (configured %.2f), %d bursts, mean burst %.2f (configured %.1f)", float64(lost)/n, rate, bursts, mean, burst)
}

func TestDropTailQueueNeverExceedsItsBound(t *testing.T) {
	for _, tc := range []struct {
		name   string
		dir    Dir
		admit  int
		bytesQ bool
	}{
		{"bytes", Dir{RateBps: 10e6, QueueBytes: 20000}, 20000 / 1038, true},
		{"frames", Dir{RateBps: 10e6, QueueFrames: 7}, 7, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newRig(t, Config{AtoB: tc.dir})
			// One burst of 100 frames of 1000 bytes at once: exactly the
			// bound is admitted.
			r.clk.AfterFunc(0, func() {
				for i := 0; i < 100; i++ {
					send(r.w.A(), data(uint32(i), 1000-40))
				}
			})
			r.drain()
			s, _ := r.w.Stats()
			if len(r.b.got) != tc.admit || int(s.DropQueue) != 100-tc.admit {
				t.Fatalf("delivered %d dropped %d, want %d and %d", len(r.b.got), s.DropQueue, tc.admit, 100-tc.admit)
			}
			// Then offered load at twice the rate for a while: the queue
			// fills, drops, and its high-water mark stays within the bound.
			r2 := newRig(t, Config{AtoB: tc.dir, Seed: 9})
			var frames [][]byte
			for i := 0; i < 3000; i++ {
				frames = append(frames, data(uint32(i), 1000-40))
			}
			r2.sendEvery(t, r2.w.A(), 415*time.Microsecond, frames) // 1038 B per 415 µs ≈ 20 Mbit/s
			r2.drain()
			s2, _ := r2.w.Stats()
			if s2.DropQueue == 0 {
				t.Fatal("overload dropped nothing")
			}
			if tc.bytesQ && s2.QueueHighBytes > uint64(tc.dir.QueueBytes) {
				t.Fatalf("queue reached %d bytes, bound %d", s2.QueueHighBytes, tc.dir.QueueBytes)
			}
			if !tc.bytesQ && s2.QueueHighFrames > uint64(tc.dir.QueueFrames) {
				t.Fatalf("queue reached %d frames, bound %d", s2.QueueHighFrames, tc.dir.QueueFrames)
			}
			if s2.QueueHighFrames < uint64(tc.admit) {
				t.Fatalf("queue high-water %d frames: never full", s2.QueueHighFrames)
			}
			// Half of the offered load fits the rate.
			within := math.Abs(float64(s2.DeliveredFrames)/3000 - 0.5)
			if within > 0.02 {
				t.Fatalf("delivered %d of 3000 at twice the rate", s2.DeliveredFrames)
			}
		})
	}
}

func TestDuplicationAndCorruptionMatchTheirRates(t *testing.T) {
	const n, pd, pc = 20000, 0.04, 0.02
	r := newRig(t, Config{AtoB: Dir{Duplicate: pd, Corrupt: pc}, Seed: 11})
	frames := sendBurst(t, r, n, 200)
	dups := len(r.b.got) - n
	seen := make(map[uint32]int)
	corrupt := 0
	for _, g := range r.b.got {
		id := ipID(g.b)
		if seen[id]++; seen[id] == 2 {
			continue // count each original once for corruption
		}
		if bytes.Equal(g.b, frames[id]) {
			if !checksumsValid(g.b) {
				t.Fatal("an intact frame fails its checksum: the test's frames are wrong")
			}
			continue
		}
		diff := 0
		for i := range g.b {
			if g.b[i] != frames[id][i] {
				diff++
			}
		}
		if diff != 1 || checksumsValid(g.b) {
			t.Fatalf("corrupted frame %d: %d bytes differ, checksum valid %v", id, diff, checksumsValid(g.b))
		}
		corrupt++
	}
	s, _ := r.w.Stats()
	if int(s.Duplicated) != dups || int(s.Corrupted) != corrupt {
		t.Fatalf("stats dup %d corrupt %d, seen %d and %d", s.Duplicated, s.Corrupted, dups, corrupt)
	}
	within4Sigma(t, "duplicated", dups, n, pd)
	within4Sigma(t, "corrupted", corrupt, n, pc)
}

func TestBlackoutDropsExactlyInsideItsWindow(t *testing.T) {
	r := newRig(t, Config{AtoB: Dir{Delay: 5 * time.Millisecond,
		Blackouts: []Window{{100 * time.Millisecond, 200 * time.Millisecond}, {250 * time.Millisecond, 251 * time.Millisecond}}}})
	var frames [][]byte
	for i := 0; i < 300; i++ {
		frames = append(frames, data(uint32(i), 10))
	}
	r.sendEvery(t, r.w.A(), time.Millisecond, frames)
	r.drain()
	got := map[uint32]bool{}
	for _, g := range r.b.got {
		got[segID(g.b)] = true
	}
	for i := 0; i < 300; i++ {
		down := (i >= 100 && i < 200) || i == 250
		if got[uint32(i)] == down {
			t.Fatalf("frame sent at %dms: delivered %v, path down %v", i, got[uint32(i)], down)
		}
	}
	if s, _ := r.w.Stats(); s.DropBlackout != 101 {
		t.Fatalf("DropBlackout %d, want 101", s.DropBlackout)
	}
}

func TestJitterWithoutReorderKeepsOrderAndWithReorderDoesNot(t *testing.T) {
	for _, reorder := range []bool{false, true} {
		r := newRig(t, Config{AtoB: Dir{Delay: 2 * time.Millisecond, Jitter: 5 * time.Millisecond, Reorder: reorder}, Seed: 2})
		var frames [][]byte
		for i := 0; i < 5000; i++ {
			frames = append(frames, data(uint32(i), 10))
		}
		r.sendEvery(t, r.w.A(), 100*time.Microsecond, frames)
		r.drain()
		if len(r.b.got) != len(frames) {
			t.Fatalf("delivered %d", len(r.b.got))
		}
		inversions := 0
		minD, maxD := time.Hour, time.Duration(0)
		for i, g := range r.b.got {
			id := segID(g.b)
			if i > 0 && id < segID(r.b.got[i-1].b) {
				inversions++
			}
			d := g.at - time.Duration(id)*100*time.Microsecond
			minD, maxD = min(minD, d), max(maxD, d)
			if d < 2*time.Millisecond {
				t.Fatalf("frame %d arrived %v after sending, under the base delay", id, d)
			}
			if d >= 7*time.Millisecond {
				t.Fatalf("frame %d delayed %v, beyond delay+jitter", id, d)
			}
		}
		// Holding order makes a frame wait for the latest of those ahead,
		// which narrows the spread of delays but does not remove it.
		if span := maxD - minD; (reorder && span < 4*time.Millisecond) || span < time.Millisecond {
			t.Fatalf("reorder=%v: delays span only %v: no jitter", reorder, maxD-minD)
		}
		if !reorder && inversions != 0 {
			t.Fatalf("without reorder %d frames overtook their predecessor", inversions)
		}
		if reorder && inversions < 100 {
			t.Fatalf("with reorder only %d inversions", inversions)
		}
		t.Logf("reorder=%v: delays %v..%v, %d inversions", reorder, minD, maxD, inversions)
	}
}

func TestAckAggregationReleasesGroupsOfNAndAfterHold(t *testing.T) {
	const n = 4
	r := newRig(t, Config{
		AtoB: Dir{RateBps: 1e9, Delay: time.Millisecond},
		BtoA: Dir{RateBps: 1e9, Delay: time.Millisecond, AckAggSegments: n, AckAggHold: 20 * time.Millisecond},
	})
	// B acknowledges every data segment at once, as a stack would.
	r.b.onRx = func(x rx) { send(r.w.B(), ack(segID(x.b))) }
	var frames [][]byte
	for i := 0; i < 4*n+2; i++ {
		frames = append(frames, data(uint32(i), 1000))
	}
	r.sendEvery(t, r.w.A(), 50*time.Microsecond, frames)
	r.drain()
	if len(r.a.got) != len(frames) {
		t.Fatalf("A received %d ACKs, want %d", len(r.a.got), len(frames))
	}
	// Group the ACKs by how close together they arrive (back to back at
	// 1 Gbit/s is 624 ns apart).
	var groups []int
	for i, g := range r.a.got {
		if i == 0 || g.at-r.a.got[i-1].at > 10*time.Microsecond {
			groups = append(groups, 0)
		}
		groups[len(groups)-1]++
		if segID(g.b) != uint32(i) {
			t.Fatalf("ACK %d arrived out of order", i)
		}
	}
	want := []int{n, n, n, n, 2}
	if len(groups) != len(want) {
		t.Fatalf("ACK groups %v, want %v", groups, want)
	}
	for i := range want {
		if groups[i] != want[i] {
			t.Fatalf("ACK groups %v, want %v", groups, want)
		}
	}
	// The last two waited the hold: released 20 ms after the first of them
	// was held, at the data segment's arrival.
	last := r.a.got[len(r.a.got)-2]
	heldAt := r.b.got[4*n].at
	if d := last.at - heldAt; d < 20*time.Millisecond || d > 21*time.Millisecond+10*time.Microsecond {
		t.Fatalf("leftover ACKs released %v after being held, want 20 ms plus the path", d)
	}
	_, s := r.w.Stats()
	if s.AcksHeld != uint64(len(frames)) || s.AckReleases != 5 {
		t.Fatalf("held %d releases %d", s.AcksHeld, s.AckReleases)
	}
}

func TestAckAggregationPassesDataAndControlSegments(t *testing.T) {
	r := newRig(t, Config{BtoA: Dir{AckAggSegments: 10, AckAggHold: time.Second}})
	r.clk.AfterFunc(0, func() {
		send(r.w.B(), ack(1), ack(2))
		send(r.w.B(), seg(3, 0, header.TCPFlagSyn|header.TCPFlagAck))
		send(r.w.B(), ack(4))
		send(r.w.B(), data(5, 100))
	})
	r.clk.RunFor(time.Millisecond)
	var ids []uint32
	for _, g := range r.a.got {
		ids = append(ids, segID(g.b))
	}
	if len(ids) != 5 || ids[0] != 1 || ids[1] != 2 || ids[2] != 3 || ids[3] != 4 || ids[4] != 5 {
		t.Fatalf("delivered %v, want 1..5 in order with no wait: a SYN or data segment releases held ACKs ahead of itself", ids)
	}
}

func TestRingRefusesExactlyBeyondItsCreditAndNotifiesWhenSlotsFree(t *testing.T) {
	const ring = 8
	r := newRig(t, Config{AtoB: Dir{RateBps: 1e6, TxRing: ring}})
	cr := r.w.A().TxCredit()
	if cr.TxFree() != ring {
		t.Fatalf("TxFree %d at start, want %d", cr.TxFree(), ring)
	}
	var frames [][]byte
	for i := 0; i < ring+4; i++ {
		frames = append(frames, data(uint32(i), 1000-40))
	}
	n, err := send(r.w.A(), frames...)
	if n != ring {
		t.Fatalf("ring took %d, want %d", n, ring)
	}
	if _, ok := err.(*tcpip.ErrNoBufferSpace); !ok {
		t.Fatalf("error %v, want ErrNoBufferSpace", err)
	}
	if n, err := send(r.w.A(), frames[0]); n != 0 || err == nil {
		t.Fatalf("write to a full ring took %d, err %v", n, err)
	}
	s, _ := r.w.Stats()
	if s.DropRing != 5 || s.SentFrames != ring || cr.TxFree() != 0 {
		t.Fatalf("DropRing %d SentFrames %d TxFree %d, want 5, %d, 0", s.DropRing, s.SentFrames, cr.TxFree(), ring)
	}
	calls := [3]int{}
	var freeAt [3]int
	for i := range calls {
		i := i
		cancel := cr.NotifyTxFree(func() { calls[i]++; freeAt[i] = cr.TxFree() })
		if i == 1 {
			cancel()
			cancel()
		}
	}
	// The card serialises 1038 bytes at 1 Mbit/s: the first slot frees at
	// 8.304 ms.
	r.clk.RunFor(8303 * time.Microsecond)
	if calls != [3]int{} {
		t.Fatalf("waiters ran before a slot freed: %v", calls)
	}
	r.clk.RunFor(time.Microsecond)
	if calls != [3]int{1, 0, 1} || freeAt[0] != 1 || freeAt[2] != 1 {
		t.Fatalf("after the first slot freed: calls %v free %v, want [1 0 1] with one slot free", calls, freeAt)
	}
	r.drain()
	if calls != [3]int{1, 0, 1} {
		t.Fatalf("waiters ran again: %v", calls)
	}
	if cr.TxFree() != ring || len(r.b.got) != ring {
		t.Fatalf("after draining TxFree %d delivered %d", cr.TxFree(), len(r.b.got))
	}
	// With nothing in the ring, a waiter runs at the current instant.
	ran := false
	cr.NotifyTxFree(func() { ran = true })
	if ran {
		t.Fatal("waiter ran inside NotifyTxFree")
	}
	r.clk.Step()
	if !ran {
		t.Fatal("waiter on an empty ring never ran")
	}
}

func TestRingWithoutLineRateFreesAtTheNextClockEvent(t *testing.T) {
	r := newRig(t, Config{AtoB: Dir{TxRing: 4}})
	var frames [][]byte
	for i := 0; i < 6; i++ {
		frames = append(frames, data(uint32(i), 10))
	}
	if n, err := send(r.w.A(), frames...); n != 4 || err == nil {
		t.Fatalf("took %d err %v, want 4 and ErrNoBufferSpace", n, err)
	}
	if len(r.b.got) != 0 {
		t.Fatal("delivered inside WritePackets")
	}
	r.clk.RunFor(0)
	if f := r.w.A().TxCredit().TxFree(); f != 4 || len(r.b.got) != 4 {
		t.Fatalf("after the instant: TxFree %d delivered %d", f, len(r.b.got))
	}
}

// scripted runs a fixed two-way exchange over an impaired wire.
func scripted(t *testing.T, seed int64) (*rig, [32]byte) {
	d := Dir{RateBps: 50e6, LineRateBps: 100e6, Delay: 3 * time.Millisecond, Jitter: time.Millisecond, Reorder: true,
		Loss: 0.05, Burst: BurstLoss(0.02, 3), Duplicate: 0.02, Corrupt: 0.02, QueueFrames: 40, TxRing: 32,
		Blackouts: []Window{{40 * time.Millisecond, 45 * time.Millisecond}}}
	back := d
	back.AckAggSegments, back.AckAggHold = 5, 2*time.Millisecond
	r := newRig(t, Config{AtoB: d, BtoA: back, Seed: seed})
	r.b.onRx = func(x rx) { send(r.w.B(), ack(segID(x.b))) }
	var frames [][]byte
	for i := 0; i < 3000; i++ {
		frames = append(frames, data(uint32(i), 100+i%1300))
	}
	r.sendEveryMayFail(t, r.w.A(), 30*time.Microsecond, frames, true)
	r.drain()
	return r, r.w.TraceHash()
}

func lostIDs(r *rig) []uint32 {
	got := map[uint32]bool{}
	for _, g := range r.b.got {
		got[segID(g.b)] = true
	}
	var lost []uint32
	for i := uint32(0); i < 3000; i++ {
		if !got[i] {
			lost = append(lost, i)
		}
	}
	return lost
}

func TestSameSeedGivesIdenticalTraceAndOtherSeedAnotherLossPattern(t *testing.T) {
	r1, h1 := scripted(t, 42)
	r2, h2 := scripted(t, 42)
	if h1 != h2 {
		t.Fatal("two runs with one seed gave different traces")
	}
	s1, _ := r1.w.Stats()
	s2, _ := r2.w.Stats()
	if s1 != s2 {
		t.Fatalf("stats differ: %+v vs %+v", s1, s2)
	}
	if s1.DropLoss == 0 || s1.DropBurst == 0 || s1.DropRing == 0 || s1.DropQueue == 0 || s1.Corrupted == 0 || s1.Duplicated == 0 || s1.DropBlackout == 0 {
		t.Fatalf("the script does not exercise every impairment: %+v", s1)
	}
	r3, h3 := scripted(t, 43)
	if h3 == h1 {
		t.Fatal("a different seed gave the same trace")
	}
	l1, l3 := lostIDs(r1), lostIDs(r3)
	if len(l1) == len(l3) && func() bool {
		for i := range l1 {
			if l1[i] != l3[i] {
				return false
			}
		}
		return true
	}() {
		t.Fatal("a different seed lost the same frames")
	}
	t.Logf("seed 42: %+v; trace %x", s1, h1[:8])
}

func TestNewRejectsInvalidConfigNamingTheField(t *testing.T) {
	for _, tc := range []struct {
		field string
		cfg   Config
	}{
		{"AtoB.RateBps", Config{AtoB: Dir{RateBps: -1}}},
		{"BtoA.Loss", Config{BtoA: Dir{Loss: 1.5}}},
		{"AtoB.Loss", Config{AtoB: Dir{Loss: math.NaN()}}},
		{"AtoB.Delay", Config{AtoB: Dir{Delay: -time.Millisecond}}},
		{"BtoA.Jitter", Config{BtoA: Dir{Jitter: -1}}},
		{"AtoB.QueueBytes", Config{AtoB: Dir{QueueBytes: -5}}},
		{"AtoB.QueueFrames", Config{AtoB: Dir{QueueFrames: -5}}},
		{"AtoB.TxRing", Config{AtoB: Dir{TxRing: -1}}},
		{"AtoB.Duplicate", Config{AtoB: Dir{Duplicate: 2}}},
		{"BtoA.Corrupt", Config{BtoA: Dir{Corrupt: -0.1}}},
		{"AtoB.Burst.BadToGood", Config{AtoB: Dir{Burst: &GilbertElliott{BadToGood: 3}}}},
		{"AtoB.Blackouts[1]", Config{AtoB: Dir{Blackouts: []Window{{0, 1}, {5, 2}}}}},
		{"BtoA.AckAggSegments", Config{BtoA: Dir{AckAggSegments: -1}}},
		{"BtoA.AckAggHold", Config{BtoA: Dir{AckAggHold: time.Millisecond}}},
		{"BtoA.AckAggGap", Config{BtoA: Dir{AckAggGap: time.Millisecond}}},
		{"BtoA.AckAggGap", Config{BtoA: Dir{AckAggSegments: 2, AckAggGap: -1}}},
		{"AtoB.JitterPeriod", Config{AtoB: Dir{JitterPeriod: time.Millisecond}}},
		{"AtoB.JitterPeriod", Config{AtoB: Dir{Jitter: time.Millisecond, JitterPeriod: -1}}},
		{"AtoB.LineRateBps", Config{AtoB: Dir{LineRateBps: -1}}},
		{"MTU", Config{MTU: 20}},
		{"MTU", Config{MTU: 1 << 20}},
	} {
		_, err := New(tcpip.NewStdClock(), tc.cfg)
		if !errors.Is(err, ErrBadConfig) || !strings.Contains(err.Error(), tc.field) {
			t.Errorf("%s: error %v, want ErrBadConfig naming the field", tc.field, err)
		}
	}
}

func TestPresetsBuildAndUnknownNamesListTheValidOnes(t *testing.T) {
	for _, name := range []string{"t14", "pilot", "pilot-2", "pilot-5", "clean-lan"} {
		cfg, err := Preset(name)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if _, err := New(tcpip.NewStdClock(), cfg); err != nil {
			t.Fatalf("%s: New: %v", name, err)
		}
	}
	t14, _ := Preset("t14")
	if t14.AtoB.RateBps != 1e9 || t14.AtoB.Delay+t14.BtoA.Delay != 2*time.Millisecond || t14.BtoA.AckAggSegments != 34 || t14.AtoB.TxRing != 256 {
		t.Fatalf("t14 is not the T14's path: %+v", t14)
	}
	if p, _ := Preset("pilot-5"); p.AtoB.Loss != 0.05 || p.BtoA.Delay != 50*time.Millisecond {
		t.Fatalf("pilot-5: %+v", p)
	}
	_, err := Preset("t15")
	if !errors.Is(err, ErrUnknownPreset) {
		t.Fatalf("unknown preset: %v", err)
	}
	for _, n := range PresetNames() {
		if !strings.Contains(err.Error(), n) {
			t.Fatalf("error %q does not list %q", err, n)
		}
	}
}

func TestCountersMirrorStats(t *testing.T) {
	r := newRig(t, Config{AtoB: Dir{Loss: 0.5, RateBps: 1e8}, Seed: 1})
	reg := counters.NewRegistry()
	send(r.w.A(), data(0, 10)) // counted before registration
	r.w.Counters(reg, "")
	for i := 1; i < 100; i++ {
		send(r.w.A(), data(uint32(i), 10))
	}
	r.drain()
	s, _ := r.w.Stats()
	for name, want := range map[string]uint64{
		"nic.wire.a2b.sent.frames":             s.SentFrames,
		"nic.wire.a2b.delivered.frames":        s.DeliveredFrames,
		"nic.wire.a2b.drop.loss":               s.DropLoss,
		"nic.wire.a2b.queue.high-water.frames": s.QueueHighFrames,
		"nic.wire.b2a.sent.frames":             0,
		"nic.wire.a2b.delivered.bytes":         s.DeliveredBytes,
	} {
		c := reg.Lookup(name)
		if c == nil {
			t.Fatalf("%s not registered", name)
		}
		if c.Load() != want {
			t.Fatalf("%s = %d, want %d", name, c.Load(), want)
		}
	}
	if s.SentFrames != 100 || s.DropLoss == 0 || s.DeliveredFrames+s.DropLoss != 100 {
		t.Fatalf("stats %+v", s)
	}
	if err := r.w.RegisterCounters(reg, "Bad Prefix"); err == nil {
		t.Fatal("a bad prefix was accepted")
	}
}

func TestDeliveryNeverHappensInsideWritePackets(t *testing.T) {
	r := newRig(t, Config{})
	send(r.w.A(), data(1, 10))
	if len(r.b.got) != 0 {
		t.Fatal("a zero-delay wire delivered synchronously")
	}
	r.clk.Step()
	if len(r.b.got) != 1 {
		t.Fatal("not delivered at the current instant")
	}
	// Detached endpoints drop and count.
	r.w.B().Attach(nil)
	send(r.w.A(), data(2, 10))
	r.drain()
	if s, _ := r.w.Stats(); s.DropDetached != 1 {
		t.Fatalf("DropDetached %d", s.DropDetached)
	}
	// Oversize frames are refused and counted.
	if _, err := send(r.w.A(), data(3, 1500)); err == nil {
		t.Fatal("frame over the MTU accepted")
	}
}

func TestAckCoalescingSendsOneStretchAckPerGroup(t *testing.T) {
	const n = 4
	r := newRig(t, Config{
		AtoB: Dir{RateBps: 1e9, Delay: time.Millisecond},
		BtoA: Dir{RateBps: 1e9, Delay: time.Millisecond, AckAggSegments: n, AckAggHold: 20 * time.Millisecond, AckAggCoalesce: true},
	})
	r.b.onRx = func(x rx) { send(r.w.B(), ack(segID(x.b))) }
	var frames [][]byte
	for i := 0; i < 4*n+2; i++ {
		frames = append(frames, data(uint32(i), 1000))
	}
	r.sendEvery(t, r.w.A(), 50*time.Microsecond, frames)
	r.drain()
	// One ACK per group: the newest, acknowledging the group's last segment.
	var got []uint32
	for _, g := range r.a.got {
		got = append(got, segID(g.b))
	}
	want := []uint32{n - 1, 2*n - 1, 3*n - 1, 4*n - 1, 4*n + 1}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("A received ACKs %v, want %v", got, want)
	}
	_, s := r.w.Stats()
	if s.AcksCoalesced != uint64(len(frames)-len(want)) || s.DropLoss != 0 {
		t.Fatalf("coalesced %d (want %d), lost %d", s.AcksCoalesced, len(frames)-len(want), s.DropLoss)
	}
}

func TestAckCoalescingKeepsOneAckPerFlow(t *testing.T) {
	a := ack(1)
	b := ack(2)
	other := ack(3)
	other[header.IPv4MinimumSize+1]++ // another source port: another flow
	got, _ := coalesce([][]byte{a, other, b}, nil, func([]byte) {})
	if len(got) != 2 || segID(got[0]) != 3 || segID(got[1]) != 2 {
		t.Fatalf("coalesce kept %d frames, want the other flow's ACK then the newest of the first", len(got))
	}
}

func TestNoTraceHashLeavesTheHashZeroAndTheTrafficAlone(t *testing.T) {
	run := func(noHash bool) ([32]byte, int) {
		r := newRig(t, Config{AtoB: Dir{RateBps: 1e9, Delay: time.Millisecond, Loss: 0.1}, Seed: 7, NoTraceHash: noHash})
		var frames [][]byte
		for i := 0; i < 200; i++ {
			frames = append(frames, data(uint32(i), 1000))
		}
		r.sendEvery(t, r.w.A(), 20*time.Microsecond, frames)
		r.drain()
		return r.w.TraceHash(), len(r.b.got)
	}
	h1, n1 := run(false)
	h2, n2 := run(true)
	if h2 != ([32]byte{}) || h1 == ([32]byte{}) {
		t.Fatalf("hash with NoTraceHash %x, without %x: want zeros only with it", h2, h1)
	}
	if n1 != n2 {
		t.Fatalf("delivered %d frames hashing, %d not: the option changed the traffic", n1, n2)
	}
}
