package tcp

import (
	"time"

	"gvisor.dev/gvisor/pkg/tcpip"
)

// timer is one of an endpoint's timers on the stack's clock. Its callback
// runs with the endpoint locked; a fire that raced a re-arm or a stop is
// recognised by its deadline and ignored.
type timer struct {
	e        *endpoint
	t        tcpip.Timer
	deadline time.Duration // protocol time it is due; 0 = stopped
	fn       func(*endpoint)
}

func (e *endpoint) initTimers() {
	e.tRtx = timer{e: e, fn: (*endpoint).onRetransmitTimer}
	e.tReo = timer{e: e, fn: (*endpoint).onReorderTimer}
	e.tDelack = timer{e: e, fn: (*endpoint).onDelackTimer}
	e.tKeep = timer{e: e, fn: (*endpoint).onKeepaliveTimer}
	e.tPersist = timer{e: e, fn: (*endpoint).onPersistTimer}
	e.tWait = timer{e: e, fn: (*endpoint).onTimeWaitTimer}
	e.tPace = timer{e: e, fn: (*endpoint).onPaceTimer}
	e.tLinger = timer{e: e, fn: (*endpoint).onLingerTimer}
}

// arm sets the timer to fire d from now (d <= 0 fires at once, still from
// the clock).
func (t *timer) arm(d time.Duration) {
	if d < 0 {
		d = 0
	}
	now := t.e.now()
	t.deadline = now + d
	if t.deadline == 0 {
		t.deadline = 1
	}
	if t.t == nil {
		t.t = t.e.p.clock.AfterFunc(d, t.fire)
		return
	}
	t.t.Reset(d)
}

func (t *timer) armed() bool { return t.deadline != 0 }

func (t *timer) stop() {
	if t.deadline == 0 {
		return
	}
	t.deadline = 0
	if t.t != nil {
		t.t.Stop()
	}
}

func (t *timer) fire() {
	e := t.e
	e.mu.Lock()
	if t.deadline == 0 {
		e.mu.Unlock()
		return
	}
	if now := e.now(); now < t.deadline {
		t.t.Reset(t.deadline - now)
		e.mu.Unlock()
		return
	}
	t.deadline = 0
	t.fn(e)
	e.unlock()
}

func (e *endpoint) stopTimers() {
	for _, t := range []*timer{&e.tRtx, &e.tReo, &e.tDelack, &e.tKeep, &e.tPersist, &e.tWait, &e.tPace, &e.tLinger} {
		t.stop()
	}
}
