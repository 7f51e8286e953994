package tcp_test

import (
	"testing"
	"time"

	"github.com/netramp/netramp/counters"
	"github.com/netramp/netramp/nic/wire"
	"github.com/netramp/netramp/tcp"
)

// TestConnsOpenedEqualClosedOnceEveryEndingHasRun pins tcp.conns.opened and
// tcp.conns.closed: each end of a connection counts once when it begins, and
// once when it reaches CLOSED, whether by TIME-WAIT's end, the last ACK or a
// reset; while one is open, the difference says so.
func TestConnsOpenedEqualClosedOnceEveryEndingHasRun(t *testing.T) {
	d := wire.Dir{RateBps: 1e9, Delay: time.Millisecond}
	p := newVPair(t, wire.Config{AtoB: d, BtoA: d}, tcp.Options{TimeWait: 2 * time.Second}, tcp.Options{}, 1)
	load := func(r *counters.Registry, name string) uint64 { return r.Lookup(name).Load() }
	open := func() uint64 {
		return load(p.ra, "tcp.conns.opened") + load(p.rb, "tcp.conns.opened") -
			load(p.ra, "tcp.conns.closed") - load(p.rb, "tcp.conns.closed")
	}
	// A graceful close: A closes first (TIME-WAIT), B closes on its FIN.
	c1, s1 := p.dial(t, 80)
	if got := open(); got != 2 {
		t.Fatalf("one connection open: opened-closed = %d, want 2", got)
	}
	c1.ep.Close()
	p.clk.RunFor(100 * time.Millisecond)
	s1.ep.Close()
	p.clk.RunFor(100 * time.Millisecond)
	if got := open(); got != 1 {
		t.Fatalf("A in TIME-WAIT, B closed: opened-closed = %d, want 1", got)
	}
	p.clk.RunFor(3 * time.Second)
	if got := open(); got != 0 {
		t.Fatalf("after TIME-WAIT: opened-closed = %d, want 0", got)
	}
	// An abort: both ends close at once, by the RST.
	c2, s2 := p.dial(t, 81)
	c2.ep.Abort()
	p.clk.RunFor(100 * time.Millisecond)
	s2.ep.Close()
	if got := open(); got != 0 {
		t.Fatalf("after an abort: opened-closed = %d, want 0", got)
	}
	if got := load(p.ra, "tcp.conns.opened") + load(p.rb, "tcp.conns.opened"); got != 4 {
		t.Fatalf("tcp.conns.opened = %d over both stacks, want 4", got)
	}
}
