//go:build linux

package linuxpeer

import (
	"runtime"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// card models the sending NIC in front of the path: a TX ring of a fixed
// number of slots that drains at the line rate. A frame holds its slot from
// the write until its last bit leaves the card, and then enters the path's
// bottleneck. A full ring refuses writes, as a full qdisc does, so the
// sender's TCP sees card stops (the condition the half-window rule is about).
type card struct {
	slots   int
	lineBps float64

	mu       sync.Mutex
	departs  []time.Time // card departure of each frame in the ring, oldest first
	nextFree time.Time
	waiters  map[int]func()
	nextID   int
	wake     chan struct{}
	stop     chan struct{}
	done     chan struct{}
}

func newCard(slots int, lineBps int64) *card {
	c := &card{slots: slots, lineBps: float64(lineBps), waiters: make(map[int]func()),
		wake: make(chan struct{}, 1), stop: make(chan struct{}), done: make(chan struct{})}
	go c.notifier()
	return c
}

// reapLocked drops the frames that have left the card by now.
func (c *card) reapLocked(now time.Time) {
	i := 0
	for i < len(c.departs) && !c.departs[i].After(now) {
		i++
	}
	if i > 0 {
		c.departs = append(c.departs[:0], c.departs[i:]...)
	}
}

// take reserves a slot for a frame of n wire bytes and returns when the
// frame leaves the card, or false if the ring is full.
func (c *card) take(n int) (time.Time, bool) {
	now := time.Now()
	c.mu.Lock()
	defer c.mu.Unlock()
	c.reapLocked(now)
	if len(c.departs) >= c.slots {
		return time.Time{}, false
	}
	start := now
	if c.nextFree.After(now) {
		start = c.nextFree
	}
	d := start
	if c.lineBps > 0 {
		d = start.Add(time.Duration(float64(n) * 8e9 / c.lineBps))
	}
	c.nextFree = d
	c.departs = append(c.departs, d)
	return d, true
}

// TxFree implements nic.Credit.
func (c *card) TxFree() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.reapLocked(time.Now())
	return c.slots - len(c.departs)
}

// NotifyTxFree implements nic.Credit: f runs once on the card's notifier
// goroutine when the oldest frame in the ring leaves it (at once, but not
// from inside this call, if the ring is empty).
func (c *card) NotifyTxFree(f func()) (cancel func()) {
	c.mu.Lock()
	id := c.nextID
	c.nextID++
	c.waiters[id] = f
	c.mu.Unlock()
	select {
	case c.wake <- struct{}{}:
	default:
	}
	return func() {
		c.mu.Lock()
		delete(c.waiters, id)
		c.mu.Unlock()
	}
}

// notifier sleeps until the oldest frame leaves the card whenever someone
// waits for room, with the same precise sleep as the emulator.
func (c *card) notifier() {
	defer close(c.done)
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	unix.Prctl(unix.PR_SET_TIMERSLACK, 1, 0, 0, 0)
	for {
		select {
		case <-c.wake:
		case <-c.stop:
			return
		}
		for {
			c.mu.Lock()
			if len(c.waiters) == 0 {
				c.mu.Unlock()
				break
			}
			c.reapLocked(time.Now())
			var until time.Time
			if len(c.departs) > 0 {
				until = c.departs[0]
			}
			c.mu.Unlock()
			if d := time.Until(until); d > 0 {
				ts := unix.NsecToTimespec(int64(d))
				unix.Nanosleep(&ts, nil)
			}
			c.mu.Lock()
			ws := make([]func(), 0, len(c.waiters))
			for id, f := range c.waiters {
				ws = append(ws, f)
				delete(c.waiters, id)
			}
			c.mu.Unlock()
			for _, f := range ws {
				f() // no lock held: f usually writes to the link again
			}
			select {
			case <-c.stop:
				return
			default:
			}
		}
	}
}

func (c *card) close() {
	select {
	case <-c.stop:
	default:
		close(c.stop)
	}
	<-c.done
}
