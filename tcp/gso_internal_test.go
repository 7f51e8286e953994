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
