package i219_test

import (
	"testing"

	"github.com/netramp/netramp/nic/i219"
	"github.com/netramp/netramp/nic/i219/fake"
)

// BenchmarkTXBatchOf32 measures the driver's transmit path (copy into the
// ring, one tail write, reclaim) per frame of 1514 bytes, against the
// fake's register model: a figure, not a claim.
func BenchmarkTXBatchOf32(b *testing.B) {
	dev := fake.New(fake.Options{})
	ep, err := i219.Open(dev.Platform(), i219.Config{ManualPoll: true})
	if err != nil {
		b.Fatal(err)
	}
	defer ep.Close()
	l := frames(32, 1514)
	defer l.DecRef()
	b.SetBytes(32 * 1514)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		ep.WritePackets(l)
		ep.Poll()
		dev.Sent()
	}
}

// BenchmarkRXPoll measures reaping and delivering 64 frames per pass.
func BenchmarkRXPoll(b *testing.B) {
	dev := fake.New(fake.Options{RXFifoFrames: 1024})
	ep, err := i219.Open(dev.Platform(), i219.Config{ManualPoll: true})
	if err != nil {
		b.Fatal(err)
	}
	defer ep.Close()
	s := &sink{}
	ep.Attach(s)
	f := udpDatagram(7, make([]byte, 1400))
	b.SetBytes(64 * int64(len(f)))
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		for j := 0; j < 64; j++ {
			dev.Inject(fake.RXFrame{Data: f})
		}
		ep.Poll()
		s.sizes, s.protos, s.types = s.sizes[:0], s.protos[:0], s.types[:0]
	}
}
