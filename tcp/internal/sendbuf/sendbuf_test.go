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
	b := New(minChunk)
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

// A clone spanning chunks carries the right bytes, is clamped to End, and
// shares the chunks: writing after it does not change what it holds.
func TestCloneSpansChunksClampsToEndAndSharesBytes(t *testing.T) {
	b := New(1 << 20)
	b.Write(pattern(0, minChunk))
	c0 := b.Clone(minChunk-10, 5) // seals the first chunk
	b.Write(pattern(minChunk, 20))
	c := b.Clone(minChunk-10, 100)
	if c.Size() != 30 {
		t.Fatalf("clone holds %d bytes, want 30 (clamped to End)", c.Size())
	}
	if !bytes.Equal(c.Flatten(), pattern(minChunk-10, 30)) {
		t.Fatal("clone across chunks has the wrong bytes")
	}
	b.Write(pattern(minChunk+20, 100))
	if !bytes.Equal(c.Flatten(), pattern(minChunk-10, 30)) || !bytes.Equal(c0.Flatten(), pattern(minChunk-10, 5)) {
		t.Fatal("a later write changed a clone")
	}
	c.Release()
	c0.Release()
}

func TestOutOfRangeOffsetsGiveNothing(t *testing.T) {
	b := New(100)
	b.Write(pattern(0, 50))
	b.Trim(10)
	for _, off := range []uint64{0, 9, 50, 51, ^uint64(0)} {
		if c := b.Clone(off, 5); c.Size() != 0 {
			t.Errorf("Clone(%d) returned data", off)
		}
		if n := b.Peek(off, make([]byte, 5)); n != 0 {
			t.Errorf("Peek(%d) = %d", off, n)
		}
	}
	if c := b.Clone(20, -1); c.Size() != 0 {
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

// The queue holds chunks only while it holds bytes, and never much more
// than it holds: a fresh or emptied buffer references no chunk.
func TestChunksFollowTheBytesHeld(t *testing.T) {
	b := New(minChunk*3 + 1)
	for b.Free() > 0 {
		b.Write(pattern(b.End(), 1000))
		if b.Held() > b.Len()+minChunk {
			t.Fatalf("holds %d bytes of chunks for %d bytes", b.Held(), b.Len())
		}
	}
	if New(1<<30).Held() != 0 {
		t.Fatal("a fresh buffer holds a chunk")
	}
	b.Trim(b.End())
	if b.Held() != 0 || len(b.views) != 0 {
		t.Fatalf("an emptied buffer holds %d bytes in %d views", b.Held(), len(b.views))
	}
}

// Clones cut at random offsets while the queue is written, trimmed and
// emptied carry the bytes of their offsets (the clone cursor never goes
// stale).
func TestClonesMatchTheStreamUnderChurn(t *testing.T) {
	b := New(64 << 10)
	r := rand.New(rand.NewSource(3))
	for round := 0; round < 2000; round++ {
		b.Write(pattern(b.End(), r.Intn(b.Free()+1)))
		if b.Len() > 0 {
			off := b.Start() + uint64(r.Intn(b.Len()))
			c := b.Clone(off, r.Intn(3000)+1)
			if !bytes.Equal(c.Flatten(), pattern(off, int(c.Size()))) {
				t.Fatalf("round %d: clone at %d has the wrong bytes", round, off)
			}
			c.Release()
		}
		switch r.Intn(4) {
		case 0:
			b.Trim(b.End())
		default:
			b.Trim(b.Start() + uint64(r.Intn(b.Len()+1)))
		}
	}
}
