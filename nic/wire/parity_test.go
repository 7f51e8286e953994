package wire

import (
	"fmt"
	"testing"
	"time"
)

// TestParityPresetsAreTheirNamedPaths drives each parity preset in virtual
// time: a data frame takes one serialisation at the named rate and half the
// named RTT; the peer's per-segment ACKs come back one for one, or, on the
// stretch variant, as one stretch ACK per 16 segments.
func TestParityPresetsAreTheirNamedPaths(t *testing.T) {
	for _, p := range []struct {
		rate int64
		rtt  time.Duration
	}{{20e6, 10 * time.Millisecond}, {50e6, 40 * time.Millisecond}, {100e6, 100 * time.Millisecond}} {
		for _, stretch := range []bool{false, true} {
			name := fmt.Sprintf("parity-%dm-%dms", p.rate/1e6, p.rtt.Milliseconds())
			if stretch {
				name += "-stretch"
			}
			t.Run(name, func(t *testing.T) {
				cfg, err := Preset(name)
				if err != nil {
					t.Fatal(err)
				}
				r := newRig(t, cfg)
				r.b.onRx = func(x rx) { send(r.w.B(), ack(segID(x.b))) }
				const n = 2 * ParityStretchSegments
				var frames [][]byte
				for i := 0; i < n; i++ {
					frames = append(frames, data(uint32(i), 1460))
				}
				r.sendEvery(t, r.w.A(), 20*time.Microsecond, frames)
				r.drain()
				ser := time.Duration(int64(1500+EthernetOverhead) * 8 * int64(time.Second) / p.rate)
				if got, want := r.b.got[0].at, ser+p.rtt/2; got != want {
					t.Fatalf("first data frame arrived at %v, want %v", got, want)
				}
				want := n
				if stretch {
					want = n / ParityStretchSegments
				}
				if len(r.a.got) != want {
					t.Fatalf("%d ACKs came back for %d segments, want %d", len(r.a.got), n, want)
				}
			})
		}
	}
}
