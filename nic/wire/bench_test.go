package wire

import (
	"testing"
	"time"
)

// BenchmarkFramePath measures the wire's cost per full-size frame in virtual
// time: write, card, bottleneck, delivery, trace.
func BenchmarkFramePath(b *testing.B) {
	cfg, _ := Preset("t14")
	r := newRig(b, cfg)
	r.b.discard = true
	f := data(1, 1460)
	b.SetBytes(int64(len(f)))
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		send(r.w.A(), f)
		r.clk.RunFor(13 * time.Microsecond)
	}
	b.StopTimer()
	r.drain()
	if r.b.n != b.N {
		b.Fatalf("delivered %d of %d", r.b.n, b.N)
	}
}
