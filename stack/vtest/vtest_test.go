package vtest

import (
	"crypto/sha256"
	"testing"
	"time"

	"github.com/netramp/netramp/nic/wire"
	"github.com/netramp/netramp/tcp"
)

func lan() wire.Config {
	d := wire.Dir{RateBps: 1e9, Delay: time.Millisecond}
	return wire.Config{AtoB: d, BtoA: d}
}

func TestStreamHashMatchesTheStreamRead(t *testing.T) {
	s := NewStream(5)
	a := make([]byte, 1000)
	s.Read(a)
	if StreamHash(5, 1000) != sha256.Sum256(a) {
		t.Fatal("StreamHash differs from the stream's bytes")
	}
	if StreamHash(5, 1000) == StreamHash(6, 1000) {
		t.Fatal("two seeds give one stream")
	}
}

func TestTransferOfOneMegabyteArrivesWhole(t *testing.T) {
	p, err := NewPair(lan(), tcp.Options{}, tcp.Options{}, 1)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	c, s, err := p.Dial(SideA, 5001)
	if err != nil {
		t.Fatal(err)
	}
	so, si, err := p.Transfer(c, s, 1<<20, 3, 30*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if so.Sent() != 1<<20 || si.ReceivedBy(time.Hour) != 1<<20 || si.ReceivedBy(-1) != 0 {
		t.Fatalf("sent %d, received by end %d", so.Sent(), si.ReceivedBy(time.Hour))
	}
	marks := si.Marks()
	for i := 1; i < len(marks); i++ {
		if marks[i].At <= marks[i-1].At || marks[i].Bytes <= marks[i-1].Bytes {
			t.Fatalf("marks not increasing at %d: %v %v", i, marks[i-1], marks[i])
		}
	}
	t.Logf("1 MB in %v virtual, %d marks, wire trace %x", si.Duration(), len(marks), p.Wire.TraceHash())
}

func TestSameSeedGivesTheSameWireTrace(t *testing.T) {
	run := func() [32]byte {
		p, err := NewPair(lan(), tcp.Options{}, tcp.Options{}, 9)
		if err != nil {
			t.Fatal(err)
		}
		defer p.Close()
		c, s, err := p.Dial(SideA, 80)
		if err != nil {
			t.Fatal(err)
		}
		if _, _, err := p.Transfer(c, s, 300<<10, 1, 30*time.Second); err != nil {
			t.Fatal(err)
		}
		return p.Wire.TraceHash()
	}
	if a, b := run(), run(); a != b {
		t.Fatalf("two runs of one seed: %x vs %x", a, b)
	}
}
