package tcp

import "testing"

// TestHeldAckCapIs64KBAtLeastSixteenSegmentsAtMostAQuarterBuffer: a held
// ACK covers 64 KB of full segments (45 at MSS 1448), never fewer than 16
// (at MSS 8948, where 64 KB is 7), and never more than a quarter of the
// receive buffer (coalesceCap).
func TestHeldAckCapIs64KBAtLeastSixteenSegmentsAtMostAQuarterBuffer(t *testing.T) {
	for _, c := range []struct {
		name         string
		smss, rcvBuf int
		want         int
	}{
		{"MTU 1500, 6 MB buffer: 64 KB", 1448, 6 << 20, 45},
		{"MTU 9000, 6 MB buffer: 16 segments", 8948, 6 << 20, 16},
		{"MTU 1500, 128 KB buffer: a quarter", 1448, 128 << 10, 22},
		{"MTU 9000, 256 KB buffer: a quarter", 8948, 256 << 10, 7},
	} {
		t.Run(c.name, func(t *testing.T) {
			e := &endpoint{smss: c.smss, rcvBuf: c.rcvBuf}
			if got := e.coalesceCap(coalesceBytes); got != c.want {
				t.Errorf("coalesceCap() = %d, want %d", got, c.want)
			}
		})
	}
}

// TestAggregateInABurstMayBeHeldFor256KB: a held ACK may cover 256 KB of
// full segments (179 at MSS 1460, 29 at MSS 8948) only when a link's burst
// brought an aggregate; a full segment in a burst, an aggregate outside one,
// and a flush keep 64 KB, and a quarter of the buffer bounds them all
// (holdBytes, coalesceCap).
func TestAggregateInABurstMayBeHeldFor256KB(t *testing.T) {
	for _, c := range []struct {
		name                 string
		smss, rcvBuf         int
		burst, agg, flushing bool
		want                 int
	}{
		{"MTU 1500, aggregate in a burst", 1460, 6 << 20, true, true, false, 179},
		{"MTU 9000, aggregate in a burst", 8948, 6 << 20, true, true, false, 29},
		{"MTU 1500, full segment in a burst", 1460, 6 << 20, true, false, false, 44},
		{"MTU 1500, aggregate outside a burst", 1460, 6 << 20, false, true, false, 44},
		{"MTU 1500, aggregate during a flush", 1460, 6 << 20, true, true, true, 44},
		{"MTU 1500, aggregate in a burst, 512 KB buffer", 1460, 512 << 10, true, true, false, 89},
	} {
		t.Run(c.name, func(t *testing.T) {
			e := &endpoint{smss: c.smss, rcvBuf: c.rcvBuf, rxAggregate: c.agg, flushing: c.flushing}
			if c.burst {
				e.rxBurst = new(burst)
			}
			if got := e.coalesceCap(e.holdBytes()); got != c.want {
				t.Errorf("coalesceCap(holdBytes()) = %d, want %d", got, c.want)
			}
		})
	}
}
