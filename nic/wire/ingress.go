package wire

import (
	"sync"
	"sync/atomic"

	"gvisor.dev/gvisor/pkg/tcpip"
	"gvisor.dev/gvisor/pkg/tcpip/stack"
)

// Real time: what other threads hand the releasing thread. In virtual time a
// writer admits its frames itself, under the wire's lock. In real time no
// thread but the releaser takes that lock on a frame's way: a writer (a TUN
// bridge's reader, a stack's WritePackets) copies its frames into this
// direction's ingress queue, under the queue's own lock, and the releaser
// admits them at its next pass, at the times they were written.
//
// The reason is measured (osbench -arms Linux on t14, 1 Gbit/s, 2 cores,
// per row of 3 connections): with writers and input goroutines taking the
// wire's lock, the releaser waited over 100 µs for it 2,000-2,600 times a
// row, 0.4-0.8 s in all, and 70% of the frames handed over more than
// 0.5 ms late came right after such a wait; the row's lateness p99 was
// 0.9-1.3 ms. The releaser runs SCHED_FIFO: waking from a nap, it preempts
// whatever ran on its core, sometimes a thread inside the lock, which then
// cannot run there until the releaser sleeps again; spinning for the lock
// instead of parking removed the waits over 100 µs but not the lateness.
// With the writers and the input goroutines off the lock (ingress here,
// input.go), the same rows ran at p99 0.13-0.16 ms.
//
// A writer never waits for the releaser, and the releaser never waits for
// a writer: it takes the queue with TryLock and, finding it held, takes it
// on its next pass (at most rtNapMax later, or the spin before an event).
// The frames keep the times they were written, so their schedule on the
// path is the one they would have had; the card and the bottleneck place
// them from those times.
type ingress struct {
	mu      sync.Mutex
	frames  []rxFrame // at: the wire time the frame was written
	waiters []*waiter // NotifyTxFree's, in real time

	// slots counts the TX ring slots writers have taken: the frames queued
	// here and those the ring holds (ringUsed, the releaser's). A writer
	// takes one before queueing a frame, the releaser gives it back as the
	// card frees the frame's slot, so a full ring refuses a write at once,
	// as in virtual time.
	slots atomic.Int32
	// notify asks the releaser to run the waiters now: the ring was empty
	// when one registered, so no slot will free to run it.
	notify atomic.Bool
}

// reserve takes a TX ring slot for a frame about to be queued, or reports
// false if the ring is full.
func (d *direction) reserve() bool {
	size := int32(d.ringSize)
	if size == 0 {
		return true
	}
	for {
		n := d.in.slots.Load()
		// control:wire-rt-ring-unbounded
		if n >= size {
			return false
		}
		if d.in.slots.CompareAndSwap(n, n+1) {
			return true
		}
	}
}

// enqueue hands frames written at wire time at to the releaser.
func (d *direction) enqueue(frames []rxFrame) {
	d.in.mu.Lock()
	d.in.frames = append(d.in.frames, frames...)
	d.in.mu.Unlock()
	d.w.rt.poke()
}

// writeFrameRT is WriteFrame in real time.
func (e *Endpoint) writeFrameRT(b []byte) tcpip.Error {
	d := e.out
	if !d.reserve() {
		e.w.mu.Lock()
		d.refuseLocked(e.w.now(), b)
		e.w.mu.Unlock()
		return &tcpip.ErrNoBufferSpace{}
	}
	// control:wire-rt-writer-takes-wire-lock
	f := e.w.rtBuf(len(b))
	copy(f, b)
	d.enqueue([]rxFrame{{f, e.w.now()}})
	return nil
}

// writePacketsRT is WritePackets in real time: each packet takes a ring
// slot and is copied, then all are queued at once. The refusals, rare, take
// the wire's lock to be counted.
func (e *Endpoint) writePacketsRT(pkts stack.PacketBufferList, mtu uint32) (int, tcpip.Error) {
	w, d := e.w, e.out
	now := w.now()
	all := pkts.AsSlice()
	// A send opportunity's batch fits on the stack; a larger one spills.
	var local [64]rxFrame
	frames := local[:0]
	var err tcpip.Error
	for i, pkt := range all {
		if pkt.Size() > int(mtu) {
			w.mu.Lock()
			d.oversizeLocked()
			w.mu.Unlock()
			if i == 0 {
				err = &tcpip.ErrMessageTooLong{}
			}
			break
		}
		if !d.reserve() {
			w.mu.Lock()
			d.refuseAllLocked(now, all[i:])
			w.mu.Unlock()
			err = &tcpip.ErrNoBufferSpace{}
			break
		}
		frames = append(frames, rxFrame{flatten(w.rtBuf(pkt.Size())[:0], pkt), now})
	}
	if len(frames) > 0 {
		d.enqueue(frames)
	}
	return len(frames), err
}

// slotFreedLocked gives back the ring slot of a frame the card is done
// with.
func (d *direction) slotFreedLocked() {
	d.ringUsed--
	if d.in != nil {
		d.in.slots.Add(-1)
		d.slotFreed = true
	}
}

// takeIngressLocked admits what the writers queued since the last pass and,
// once a slot has freed or a waiter found the ring empty, hands the credit
// waiters to the credit goroutine. A writer holding the queue this instant
// leaves both to the next pass.
func (w *Wire) takeIngressLocked() {
	for _, d := range w.dirs {
		in := d.in
		// control:wire-rt-ingress-taken-blocking
		if !in.mu.TryLock() {
			continue
		}
		w.inScratch, in.frames = in.frames, w.inScratch[:0]
		var fs []func()
		if d.slotFreed || in.notify.Swap(false) {
			d.slotFreed = false
			for _, wt := range in.waiters {
				// control:wire-rt-ring-cancel
				if wt.done.CompareAndSwap(false, true) {
					fs = append(fs, wt.f)
				}
			}
			clear(in.waiters)
			in.waiters = in.waiters[:0]
		}
		in.mu.Unlock()
		for _, f := range w.inScratch {
			if !d.writeLocked(f.b, f.at) {
				w.putBufLocked(f.b)
			}
		}
		clear(w.inScratch)
		// control:wire-rt-credit-on-releaser
		if len(fs) > 0 {
			w.rt.credits.put(fs)
		}
	}
}

// notifyTxFreeRT is NotifyTxFree in real time: f waits in the ingress
// queue for the releaser, which hands it to the credit goroutine.
func (d *direction) notifyTxFreeRT(f func()) (cancel func()) {
	wt := &waiter{f: f}
	d.in.mu.Lock()
	d.in.waiters = append(d.in.waiters, wt)
	d.in.mu.Unlock()
	// Registered first, read second: a slot the releaser frees after this
	// read finds the waiter; one freed before it leaves the count at 0.
	if d.in.slots.Load() == 0 {
		d.in.notify.Store(true)
	}
	d.w.rt.poke()
	return func() { wt.done.Store(true) }
}

// creditRunner runs TX credit waiters in real time, on a goroutine of its
// own: a waiter is the sending stack's work (its TCP's output under its
// endpoint's lock), as a card's TX-done interrupt is its host's, and the
// releaser must not wait on a stack's locks.
type creditRunner struct {
	mu   sync.Mutex
	fs   []func()
	wake chan struct{}
}

func (c *creditRunner) put(fs []func()) {
	c.mu.Lock()
	c.fs = append(c.fs, fs...)
	c.mu.Unlock()
	select {
	case c.wake <- struct{}{}:
	default:
	}
}

// run calls the waiters handed over, in order, until stop closes.
func (c *creditRunner) run(stop <-chan struct{}) {
	var fs []func()
	for {
		select {
		case <-c.wake:
		case <-stop:
			return
		}
		for {
			c.mu.Lock()
			fs, c.fs = c.fs, fs[:0]
			c.mu.Unlock()
			if len(fs) == 0 {
				break
			}
			for _, f := range fs {
				f()
			}
			clear(fs)
		}
	}
}

// rtBuf is a frame buffer of length n in real time, where the input
// goroutines, not the releaser, are done with most frames: recycled through
// a sync.Pool rather than the wire's free list, which its lock guards.
func (w *Wire) rtBuf(n int) []byte {
	if p, ok := w.rtBufs.Get().(*[]byte); ok && cap(*p) >= n {
		return (*p)[:n]
	}
	return make([]byte, n, max(n, int(w.mtu)))
}

// rtPut recycles a real-time frame buffer nothing holds any more.
func (w *Wire) rtPut(b []byte) {
	if cap(b) >= int(w.mtu) {
		w.rtBufs.Put(&b)
	}
}
