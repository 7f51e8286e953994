package wire

import (
	"testing"
	"time"

	"gvisor.dev/gvisor/pkg/tcpip"
)

// TestT14PresetIsTheT14Path drives the t14 preset in virtual time: a data
// frame crosses the card and the bottleneck (12.304 µs each at 1 Gbit/s) and
// 1 ms of propagation; the peer's per-segment ACKs come back as one stretch
// ACK per 34 segments, the remainder's 500 µs after the burst ends (not after
// the 20 ms hold), each 1 ms plus up to 10 ms of medium wait later; the 257th
// frame of a burst is refused.
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
	var acked []uint32
	for _, g := range r.a.got {
		acked = append(acked, segID(g.b))
	}
	if len(acked) != 4 || acked[0] != 33 || acked[1] != 67 || acked[2] != 101 || acked[3] != n-1 {
		t.Fatalf("stretch ACKs for segments %v, want [33 67 101 %d]", acked, n-1)
	}
	for i, id := range acked[:3] {
		if wait := r.a.got[i].at - r.b.got[id].at; wait < time.Millisecond || wait >= 11*time.Millisecond+ser {
			t.Errorf("the ACK of segment %d took %v after it, want 1 ms of path plus a 0-10 ms wait", id, wait)
		}
	}
	if wait := r.a.got[3].at - r.b.got[n-1].at; wait < 1500*time.Microsecond || wait >= 11500*time.Microsecond+ser {
		t.Fatalf("the last ACKs took %v after the burst, want the 500 µs gap, 1 ms of path and a 0-10 ms wait", wait)
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
