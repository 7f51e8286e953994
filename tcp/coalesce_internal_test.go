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
