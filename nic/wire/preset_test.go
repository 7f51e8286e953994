package wire

import (
	"testing"
	"time"

	"gvisor.dev/gvisor/pkg/tcpip"
)

// TestT14PresetIsTheT14Path drives the t14 preset in virtual time: a data
// frame crosses the card and the bottleneck (12.304 µs each at 1 Gbit/s) and
// 1 ms of propagation; the peer's per-segment ACKs come back in groups of 34,
// the remainder after the 20 ms hold; the 257th frame of a burst is refused.
func TestT14PresetIsTheT14Path(t *testing.T) {
	cfg, err := Preset("t14")
	if err != nil {
		t.Fatal(err)
	}
	r := newRig(t, cfg)
	r.b.onRx = func(x rx) { send(r.w.B(), ack(segID(x.b))) }
	const n = 3*34 + 5
	var frames [][]byte
	for i := 0; i < n; i++ {
		frames = append(frames, data(uint32(i), 1460))
	}
	r.sendEvery(t, r.w.A(), 20*time.Microsecond, frames)
	r.drain()
	ser := time.Duration(1500+EthernetOverhead) * 8 // ns at 1 Gbit/s
	if got, want := r.b.got[0].at, 2*ser+time.Millisecond; got != want {
		t.Fatalf("first data frame arrived at %v, want %v", got, want)
	}
	var groups []int
	for i, g := range r.a.got {
		if i == 0 || g.at-r.a.got[i-1].at > 10*time.Microsecond {
			groups = append(groups, 0)
		}
		groups[len(groups)-1]++
	}
	if len(groups) != 4 || groups[0] != 34 || groups[1] != 34 || groups[2] != 34 || groups[3] != 5 {
		t.Fatalf("ACK groups %v, want [34 34 34 5]", groups)
	}
	if wait := r.a.got[n-1].at - r.b.got[3*34].at; wait < 20*time.Millisecond || wait > 21*time.Millisecond+100*time.Microsecond {
		t.Fatalf("the last ACKs waited %v, want the 20 ms hold plus the path", wait)
	}

	r2 := newRig(t, cfg)
	var burst [][]byte
	for i := 0; i < 300; i++ {
		burst = append(burst, data(uint32(i), 1460))
	}
	if n, err := send(r2.w.A(), burst...); n != 256 {
		t.Fatalf("ring took %d of a 300-frame burst (err %v), want 256", n, err)
	} else if _, ok := err.(*tcpip.ErrNoBufferSpace); !ok {
		t.Fatalf("error %v, want ErrNoBufferSpace", err)
	}
}
