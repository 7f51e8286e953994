// Package vclock is a deterministic tcpip.Clock: time stands still until the
// test advances it, and timers fire one at a time on the goroutine that drives
// the clock, in (deadline, creation order) order.
//
// A transfer between two stacks joined by nic/wire then runs inside RunUntil
// with no goroutine of its own, so the same configuration and seed give the
// same event sequence on any machine at any load. For the same code in real
// time, pass tcpip.NewStdClock() wherever a *Clock would go.
package vclock

import (
	"container/heap"
	"sync"
	"time"

	"gvisor.dev/gvisor/pkg/tcpip"
)

// monoBase offsets NowMonotonic from zero, so a reading taken at the clock's
// start is never the zero MonotonicTime, which callers may treat as "unset".
const monoBase = time.Hour

// Clock is a virtual tcpip.Clock. AfterFunc, Stop and Reset are safe from any
// goroutine; callbacks run only inside Step, RunUntil and RunFor, on the
// caller's goroutine, one at a time and with no lock held.
type Clock struct {
	mu      sync.Mutex
	start   time.Time
	elapsed time.Duration
	seq     uint64
	timers  timerHeap
}

var _ tcpip.Clock = (*Clock)(nil)

// New returns a clock whose Now is start and whose Elapsed is zero.
func New(start time.Time) *Clock {
	return &Clock{start: start}
}

// Now returns the virtual wall time: start plus Elapsed.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.start.Add(c.elapsed)
}

// NowMonotonic returns a monotonic reading that advances exactly with Now.
func (c *Clock) NowMonotonic() tcpip.MonotonicTime {
	c.mu.Lock()
	defer c.mu.Unlock()
	return tcpip.MonotonicTime{}.Add(monoBase + c.elapsed)
}

// Elapsed returns the virtual time since New.
func (c *Clock) Elapsed() time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.elapsed
}

// AfterFunc schedules f to run d from now. A d <= 0 schedules f at the current
// instant: it still goes through the queue and runs in the driver, after every
// timer already due at this instant, never synchronously here.
func (c *Clock) AfterFunc(d time.Duration, f func()) tcpip.Timer {
	t := &Timer{c: c, f: f, index: -1}
	// control:vclock-zero-delay
	c.mu.Lock()
	c.scheduleLocked(t, d)
	c.mu.Unlock()
	return t
}

func (c *Clock) scheduleLocked(t *Timer, d time.Duration) {
	if d < 0 {
		d = 0
	}
	t.when = c.elapsed + d
	t.seq = c.seq
	c.seq++
	heap.Push(&c.timers, t)
}

// Pending returns the number of timers scheduled and not yet fired or stopped.
func (c *Clock) Pending() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.timers)
}

// Next returns the virtual time (as Elapsed would read it) of the next timer,
// and false if none is pending.
func (c *Clock) Next() (time.Duration, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.timers) == 0 {
		return 0, false
	}
	return c.timers[0].when, true
}

// Step advances time to the earliest pending timer and runs it. It returns
// false, leaving time unchanged, if no timer is pending.
func (c *Clock) Step() bool {
	return c.stepBefore(0, false)
}

// stepBefore fires the next timer if one is pending and, when bounded, due at
// or before limit; it reports whether one fired.
func (c *Clock) stepBefore(limit time.Duration, bounded bool) bool {
	c.mu.Lock()
	if len(c.timers) == 0 || (bounded && c.timers[0].when > limit) {
		c.mu.Unlock()
		return false
	}
	t := heap.Pop(&c.timers).(*Timer)
	if t.when > c.elapsed {
		c.elapsed = t.when
	}
	f := t.f
	c.mu.Unlock()
	f()
	return true
}

// RunUntil fires timers in order until cond() holds (checked before the first
// and after each timer), or the next timer lies beyond horizon (an Elapsed
// reading; time then advances to horizon), or no timer is pending (time stays).
// It returns cond().
func (c *Clock) RunUntil(cond func() bool, horizon time.Duration) bool {
	for {
		if cond() {
			return true
		}
		if c.stepBefore(horizon, true) {
			continue
		}
		c.mu.Lock()
		if len(c.timers) > 0 && c.elapsed < horizon {
			c.elapsed = horizon
		}
		c.mu.Unlock()
		return cond()
	}
}

// RunFor fires every timer due within d of now, including those they
// schedule within that span, then sets time to now+d.
func (c *Clock) RunFor(d time.Duration) {
	if d < 0 {
		d = 0
	}
	end := c.Elapsed() + d
	for c.stepBefore(end, true) {
	}
	c.mu.Lock()
	if c.elapsed < end {
		c.elapsed = end
	}
	c.mu.Unlock()
}

// Timer is a pending call on a Clock; it implements tcpip.Timer.
type Timer struct {
	c     *Clock
	f     func()
	when  time.Duration
	seq   uint64
	index int // position in the heap, -1 when not pending
}

var _ tcpip.Timer = (*Timer)(nil)

// Stop cancels the timer. It returns true if the timer was pending, false if
// it had already fired or been stopped.
func (t *Timer) Stop() bool {
	t.c.mu.Lock()
	defer t.c.mu.Unlock()
	if t.index < 0 {
		return false
	}
	heap.Remove(&t.c.timers, t.index)
	return true
}

// Reset schedules the timer to fire d from now, whether it was pending,
// stopped or already fired. A reset timer is ordered after every timer
// created or reset before it with the same deadline.
func (t *Timer) Reset(d time.Duration) {
	t.c.mu.Lock()
	defer t.c.mu.Unlock()
	if t.index >= 0 {
		heap.Remove(&t.c.timers, t.index)
	}
	t.c.scheduleLocked(t, d)
}

// timerHeap is a min-heap by (when, seq).
type timerHeap []*Timer

func (h timerHeap) Len() int { return len(h) }
func (h timerHeap) Less(i, j int) bool {
	if h[i].when != h[j].when {
		return h[i].when < h[j].when
	}
	// control:vclock-order
	return h[i].seq < h[j].seq
}
func (h timerHeap) Swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].index = i
	h[j].index = j
}
func (h *timerHeap) Push(x any) {
	t := x.(*Timer)
	t.index = len(*h)
	*h = append(*h, t)
}
func (h *timerHeap) Pop() any {
	old := *h
	n := len(old)
	t := old[n-1]
	old[n-1] = nil
	t.index = -1
	*h = old[:n-1]
	return t
}
