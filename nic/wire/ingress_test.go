package wire

import (
	"sync/atomic"
	"testing"
	"time"

	"gvisor.dev/gvisor/pkg/tcpip"
)

// returns reports whether f returns within 10 s (a bound for a hang, not a
// timing claim).
func returns(f func()) bool {
	done := make(chan struct{})
	go func() {
		f()
		close(done)
	}()
	select {
	case <-done:
		return true
	case <-time.After(10 * time.Second):
		return false
	}
}

// TestRealTimeWritersStayOffTheWiresLock: on a real-time wire, a write, a
// look at the TX credit and a credit registration all return while another
// thread holds the wire's lock, so a writer the host preempts can never
// hold the releasing thread up; the frame written then crosses the path.
func TestRealTimeWritersStayOffTheWiresLock(t *testing.T) {
	w := newRealTimeWire(t, Config{AtoB: Dir{Delay: time.Millisecond, RateBps: 1e9, TxRing: 8}, BtoA: Dir{Delay: time.Millisecond}, Seed: 1})
	var got frameLog
	w.B().AttachSink(&got)
	credit := w.A().TxCredit()
	w.mu.Lock()
	var werr tcpip.Error
	free := 0
	ok := returns(func() {
		werr = w.A().WriteFrame(data(7, 100))
		free = credit.TxFree()
		credit.NotifyTxFree(func() {})
	})
	w.mu.Unlock()
	if !ok {
		t.Fatal("a write on a real-time wire waited for the wire's lock")
	}
	if werr != nil {
		t.Fatal(werr)
	}
	if free != 7 {
		t.Errorf("TxFree %d after one write to a ring of 8, want 7", free)
	}
	if !waitFor(func() bool { return got.count() == 1 }) {
		t.Fatalf("%d frames reached B, want 1", got.count())
	}
}

// TestRealTimeReleaserSkipsAnIngressQueueItFindsHeld: a writer holding its
// direction's ingress queue (preempted inside it) delays only its own
// frames: the other direction's frames keep crossing, and once the queue
// is free the held direction's frames cross too, in order.
func TestRealTimeReleaserSkipsAnIngressQueueItFindsHeld(t *testing.T) {
	w := newRealTimeWire(t, Config{AtoB: Dir{Delay: time.Millisecond}, BtoA: Dir{Delay: time.Millisecond}, Seed: 1})
	var atB, atA frameLog
	w.B().AttachSink(&atB)
	w.A().AttachSink(&atA)
	const n = 10
	for i := uint32(0); i < n; i++ {
		if terr := w.A().WriteFrame(data(i, 100)); terr != nil {
			t.Fatal(terr)
		}
	}
	in := w.dirs[0].in
	in.mu.Lock()
	held := true
	defer func() {
		if held {
			in.mu.Unlock()
		}
	}()
	for i := uint32(0); i < n; i++ {
		if terr := w.B().WriteFrame(data(100+i, 100)); terr != nil {
			t.Fatal(terr)
		}
	}
	if !waitFor(func() bool { return atA.count() == n }) {
		t.Fatalf("%d of %d frames reached A while A's ingress queue was held", atA.count(), n)
	}
	in.mu.Unlock()
	held = false
	if !waitFor(func() bool { return atB.count() == n }) {
		t.Fatalf("%d of %d frames reached B once its ingress queue was free", atB.count(), n)
	}
	atB.inOrder(t, "B")
}

// TestRealTimeCreditWaiterRunsOffTheReleaser: a TX credit waiter (the
// sending stack's output, under its own locks) runs on the wire's credit
// goroutine: one that blocks does not stop the wire handing frames over.
func TestRealTimeCreditWaiterRunsOffTheReleaser(t *testing.T) {
	w := newRealTimeWire(t, Config{AtoB: Dir{Delay: time.Millisecond, RateBps: 1e9, TxRing: 1}, BtoA: Dir{Delay: time.Millisecond}, Seed: 1})
	var atA frameLog
	w.A().AttachSink(&atA)
	entered, release := make(chan struct{}), make(chan struct{})
	defer close(release)
	w.A().TxCredit().NotifyTxFree(func() {
		close(entered)
		<-release
	})
	select {
	case <-entered:
	case <-time.After(10 * time.Second):
		t.Fatal("a waiter registered on an empty ring did not run")
	}
	const n = 10
	for i := uint32(0); i < n; i++ {
		if terr := w.B().WriteFrame(data(i, 100)); terr != nil {
			t.Fatal(terr)
		}
	}
	if !waitFor(func() bool { return atA.count() == n }) {
		t.Fatalf("%d of %d frames crossed while a credit waiter was blocked", atA.count(), n)
	}
}

// TestRealTimeFullRingRefusesAtOnceAndRunsWaitersAsSlotsFree: on a
// real-time wire the TX ring refuses a write the instant it is full, counts
// it, and a waiter runs once the card frees a slot, a cancelled one never;
// every accepted frame crosses, in order.
func TestRealTimeFullRingRefusesAtOnceAndRunsWaitersAsSlotsFree(t *testing.T) {
	// 1 Mbit/s: a 140-byte frame holds the card 1.1 ms, so the writes below
	// all come while the first is on the card.
	w := newRealTimeWire(t, Config{AtoB: Dir{Delay: time.Millisecond, RateBps: 1e6, TxRing: 4}, BtoA: Dir{Delay: time.Millisecond}, Seed: 1})
	var got frameLog
	w.B().AttachSink(&got)
	credit := w.A().TxCredit()
	var refused int
	for i := uint32(0); i < 6; i++ {
		switch terr := w.A().WriteFrame(data(i, 100)); terr.(type) {
		case nil:
		case *tcpip.ErrNoBufferSpace:
			refused++
		default:
			t.Fatal(terr)
		}
	}
	if refused != 2 {
		t.Fatalf("a ring of 4 refused %d of 6 writes, want 2", refused)
	}
	if f := credit.TxFree(); f != 0 {
		t.Errorf("TxFree %d with the ring full, want 0", f)
	}
	if ab, _ := w.Stats(); ab.DropRing != 2 {
		t.Errorf("drop.ring %d, want 2", ab.DropRing)
	}
	var cancelledRan atomic.Bool
	cancel := credit.NotifyTxFree(func() { cancelledRan.Store(true) })
	cancel()
	ran := make(chan int, 1)
	credit.NotifyTxFree(func() { ran <- credit.TxFree() })
	select {
	case f := <-ran:
		if f < 1 {
			t.Errorf("the waiter ran with TxFree %d, want a free slot", f)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the waiter did not run as the card freed slots")
	}
	if cancelledRan.Load() {
		t.Error("a cancelled waiter ran")
	}
	if !waitFor(func() bool { return got.count() == 4 }) {
		t.Fatalf("%d of 4 accepted frames reached B", got.count())
	}
	got.inOrder(t, "B")
}
