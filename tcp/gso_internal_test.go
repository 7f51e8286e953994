package tcp

import "testing"

// TestPacerBurstIsAGSOPacketAtRatesTheClockCannotSpace: on a route with GSO,
// the pacer's burst grows to what the rate sends in paceGrain, at most one
// GSO packet; below about 1.5 GB/s, and on routes without GSO, it is the
// burst it was (gsoBurst).
func TestPacerBurstIsAGSOPacketAtRatesTheClockCannotSpace(t *testing.T) {
	const iw = 14480
	gsoPath := path{gsoBytes: 65455}
	full := 65455 + 46*20 // the packet's payload and a TCP header per segment
	for _, c := range []struct {
		name string
		pa   path
		rate float64
		want int
	}{
		{"88 GB/s over GSO: one full packet", gsoPath, 88e9, full},
		{"3 GB/s over GSO: 10 µs of the rate", gsoPath, 3e9, 30000},
		{"1 GB/s over GSO: the burst as before", gsoPath, 1e9, iw},
		{"unpaced over GSO", gsoPath, 0, iw},
		{"88 GB/s without GSO", path{}, 88e9, iw},
	} {
		t.Run(c.name, func(t *testing.T) {
			e := &endpoint{smss: 1448, routePath: c.pa}
			if got := e.gsoBurst(c.rate, iw); got != c.want {
				t.Errorf("gsoBurst(%g, %d) = %d, want %d", c.rate, iw, got, c.want)
			}
		})
	}
}

// TestTailIsHeldOnlyInAWriteBehindOurOwnPacket: corkTail holds a write's
// tail short of one segment on a route without GSO only while the
// application is in Write behind a packet of ours; never with TCP_NODELAY,
// a FIN queued, a loss probe due, a window that cannot take the rest, a
// full segment left, or nothing of ours ahead.
func TestTailIsHeldOnlyInAWriteBehindOurOwnPacket(t *testing.T) {
	const smss = 1448
	for _, c := range []struct {
		name       string
		change     func(e *endpoint)
		avail, wnd uint64
		want       bool
	}{
		{"tail in a write being flushed", nil, 376, 1 << 20, true},
		{"tail behind a packet in the outbox", func(e *endpoint) { e.flushing = false; e.outbox = make([]outSeg, 1) }, 376, 1 << 20, true},
		{"a full segment left", nil, smss, 1 << 20, false},
		{"not in a write", func(e *endpoint) { e.inWrite = false }, 376, 1 << 20, false},
		{"nothing of ours ahead", func(e *endpoint) { e.flushing = false }, 376, 1 << 20, false},
		{"TCP_NODELAY", func(e *endpoint) { e.nodelay = true }, 376, 1 << 20, false},
		{"FIN queued", func(e *endpoint) { e.finQueued = true }, 376, 1 << 20, false},
		{"loss probe due", func(e *endpoint) { e.probe = true }, 376, 1 << 20, false},
		{"window-limited", nil, 376, 300, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			e := &endpoint{smss: smss, inWrite: true, flushing: true}
			if c.change != nil {
				c.change(e)
			}
			if got := e.corkTail(c.avail, c.wnd, smss); got != c.want || e.tailCorked != c.want {
				t.Errorf("corkTail(%d, %d) = %v (tailCorked %v), want %v", c.avail, c.wnd, got, e.tailCorked, c.want)
			}
		})
	}
}
