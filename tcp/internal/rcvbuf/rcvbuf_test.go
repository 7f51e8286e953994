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
			q.AppendView(buffer.NewViewWithData(pattern(in, n)))
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
