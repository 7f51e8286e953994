// Package rcvbuf holds a connection's in-order received bytes until the
// application reads them. It is a queue of pooled, reference-counted gVisor
// views: it holds memory only while it holds bytes, so an idle connection
// costs nothing here, and a view taken from the link is kept as it is, not
// copied.
package rcvbuf

import (
	"io"

	"gvisor.dev/gvisor/pkg/buffer"
)

// chunkSize is the capacity of a view the queue fills by copying: large
// enough that a run of full segments costs one pool get per several
// segments, small enough that a queue holding a few bytes wastes little.
const chunkSize = 16 << 10

// keepSlots is the slot array a queue keeps when it empties; a larger one
// (a burst of many small views) is given back.
const keepSlots = 16

// Queue is the bytes received in order and not yet read. The zero value is
// an empty queue. Not safe for concurrent use.
type Queue struct {
	views []*buffer.View // views[head:] hold data, oldest first
	head  int
	n     int
	// owned: the last view was filled by copying and nobody else holds its
	// chunk, so more bytes may be copied after its end.
	owned bool
}

// Len is the number of bytes held.
func (q *Queue) Len() int { return q.n }

// Views is the number of views held (for tests of the memory bound).
func (q *Queue) Views() int { return len(q.views) - q.head }

// Append copies p after the bytes held.
func (q *Queue) Append(p []byte) {
	for len(p) > 0 {
		if !q.owned || q.views[len(q.views)-1].AvailableSize() == 0 {
			q.push(buffer.NewView(max(chunkSize, min(len(p), buffer.MaxChunkSize))))
			q.owned = true
		}
		v := q.views[len(q.views)-1]
		k := min(len(p), v.AvailableSize())
		v.Write(p[:k]) // an owned view with room: no reallocation, no copy-on-write
		q.n += k
		p = p[k:]
	}
}

// AppendView takes ownership of v, a view of bytes that follow those held,
// and keeps it as it is: no byte is copied. Nothing is copied after it
// either, since its chunk may be shared with the link or its sender.
func (q *Queue) AppendView(v *buffer.View) {
	if v.Size() == 0 {
		v.Release()
		return
	}
	q.n += v.Size()
	q.push(v)
	q.owned = false
}

func (q *Queue) push(v *buffer.View) {
	if q.head > 0 && len(q.views) == cap(q.views) {
		k := copy(q.views, q.views[q.head:])
		clear(q.views[k:])
		q.views = q.views[:k]
		q.head = 0
	}
	q.views = append(q.views, v)
}

// CopyTo hands the bytes held, oldest first, to w until w takes fewer than
// it was given or fails, and returns how many it took. The bytes stay held
// until Consume.
func (q *Queue) CopyTo(w io.Writer) (int, error) {
	n := 0
	for _, v := range q.views[q.head:] {
		b := v.AsSlice()
		k, err := w.Write(b)
		n += k
		if err != nil || k < len(b) {
			return n, err
		}
	}
	return n, nil
}

// Consume drops the n oldest bytes (at most Len), giving back each view
// emptied; an empty queue holds no view.
func (q *Queue) Consume(n int) {
	n = min(n, q.n)
	q.n -= n
	for n > 0 {
		v := q.views[q.head]
		if k := v.Size(); n < k {
			v.TrimFront(n)
			return
		}
		n -= v.Size()
		v.Release()
		q.views[q.head] = nil
		q.head++
	}
	if q.head == len(q.views) {
		q.Release()
	}
}

// Release drops every byte held and gives back the views.
func (q *Queue) Release() {
	for _, v := range q.views[q.head:] {
		v.Release()
	}
	if cap(q.views) > keepSlots {
		q.views = nil
	} else {
		clear(q.views)
		q.views = q.views[:0]
	}
	q.head, q.n, q.owned = 0, 0, false
}
