package sendbuf

import (
	"bytes"
	"errors"
	"io"
	"math/rand"
	"testing"
)

// Fill must keep the same bytes Write would, across the wrap of the ring,
// and take no more than Free().
func TestFillMatchesWriteAcrossTheWrap(t *testing.T) {
	a, b := New(minChunk), New(minChunk)
	r := rand.New(rand.NewSource(2))
	for round := 0; round < 300; round++ {
		n := r.Intn(minChunk + 100)
		p := pattern(a.End(), n)
		wa := a.Write(p)
		wb, err := b.Fill(bytes.NewReader(p), n)
		if wb != wa {
			t.Fatalf("round %d: Fill took %d, Write %d", round, wb, wa)
		}
		if wb < n && err != nil {
			t.Fatalf("round %d: Fill clamped to Free and still reported %v", round, err)
		}
		ga, gb := make([]byte, a.Len()), make([]byte, b.Len())
		a.Peek(a.Start(), ga)
		b.Peek(b.Start(), gb)
		if !bytes.Equal(ga, gb) || b.End() != a.End() {
			t.Fatalf("round %d: Fill and Write differ", round)
		}
		off := a.Start() + uint64(r.Intn(a.Len()+1))
		a.Trim(off)
		b.Trim(off)
	}
}

// A short reader: the bytes it gave are kept and its error is returned.
func TestFillKeepsWhatAShortReaderGave(t *testing.T) {
	b := New(minChunk)
	b.Write(pattern(0, minChunk-5))
	b.Trim(minChunk - 10) // 5 bytes held, the free space wraps
	n, err := b.Fill(bytes.NewReader(pattern(b.End(), 100)), 200)
	if n != 100 || !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Fatalf("Fill = %d, %v; want 100, ErrUnexpectedEOF", n, err)
	}
	got := make([]byte, b.Len())
	b.Peek(b.Start(), got)
	if !bytes.Equal(got, pattern(b.Start(), b.Len())) || b.Len() != 105 {
		t.Fatalf("len %d, bytes kept wrong", b.Len())
	}
}
