package vtest

import (
	"sync"

	"gvisor.dev/gvisor/pkg/tcpip"
)

// pumpGate defers a pump to the clock's current instant, at most one pending
// at a time, so waiter notifications that arrive inside a pump (the endpoint
// notifying during Read or Write) never re-enter it. Its own mutex guards
// only the two flags, so such a notification cannot deadlock.
type pumpGate struct {
	mu      sync.Mutex
	pending bool
	stopped bool // no more pumps
}

// kick schedules pump unless one is pending or the gate is stopped.
func (g *pumpGate) kick(clk tcpip.Clock, pump func()) {
	g.mu.Lock()
	if g.pending || g.stopped {
		g.mu.Unlock()
		return
	}
	g.pending = true
	g.mu.Unlock()
	clk.AfterFunc(0, pump)
}

// begin is called first in a pump: the next notification schedules another.
func (g *pumpGate) begin() {
	g.mu.Lock()
	g.pending = false
	g.mu.Unlock()
}

// stop ends the pumps.
func (g *pumpGate) stop() {
	g.mu.Lock()
	g.stopped = true
	g.mu.Unlock()
}
