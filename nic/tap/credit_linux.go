//go:build linux

package tap

import (
	"math"
	"sync"
	"sync/atomic"
	"time"

	"github.com/netramp/netramp/nic"
)

// TxRetryBudget bounds how long one WritePackets call retries writes the
// device refused with EAGAIN, shared by all its frames, as nic/i219 bounds
// its wait for TX descriptors; after it a frame is dropped and counted.
const (
	TxRetryBudget = 500 * time.Microsecond
	txRetryStep   = 50 * time.Microsecond
	// writableWait is how long one check for room blocks; the notifier
	// checks again until the device has room or is closed.
	writableWait = time.Millisecond
)

// txPath is the endpoint's way to the device, injectable so a test can make
// the device full without a kernel.
type txPath struct {
	writev       func([][]byte) (int, error) // one non-blocking attempt
	sleep        func(time.Duration)
	waitWritable func() (bool, error) // whether the device has room now; an error once it is closed

	full    atomic.Bool // the last frame was dropped for want of room
	mu      sync.Mutex
	waiters map[int]func()
	nextW   int
	waking  bool
}

var _ nic.CreditLink = (*Endpoint)(nil)

// TxCredit implements nic.CreditLink: the device either takes a frame now
// (a TUN/TAP write has no ring of its own to count) or has refused one past
// the retry budget and has no room until it reports writable.
func (e *Endpoint) TxCredit() nic.Credit { return credit{e} }

type credit struct{ e *Endpoint }

// TxFree implements nic.Credit: 0 after a frame was dropped for want of
// room, until a write succeeds or the device reports room; else unbounded.
func (c credit) TxFree() int {
	if c.e.tx.full.Load() {
		return 0
	}
	return math.MaxInt32
}

// NotifyTxFree implements nic.Credit. f runs once on the endpoint's
// notifier goroutine, with no lock held, once the device has room (at once
// if it has not been found full).
func (c credit) NotifyTxFree(f func()) (cancel func()) {
	t := &c.e.tx
	t.mu.Lock()
	if t.waiters == nil {
		t.waiters = map[int]func(){}
	}
	id := t.nextW
	t.nextW++
	t.waiters[id] = f
	start := !t.waking
	t.waking = true
	t.mu.Unlock()
	if start {
		go c.e.notifyWhenWritable()
	}
	return func() {
		t.mu.Lock()
		delete(t.waiters, id)
		t.mu.Unlock()
	}
}

// notifyWhenWritable waits, in bounded checks, until the device has room or
// the endpoint is closed, then runs the waiters.
func (e *Endpoint) notifyWhenWritable() {
	t := &e.tx
	for t.full.Load() && !e.isClosed() {
		room, err := t.waitWritable()
		if err != nil {
			break
		}
		if room {
			t.full.Store(false)
		}
	}
	t.mu.Lock()
	fs := make([]func(), 0, len(t.waiters))
	for id, f := range t.waiters {
		fs = append(fs, f)
		delete(t.waiters, id)
	}
	t.waking = false
	t.mu.Unlock()
	for _, f := range fs {
		f()
	}
}

func (e *Endpoint) isClosed() bool {
	e.closeMu.Lock()
	defer e.closeMu.Unlock()
	return e.closed
}
