package sendbuf

import (
	"bytes"
	"errors"
	"math/rand"
	"testing"
)

func pattern(off uint64, n int) []byte {
	p := make([]byte, n)
	for i := range p {
		p[i] = byte((off + uint64(i)) * 7)
	}
	return p
}

func TestWriteTakesAtMostFree(t *testing.T) {
	b := New(10)
	if n := b.Write(pattern(0, 6)); n != 6 {
		t.Fatalf("Write = %d, want 6", n)
	}
	if n := b.Write(pattern(6, 6)); n != 4 {
		t.Fatalf("Write = %d, want 4 (capacity)", n)
	}
	if b.Free() != 0 || b.Len() != 10 || b.End() != 10 {
		t.Fatalf("free=%d len=%d end=%d", b.Free(), b.Len(), b.End())
	}
	if n := b.Write([]byte{1}); n != 0 {
		t.Fatalf("Write into a full buffer = %d", n)
	}
}

func TestBytesSurviveWrapAroundTheRing(t *testing.T) {
	b := New(minAlloc)
	var off uint64
	r := rand.New(rand.NewSource(1))
	for round := 0; round < 200; round++ {
		n := r.Intn(b.Free() + 1)
		b.Write(pattern(b.End(), n))
		got := make([]byte, b.Len())
		if c := b.Peek(b.Start(), got); c != b.Len() {
			t.Fatalf("Peek = %d, want %d", c, b.Len())
		}
		if !bytes.Equal(got, pattern(b.Start(), b.Len())) {
			t.Fatalf("round %d: bytes differ", round)
		}
		off = b.Start() + uint64(r.Intn(b.Len()+1))
		b.Trim(off)
		if b.Start() != off {
			t.Fatalf("Start = %d after Trim(%d)", b.Start(), off)
		}
	}
}

func TestSlicesSplitAtTheWrapAndClampToEnd(t *testing.T) {
	b := New(minAlloc)
	b.Write(pattern(0, minAlloc))
	b.Trim(minAlloc - 10)
	b.Write(pattern(minAlloc, 20))
	x, y := b.Slices(minAlloc-10, 100)
	if len(x) != 10 || len(y) != 20 {
		t.Fatalf("parts %d+%d, want 10+20", len(x), len(y))
	}
	if !bytes.Equal(append(append([]byte{}, x...), y...), pattern(minAlloc-10, 30)) {
		t.Fatal("wrapped view has the wrong bytes")
	}
}

func TestOutOfRangeOffsetsGiveNothing(t *testing.T) {
	b := New(100)
	b.Write(pattern(0, 50))
	b.Trim(10)
	for _, off := range []uint64{0, 9, 50, 51, ^uint64(0)} {
		if x, y := b.Slices(off, 5); x != nil || y != nil {
			t.Errorf("Slices(%d) returned data", off)
		}
		if n := b.Peek(off, make([]byte, 5)); n != 0 {
			t.Errorf("Peek(%d) = %d", off, n)
		}
	}
	if x, _ := b.Slices(20, -1); x != nil {
		t.Error("negative length returned data")
	}
}

func TestTrimBelowStartIsIgnoredAndBeyondEndRestarts(t *testing.T) {
	b := New(100)
	b.Write(pattern(0, 50))
	b.Trim(20)
	b.Trim(5)
	if b.Start() != 20 || b.Len() != 30 {
		t.Fatalf("start=%d len=%d", b.Start(), b.Len())
	}
	b.Trim(51) // the FIN's offset
	if b.Len() != 0 || b.Start() != 51 || b.End() != 51 {
		t.Fatalf("start=%d len=%d end=%d", b.Start(), b.Len(), b.End())
	}
	b.Write(pattern(51, 3))
	got := make([]byte, 3)
	b.Peek(51, got)
	if !bytes.Equal(got, pattern(51, 3)) {
		t.Fatal("bytes after restart differ")
	}
}

func TestSetCapGrowsAndRefusesToShrinkBelowLen(t *testing.T) {
	b := New(8)
	b.Write(pattern(0, 8))
	if err := b.SetCap(5); !errors.Is(err, ErrShrink) {
		t.Fatalf("SetCap(5) = %v, want ErrShrink", err)
	}
	if err := b.SetCap(-1); !errors.Is(err, ErrCap) {
		t.Fatalf("SetCap(-1) = %v, want ErrCap", err)
	}
	if err := b.SetCap(16); err != nil {
		t.Fatal(err)
	}
	if n := b.Write(pattern(8, 10)); n != 8 {
		t.Fatalf("Write after growth = %d, want 8", n)
	}
	b.Trim(12)
	if err := b.SetCap(12); err != nil {
		t.Fatal(err)
	}
	got := make([]byte, 4)
	if b.Peek(12, got) != 4 || !bytes.Equal(got, pattern(12, 4)) {
		t.Fatal("bytes lost across SetCap")
	}
}

func TestBackingArrayNeverExceedsCapacity(t *testing.T) {
	b := New(minAlloc*3 + 1)
	for b.Free() > 0 {
		b.Write(pattern(b.End(), 1000))
		if len(b.buf) > b.Cap() {
			t.Fatalf("backing %d > cap %d", len(b.buf), b.Cap())
		}
	}
	if New(1<<30).buf != nil {
		t.Fatal("a fresh buffer allocated its capacity")
	}
}
