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
	made  int // AfterFunc calls alone
}

func (c *countingClock) AfterFunc(d time.Duration, f func()) tcpip.Timer {
	c.moves++
	c.made++
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

// The protocol's endpoints share one clock timer: arming five kinds on one,
// as a short connection that closes first does (retransmission, delayed
// ACK, pacing, linger, TIME-WAIT), and two on another, the second's earlier
// than any of the first's, makes one, and each timer still fires at its own
// deadline, once, re-arms from a callback included; stopTimers silences an
// endpoint's timers and leaves the other's.
func TestEndpointTimersShareOneClockTimer(t *testing.T) {
	clk := &countingClock{ManualClock: faketime.NewManualClock()}
	p := &protocol{clock: clk}
	e, f := &endpoint{p: p}, &endpoint{p: p}
	clk.Advance(time.Second) // protocol time 0 is no deadline's
	base := e.now()
	fired := map[string][]time.Duration{}
	kind := func(name string, then func(e *endpoint)) func(*endpoint) {
		return func(e *endpoint) {
			fired[name] = append(fired[name], e.now()-base)
			if then != nil {
				then(e)
			}
		}
	}
	e.tRtx = timer{e: e, fn: kind("rtx", nil)}
	e.tDelack = timer{e: e, fn: kind("delack", nil)}
	// The pacing callback re-arms the retransmission timer, as output does.
	e.tPace = timer{e: e, fn: kind("pace", func(e *endpoint) { e.tRtx.arm(300 * time.Millisecond) })}
	e.tLinger = timer{e: e, fn: kind("linger", nil)}
	e.tWait = timer{e: e, fn: kind("wait", nil)}
	f.tRtx = timer{e: f, fn: kind("f.rtx", nil)}
	f.tDelack = timer{e: f, fn: kind("f.delack", nil)}
	const ms = time.Millisecond
	e.mu.Lock()
	e.tWait.arm(900 * ms)
	e.tLinger.arm(800 * ms)
	e.tRtx.arm(200 * ms)
	e.tDelack.arm(40 * ms)
	e.mu.Unlock()
	f.mu.Lock()
	f.tRtx.arm(500 * ms)
	f.tDelack.arm(30 * ms)
	f.mu.Unlock()
	e.mu.Lock()
	e.tPace.arm(0)
	e.mu.Unlock()
	clk.Advance(2 * time.Second)
	want := map[string][]time.Duration{"pace": {0}, "f.delack": {30 * ms}, "delack": {40 * ms}, "rtx": {300 * ms}, "f.rtx": {500 * ms}, "linger": {800 * ms}, "wait": {900 * ms}}
	for name, w := range want {
		if got := fired[name]; len(got) != len(w) || got[0] != w[0] {
			t.Errorf("%s fired at %v, want %v", name, got, w)
		}
	}
	if clk.made != 1 {
		t.Errorf("%d clock timers made for two endpoints' seven timers, want 1", clk.made)
	}
	e.mu.Lock()
	e.tRtx.arm(100 * ms)
	e.tDelack.arm(10 * ms)
	e.stopTimers()
	e.mu.Unlock()
	f.mu.Lock()
	f.tRtx.arm(100 * ms)
	f.mu.Unlock()
	clk.Advance(time.Second)
	if len(fired["rtx"]) != 1 || len(fired["delack"]) != 1 {
		t.Errorf("fired after stopTimers: rtx %v, delack %v", fired["rtx"], fired["delack"])
	}
	if got := fired["f.rtx"]; len(got) != 2 || got[1] != 2100*ms {
		t.Errorf("the other endpoint's re-armed timer fired at %v, want again at 2.1s", got)
	}
}
