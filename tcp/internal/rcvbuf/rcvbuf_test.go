package rcvbuf

import (
	"bytes"
	"math/rand"
	"testing"

	"gvisor.dev/gvisor/pkg/buffer"
)

func pattern(off, n int) []byte {
	p := make([]byte, n)
	for i := range p {
		p[i] = byte((off + i) * 7)
	}
	return p
}

// limitWriter takes at most k bytes, as a reader's short buffer does.
type limitWriter struct {
	b bytes.Buffer
	k int
}

func (w *limitWriter) Write(p []byte) (int, error) {
	n := min(len(p), w.k-w.b.Len())
	w.b.Write(p[:n])
	return n, nil
}

// Bytes come out in the order they went in, whether copied or kept as
// views, across partial reads, and an emptied queue holds no view.
func TestBytesKeepTheirOrderAndAnEmptyQueueHoldsNothing(t *testing.T) {
	var q Queue
	r := rand.New(rand.NewSource(1))
	in, out := 0, 0
	for round := 0; round < 3000; round++ {
		n := r.Intn(4000)
		if r.Intn(3) == 0 {
			q.AppendView(buffer.NewViewWithData(pattern(in, n)), 1<<30)
		} else {
			q.Append(pattern(in, n))
		}
		in += n
		w := &limitWriter{k: r.Intn(q.Len() + 1)}
		if r.Intn(4) == 0 {
			w.k = q.Len()
		}
		k, _ := q.CopyTo(w)
		if k != w.b.Len() || !bytes.Equal(w.b.Bytes(), pattern(out, k)) {
			t.Fatalf("round %d: read %d bytes, wrong order", round, k)
		}
		q.Consume(k)
		out += k
		if q.Len() != in-out {
			t.Fatalf("round %d: Len %d, want %d", round, q.Len(), in-out)
		}
		if q.Len() == 0 && q.Views() != 0 {
			t.Fatalf("round %d: an empty queue holds %d views", round, q.Views())
		}
	}
}

// Copied segments share chunks: many small in-order segments cost about
// their bytes, not a chunk each.
func TestCopiedSegmentsCoalesce(t *testing.T) {
	var q Queue
	for i := 0; i < 1000; i++ {
		q.Append(pattern(i*100, 100))
	}
	if want := 100*1000/chunkSize + 1; q.Views() > want {
		t.Fatalf("%d views for 100 KB of 100-byte segments, want <= %d", q.Views(), want)
	}
}

// Small views of large chunks (a peer's tiny segments in frame buffers)
// are kept only while what they pin stays within the bound; past it their
// bytes are copied, and nothing is lost either way.
func TestKeptViewsPinNoMoreThanTheBound(t *testing.T) {
	var q Queue
	const limit = 256 << 10
	in := 0
	for i := 0; i < 1000; i++ {
		v := buffer.NewView(64 << 10)
		v.Write(pattern(in, 10))
		in += 10
		q.AppendView(v, limit)
		if q.Pinned() > limit+chunkSize {
			t.Fatalf("after %d views: %d bytes pinned, bound %d", i+1, q.Pinned(), limit)
		}
	}
	var w limitWriter
	w.k = in
	if k, _ := q.CopyTo(&w); k != in || !bytes.Equal(w.b.Bytes(), pattern(0, in)) {
		t.Fatalf("read %d of %d bytes", k, in)
	}
	q.Consume(in)
	if q.Pinned() != 0 || q.Views() != 0 {
		t.Fatalf("emptied queue pins %d bytes in %d views", q.Pinned(), q.Views())
	}
}

// Consecutive segments cut from one chunk (an in-memory link sharing the
// sender's queue) are all kept: the chunk's capacity is charged once, then
// only the bytes of each segment after the first.
func TestSegmentsOfOneChunkAreChargedOnce(t *testing.T) {
	var q Queue
	src := buffer.NewViewWithData(pattern(0, 64<<10))
	for off := 0; off < 64<<10; off += 1448 {
		v := src.Clone()
		v.TrimFront(off)
		v.CapLength(1448)
		if !q.AppendView(v, 2*64<<10+1448) {
			t.Fatalf("segment at %d copied, want kept", off)
		}
	}
	if q.Pinned() > 2*64<<10+1448 {
		t.Fatalf("%d bytes pinned for one 64 KiB chunk", q.Pinned())
	}
	src.Release()
}

// A bulk receiver's queue fills with many views while its reader lags,
// then empties when the reader catches up, again and again: after the
// first round the slot arrays come back from their pool, so a round
// allocates nothing, and the emptied queue keeps no large array.
func TestFillingAndDrainingAgainAllocatesNothing(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector allocates on its own: run this test without -race")
	}
	var q Queue
	data := pattern(0, 1448)
	views := make([]*buffer.View, 200)
	round := func() {
		for i := range views {
			views[i] = buffer.NewViewWithData(data)
		}
		for _, v := range views {
			q.AppendView(v, 1<<30)
		}
		q.Consume(q.Len())
	}
	round()
	if n := testing.AllocsPerRun(20, round); n != 0 {
		t.Fatalf("%v allocations per round of %d views, want 0", n, len(views))
	}
	if q.Views() != 0 || cap(q.views) != 0 {
		t.Fatalf("an emptied queue holds %d views in %d slots", q.Views(), cap(q.views))
	}
}

// TakeTo moves the oldest bytes, at most max, out of the queue as its own
// views, cutting the last one where max falls: what is left comes out
// next, in order, and the views taken hold the bytes the queue held.
func TestTakeMovesTheOldestBytesUpToMax(t *testing.T) {
	var q Queue
	kept := buffer.NewViewWithData(pattern(0, 3000))
	at := &kept.AsSlice()[0]
	q.AppendView(kept, 1<<30)
	q.Append(pattern(3000, 5000))
	views, n := q.TakeTo(nil, 4000)
	var got []byte
	for _, v := range views {
		got = append(got, v.AsSlice()...)
	}
	if n != 4000 || !bytes.Equal(got, pattern(0, 4000)) {
		t.Fatalf("took %d bytes (%d in views), want the oldest 4000", n, len(got))
	}
	if &views[0].AsSlice()[0] != at {
		t.Fatal("the first view taken is not the one the queue kept: its bytes were copied")
	}
	if q.Len() != 4000 {
		t.Fatalf("Len %d after taking 4000 of 8000", q.Len())
	}
	for _, v := range views {
		v.Release()
	}
	rest, n := q.TakeTo(views[:0], 1<<20)
	got = got[:0]
	for _, v := range rest {
		got = append(got, v.AsSlice()...)
		v.Release()
	}
	if n != 4000 || !bytes.Equal(got, pattern(4000, 4000)) {
		t.Fatalf("took the rest as %d bytes, want 4000 in order", n)
	}
	if q.Len() != 0 || q.Views() != 0 || q.Pinned() != 0 {
		t.Fatalf("an emptied queue: Len %d, %d views, %d pinned", q.Len(), q.Views(), q.Pinned())
	}
	if views, n := q.TakeTo(nil, 100); n != 0 || len(views) != 0 {
		t.Fatalf("an empty queue gave %d bytes in %d views", n, len(views))
	}
}
