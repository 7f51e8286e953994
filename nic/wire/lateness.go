package wire

import (
	"fmt"
	"math"
	"math/bits"
	"time"
)

// Lateness summarises how late a real-time wire handed frames over against
// their schedule. A row whose P99 is a sizeable part of its RTT measured the
// machine's load, not the path. A virtual-time wire is never late: Frames
// stays 0.
type Lateness struct {
	Frames         uint64
	P50, P99, Max  time.Duration
	Mean           time.Duration
	Over100us      uint64 // frames handed over more than 100 µs late
	Over1ms        uint64
	SchedFIFO      bool // the releasing thread ran SCHED_FIFO
	Batches, Spins uint64
	Yields         uint64 // times the releasing thread yielded to the Go scheduler
}

func (l Lateness) String() string {
	return fmt.Sprintf("%d frames, lateness p50 ≤%v p99 ≤%v max %v mean %v, >100µs %d, >1ms %d",
		l.Frames, l.P50, l.P99, l.Max.Round(time.Microsecond), l.Mean.Round(time.Microsecond), l.Over100us, l.Over1ms)
}

// Late reports whether the 99th percentile lateness exceeds limit.
func (l Lateness) Late(limit time.Duration) bool { return l.P99 > limit }

// nBuckets: four buckets per octave of microseconds (quarter-octave
// resolution, within 19%), from 0 µs up to about 2^34 µs.
const nBuckets = 4 * 36

// latHist is a fixed histogram: recording allocates nothing.
type latHist struct {
	n, over100, over1ms uint64
	sum, max            time.Duration
	b                   [nBuckets]uint64
}

func (h *latHist) record(late time.Duration) {
	late = max(late, 0)
	h.b[bucketOf(late.Microseconds())]++
	h.n++
	h.sum += late
	h.max = max(h.max, late)
	if late > 100*time.Microsecond {
		h.over100++
	}
	if late > time.Millisecond {
		h.over1ms++
	}
}

// merge adds o's frames to h.
func (h *latHist) merge(o *latHist) {
	h.n += o.n
	h.over100 += o.over100
	h.over1ms += o.over1ms
	h.sum += o.sum
	h.max = max(h.max, o.max)
	for i, c := range o.b {
		h.b[i] += c
	}
}

func (h *latHist) summary() Lateness {
	l := Lateness{Frames: h.n, Max: h.max, Over100us: h.over100, Over1ms: h.over1ms}
	if h.n > 0 {
		l.Mean = h.sum / time.Duration(h.n)
		l.P50, l.P99 = h.quantile(0.50), h.quantile(0.99)
	}
	return l
}

// quantile returns the upper bound of the bucket holding q, never above the
// maximum seen (plus the microsecond the buckets round to).
func (h *latHist) quantile(q float64) time.Duration {
	want := uint64(math.Ceil(q * float64(h.n)))
	var acc uint64
	for i, c := range h.b {
		acc += c
		if acc >= want {
			return min(bucketTop(i), h.max.Round(time.Microsecond)+time.Microsecond)
		}
	}
	return h.max
}

// bucketOf returns the histogram bucket of a lateness of us microseconds.
func bucketOf(us int64) int {
	if us < 4 {
		return int(max(us, 0))
	}
	e := bits.Len64(uint64(us)) - 1
	sub := int(uint64(us)>>(e-2)) & 3
	return min(4*(e-1)+sub, nBuckets-1)
}

// bucketTop returns the smallest lateness above bucket i.
func bucketTop(i int) time.Duration {
	if i < 4 {
		return time.Duration(i+1) * time.Microsecond
	}
	e, sub := i/4+1, i%4
	return time.Duration((4+sub+1)<<(e-2)) * time.Microsecond
}
