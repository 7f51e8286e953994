// Package autotune sizes a receive buffer by dynamic right-sizing: once per
// round trip it measures how much the application read, and grows the buffer
// (and so the advertised window) to twice that, times the square of the
// growth since the round before (at most 2, slow start's doubling), so that
// a sender doubling its window per round trip in slow start is never held
// back by the receiver. It never shrinks (shrinking would retract a window already
// advertised, RFC 9293 §3.8.6.2.2) and never exceeds the configured maximum.
package autotune

import "time"

// Tuner holds one connection's measurement. Not safe for concurrent use.
type Tuner struct {
	buf, max  int
	start     time.Duration // start of the current measurement round
	started   bool
	read      int // bytes read in the current round
	lastRound int // bytes read in the previous complete round
}

// New returns a tuner whose buffer starts at initial and may grow to max.
func New(initial, max int) *Tuner {
	if initial < 0 {
		initial = 0
	}
	if max < initial {
		max = initial
	}
	return &Tuner{buf: initial, max: max}
}

// Buf is the current buffer size.
func (t *Tuner) Buf() int { return t.buf }

// Max is the cap.
func (t *Tuner) Max() int { return t.max }

// Done reports whether the buffer has reached the cap: the tuner never
// shrinks it, so no read can change it any more, and a caller may stop
// reading the clock for OnRead.
func (t *Tuner) Done() bool {
	// control:tcpinternal-autotune-done-below-cap
	return t.buf >= t.max
}

// OnRead records n bytes read by the application at now. rttEstimate is the
// receiver's estimate of the round trip (from timestamps, or the time
// between window-advancing segments); with no estimate (<= 0) nothing is
// measured. At the end of each round it returns the new buffer size and
// whether it grew.
func (t *Tuner) OnRead(now time.Duration, n int, rttEstimate time.Duration) (newBuf int, changed bool) {
	if n > 0 {
		t.read += n
	}
	if rttEstimate <= 0 {
		return t.buf, false
	}
	if !t.started {
		t.started, t.start = true, now
		return t.buf, false
	}
	if now-t.start < rttEstimate {
		return t.buf, false
	}
	copied := t.read
	t.read = 0
	t.start = now
	// Twice copied leaves room for a round of recovery and for reads that
	// lag. A growing sender needs more: the window set now goes out on the
	// next round's ACKs, and the sender fills it in the round after, with
	// r² of this round in flight if it grew by r (at most 2, slow start's
	// doubling). So twice that. Twice copied plus twice the growth (3·copied
	// at r = 2) held slow start back from the fourth round on at 100 Mbit/s,
	// 100 ms; 4·copied, r² with no cushion, still stopped it once a round
	// on the bytes an ACK leaves unread.
	target := 2 * copied
	// control:tcpinternal-autotune-no-growth-anticipation
	if t.lastRound > 0 && copied > t.lastRound {
		// control:hosttests-rcv-window-behind-slow-start
		r := min(float64(copied)/float64(t.lastRound), 2)
		target = int(float64(target) * r * r)
	}
	t.lastRound = copied
	if target > t.max {
		target = t.max
	}
	if target > t.buf {
		t.buf = target
		return t.buf, true
	}
	return t.buf, false
}
