package tcp

import (
	"testing"
	"time"

	"gvisor.dev/gvisor/pkg/tcpip"
	"gvisor.dev/gvisor/pkg/tcpip/faketime"
)

// countingClock counts how often an endpoint's timers move the clock's
// timers (AfterFunc and Reset).
type countingClock struct {
	*faketime.ManualClock
	moves int
}

func (c *countingClock) AfterFunc(d time.Duration, f func()) tcpip.Timer {
	c.moves++
	return countingTimer{c.ManualClock.AfterFunc(d, f), c}
}

type countingTimer struct {
	tcpip.Timer
	c *countingClock
}

func (t countingTimer) Reset(d time.Duration) {
	t.c.moves++
	t.Timer.Reset(d)
}

// The retransmission timer is re-armed on every ACK, each time later: a
// second of ACKs a millisecond apart with a 200 ms timeout must move the
// clock's timer about once per timeout, not once per ACK, and the timer
// must still fire once, at the last deadline. Stopped, it must not fire.
func TestRearmingLaterMovesTheClocksTimerOncePerTimeout(t *testing.T) {
	clk := &countingClock{ManualClock: faketime.NewManualClock()}
	e := &endpoint{p: &protocol{clock: clk}}
	fired := []time.Duration{}
	e.tRtx = timer{e: e, fn: func(e *endpoint) { fired = append(fired, e.now()) }}
	const rto = 200 * time.Millisecond
	for i := 0; i < 1000; i++ {
		e.mu.Lock()
		e.tRtx.arm(rto)
		e.mu.Unlock()
		clk.Advance(time.Millisecond)
	}
	if clk.moves > 10 {
		t.Fatalf("the clock's timer moved %d times in 1000 re-arms, want about one per %v", clk.moves, rto)
	}
	if len(fired) != 0 {
		t.Fatalf("fired at %v while re-armed", fired)
	}
	clk.Advance(rto)
	if want := 999*time.Millisecond + rto; len(fired) != 1 || fired[0] != want {
		t.Fatalf("fired at %v, want once at %v", fired, want)
	}
	// An earlier deadline moves the clock's timer; a stop silences it.
	e.mu.Lock()
	early := e.now() + 10*time.Millisecond
	e.tRtx.arm(time.Second)
	e.tRtx.arm(10 * time.Millisecond)
	e.mu.Unlock()
	clk.Advance(10 * time.Millisecond)
	e.mu.Lock()
	e.tRtx.arm(time.Second)
	e.tRtx.stop()
	e.mu.Unlock()
	clk.Advance(2 * time.Second)
	if len(fired) != 2 || fired[1] != early {
		t.Fatalf("fired at %v, want a second time 10 ms later and not after the stop", fired)
	}
}
