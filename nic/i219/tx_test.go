package i219_test

import (
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/netramp/netramp/nic/i219"
	"github.com/netramp/netramp/nic/i219/fake"
)

func counter(ep *i219.Endpoint, name string) uint64 { return ep.Counters().Lookup(name).Load() }

// TestFullRingWaitsAtMostTheBudgetThenDrops fills the TX ring while the
// link is down (the card holds the frames), then writes a batch of three:
// the batch waits 500 µs in all, not per frame, and drops all three.
func TestFullRingWaitsAtMostTheBudgetThenDrops(t *testing.T) {
	dev, ep := open(t, fake.Options{LinkDown: true}, i219.Config{TXDescriptors: 8})
	if got := ep.TxCredit().TxFree(); got != 7 {
		t.Fatalf("TxFree = %d on an empty 8-slot ring, want 7", got)
	}
	if n := writeFrames(t, ep, frames(7, 60)); n != 7 {
		t.Fatalf("queued %d of 7", n)
	}
	if ep.TxCredit().TxFree() != 0 {
		t.Fatal("ring not full")
	}
	t0 := dev.Clk.Now()
	n := writeFrames(t, ep, frames(3, 60))
	waited := dev.Clk.Now().Sub(t0)
	if n != 0 {
		t.Fatalf("queued %d frames into a full ring", n)
	}
	if waited > i219.TxRetryBudget {
		t.Fatalf("batch waited %v, budget is %v per batch", waited, i219.TxRetryBudget)
	}
	if waited < i219.TxRetryBudget {
		t.Fatalf("batch waited only %v, want the whole %v budget spent retrying", waited, i219.TxRetryBudget)
	}
	if d, f, r := counter(ep, "nic.tx.drops"), counter(ep, "nic.tx.ring-full"), counter(ep, "nic.tx.retries"); d != 3 || f != 3 || r != 10 {
		t.Fatalf("drops %d ring-full %d retries %d, want 3 3 10", d, f, r)
	}
}

// TestReclaimWakesCreditWaiters: when the card finishes, the poll reclaims
// the slots and calls the waiters registered with NotifyTxFree, once.
func TestReclaimWakesCreditWaiters(t *testing.T) {
	dev, ep := open(t, fake.Options{LinkDown: true}, i219.Config{TXDescriptors: 8})
	writeFrames(t, ep, frames(7, 100))
	var calls atomic.Int32
	cr := ep.TxCredit()
	cr.NotifyTxFree(func() { calls.Add(1) })
	cancelled := cr.NotifyTxFree(func() { t.Error("cancelled waiter called") })
	cancelled()
	cancelled()
	ep.Poll()
	if calls.Load() != 0 {
		t.Fatal("waiter called before any descriptor was reclaimed")
	}
	dev.SetCable(true)
	ep.Poll()
	if calls.Load() != 1 {
		t.Fatalf("waiter called %d times, want 1", calls.Load())
	}
	if cr.TxFree() != 7 {
		t.Fatalf("TxFree = %d after reclaim, want 7", cr.TxFree())
	}
	if got := len(dev.Sent()); got != 7 {
		t.Fatalf("card sent %d frames, want 7", got)
	}
	if counter(ep, "nic.tx.frames") != 7 || counter(ep, "nic.tx.bytes") != 700 {
		t.Fatalf("tx counters %d frames %d bytes", counter(ep, "nic.tx.frames"), counter(ep, "nic.tx.bytes"))
	}
	ep.Poll()
	if calls.Load() != 1 {
		t.Fatal("waiter called twice")
	}
}

// hookClock runs a hook on each short sleep (the retry steps).
type hookClock struct {
	*fake.Clock
	onShort func(n int)
	n       int
}

func (c *hookClock) Sleep(d time.Duration) {
	c.Clock.Sleep(d)
	if d < time.Millisecond && c.onShort != nil {
		c.n++
		c.onShort(c.n)
	}
}

// TestRingFreesDuringRetryQueuesTheFrame: a slot freed within the budget
// (here after the third 50 µs step) takes the frame; nothing is dropped.
func TestRingFreesDuringRetryQueuesTheFrame(t *testing.T) {
	dev := fake.New(fake.Options{LinkDown: true})
	clk := &hookClock{Clock: dev.Clk}
	p := dev.Platform()
	p.Clock = clk
	ep, err := i219.Open(p, i219.Config{TXDescriptors: 8, ManualPoll: true})
	if err != nil {
		t.Fatal(err)
	}
	defer ep.Close()
	writeFrames(t, ep, frames(7, 60))
	clk.onShort = func(n int) {
		if n == 3 {
			dev.SetCable(true)
		}
	}
	if n := writeFrames(t, ep, frames(1, 60)); n != 1 {
		t.Fatalf("queued %d, want the frame queued once the ring drained", n)
	}
	if d, r := counter(ep, "nic.tx.drops"), counter(ep, "nic.tx.retries"); d != 0 || r != 3 {
		t.Fatalf("drops %d retries %d, want 0 and 3", d, r)
	}
}

func TestTooLongFrameDroppedAndCounted(t *testing.T) {
	dev, ep := open(t, fake.Options{}, i219.Config{})
	n := writeFrames(t, ep, frames(1, 1515))
	if n != 0 || counter(ep, "nic.tx.too-long") != 1 || counter(ep, "nic.tx.drops") != 1 {
		t.Fatalf("queued %d; too-long %d drops %d", n, counter(ep, "nic.tx.too-long"), counter(ep, "nic.tx.drops"))
	}
	if writeFrames(t, ep, frames(1, 1514)) != 1 || len(dev.Sent()) != 1 {
		t.Fatal("a full-size frame was not sent")
	}
}

// TestTxHangResetsTheUnit: TDH stalls with work pending and the link up;
// after the hang timeout the watchdog counts a hang, resets, and TX works
// again.
func TestTxHangResetsTheUnit(t *testing.T) {
	dev, ep := open(t, fake.Options{}, i219.Config{TXDescriptors: 16})
	dev.StallTX(true)
	writeFrames(t, ep, frames(3, 60))
	for i := 0; i < 30 && counter(ep, "nic.tx.hangs") == 0; i++ {
		dev.Clk.Advance(200 * time.Millisecond)
		ep.Poll()
	}
	if counter(ep, "nic.tx.hangs") != 1 {
		t.Fatalf("hangs = %d after 6 s of a stalled TDH", counter(ep, "nic.tx.hangs"))
	}
	if counter(ep, "nic.tx.drops") != 3 {
		t.Fatalf("drops = %d, want the 3 stuck frames", counter(ep, "nic.tx.drops"))
	}
	dev.StallTX(false)
	dev.Sent()
	if writeFrames(t, ep, frames(2, 60)) != 2 || len(dev.Sent()) != 2 {
		t.Fatal("TX does not work after the reset")
	}
	if ep.TxCredit().TxFree() < 13 {
		t.Fatalf("TxFree %d after reset", ep.TxCredit().TxFree())
	}
}

func TestNoHangDeclaredWhileLinkIsDown(t *testing.T) {
	_, ep := open(t, fake.Options{LinkDown: true}, i219.Config{})
	writeFrames(t, ep, frames(3, 60))
	for i := 0; i < 30; i++ {
		ep.Poll()
	}
	if counter(ep, "nic.tx.hangs") != 0 {
		t.Fatal("a held queue with no link was taken for a hang")
	}
}

// TestCloseWhileWritingTouchesNoRegisterAfterRelease: writers racing Close
// either queue, or drop and count, but never touch the card once the
// platform is released.
func TestCloseWhileWritingTouchesNoRegisterAfterRelease(t *testing.T) {
	dev := fake.New(fake.Options{LinkDown: true})
	ep, err := i219.Open(dev.Platform(), i219.Config{TXDescriptors: 8, PollInterval: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	for w := 0; w < 2; w++ {
		go func() {
			defer func() { done <- struct{}{} }()
			for i := 0; i < 50; i++ {
				l := frames(2, 60)
				ep.WritePackets(l)
				l.DecRef()
			}
		}()
	}
	time.Sleep(time.Millisecond)
	ep.Close()
	ep.Wait()
	<-done
	<-done
	if v := dev.ViolationsSoFar(); len(v) > 0 {
		t.Fatalf("violations: %v", v)
	}
}

// TestWritePacketsOnlyWritesTheTail: the transmit path touches one register,
// once per batch, and reads none (no read-modify-write of anything).
func TestWritePacketsOnlyWritesTheTail(t *testing.T) {
	dev, ep := open(t, fake.Options{}, i219.Config{})
	dev.ClearTrace()
	if n := writeFrames(t, ep, frames(5, 60)); n != 5 {
		t.Fatalf("queued %d of 5", n)
	}
	tr := dev.Trace()
	if len(tr) != 1 || !tr[0].Write || tr[0].Off != fake.TDT || tr[0].Val != 5 {
		t.Fatalf("register accesses for one batch: %v, want one write of TDT=5", tr)
	}
	if len(dev.Sent()) != 5 {
		t.Fatal("frames not sent")
	}
}

// TestRingWrapsManyTimes pushes 1000 frames through an 8-slot ring, reaping
// between batches: every frame is sent once, in order, none dropped.
func TestRingWrapsManyTimes(t *testing.T) {
	dev, ep := open(t, fake.Options{}, i219.Config{TXDescriptors: 8})
	var got int
	for i := 0; i < 1000; i += 5 {
		if n := writeFrames(t, ep, frames(5, 64)); n != 5 {
			t.Fatalf("batch %d: queued %d", i/5, n)
		}
		ep.Poll()
		got += len(dev.Sent())
	}
	if got != 1000 || counter(ep, "nic.tx.frames") != 1000 || counter(ep, "nic.tx.drops") != 0 {
		t.Fatalf("sent %d, counted %d, dropped %d", got, counter(ep, "nic.tx.frames"), counter(ep, "nic.tx.drops"))
	}
}

// TestFailedHangResetReportedAndFramesDropped: when the reset after a TX
// hang cannot take the semaphore, Err says so and later frames are counted
// drops, not writes to a card in an unknown state.
func TestFailedHangResetReportedAndFramesDropped(t *testing.T) {
	dev, ep := open(t, fake.Options{}, i219.Config{})
	dev.StallTX(true)
	writeFrames(t, ep, frames(1, 60))
	dev.MEGrabSWFlag(1 << 30)
	for i := 0; i < 30 && ep.Err() == nil; i++ {
		dev.Clk.Advance(200 * time.Millisecond)
		ep.Poll()
	}
	if !errors.Is(ep.Err(), i219.ErrSemaphore) {
		t.Fatalf("Err() = %v, want ErrSemaphore", ep.Err())
	}
	drops := counter(ep, "nic.tx.drops")
	if n := writeFrames(t, ep, frames(2, 60)); n != 0 || counter(ep, "nic.tx.drops") != drops+2 {
		t.Fatalf("queued %d on a failed card; drops %d -> %d", n, drops, counter(ep, "nic.tx.drops"))
	}
}

// longHookClock runs a hook on each sleep of a millisecond or more (the
// register-settling waits of a reset).
type longHookClock struct {
	*fake.Clock
	onLong func()
}

func (c *longHookClock) Sleep(d time.Duration) {
	c.Clock.Sleep(d)
	if d >= time.Millisecond && c.onLong != nil {
		c.onLong()
	}
}

// TestWriteDuringUnitResetDropsInsteadOfWaiting: while the watchdog's reset
// holds the rings (tens of milliseconds), a writer gets a counted drop at
// once and TxFree answers 0 without waiting.
func TestWriteDuringUnitResetDropsInsteadOfWaiting(t *testing.T) {
	dev := fake.New(fake.Options{})
	clk := &longHookClock{Clock: dev.Clk}
	p := dev.Platform()
	p.Clock = clk
	ep, err := i219.Open(p, i219.Config{ManualPoll: true})
	if err != nil {
		t.Fatal(err)
	}
	defer ep.Close()
	dev.StallTX(true)
	writeFrames(t, ep, frames(1, 60))
	type result struct{ n, free int }
	done := make(chan result, 1)
	clk.onLong = func() {
		clk.onLong = nil
		go func() {
			n := writeFrames(t, ep, frames(2, 60))
			done <- result{n, ep.TxCredit().TxFree()}
		}()
		select {
		case r := <-done:
			done <- r
		case <-time.After(5 * time.Second):
			t.Error("writer blocked behind the unit reset")
		}
	}
	for i := 0; i < 30 && counter(ep, "nic.tx.hangs") == 0; i++ {
		dev.Clk.Advance(200 * time.Millisecond)
		ep.Poll()
	}
	if counter(ep, "nic.tx.hangs") != 1 {
		t.Fatal("no hang detected")
	}
	r := <-done
	if r.n != 0 || r.free != 0 {
		t.Fatalf("during the reset: queued %d, TxFree %d; want 0 and 0", r.n, r.free)
	}
	if got := counter(ep, "nic.tx.drops"); got != 3 { // 1 stuck + 2 refused
		t.Fatalf("drops %d, want 3", got)
	}
}

// TestWaiterRegisteredWithRoomIsCalledByTheNextPoll: a waiter registered
// after the ring drained (nothing left to reclaim) is still called.
func TestWaiterRegisteredWithRoomIsCalledByTheNextPoll(t *testing.T) {
	_, ep := open(t, fake.Options{}, i219.Config{})
	writeFrames(t, ep, frames(3, 60))
	ep.Poll() // everything sent and reclaimed
	called := 0
	ep.TxCredit().NotifyTxFree(func() { called++ })
	if called != 0 {
		t.Fatal("waiter called inside NotifyTxFree")
	}
	ep.Poll()
	if called != 1 {
		t.Fatalf("waiter called %d times by the next poll, want 1", called)
	}
}
