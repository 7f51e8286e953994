// Package rcvbuf holds a connection's in-order received bytes until the
// application reads them. It is a queue of pooled, reference-counted gVisor
// views: it holds memory only while it holds bytes, so an idle connection
// costs nothing here, and a view taken from the link is kept as it is, not
// copied.
//
// A kept view pins its whole chunk, which may be far larger than the bytes
// it holds (a frame buffer, or the sender's queue over an in-memory link), so
// a peer sending small segments could make the queue pin much more than the
// window. The queue therefore charges each view what it pins (its chunk's
// capacity, or only its bytes when it continues the chunk of the view before
// it, so a chunk is charged at most twice its size) and copies instead of
// keeping once the charge would pass the caller's bound.
package rcvbuf

import (
	"io"
	"math/bits"
	"sync"

	"gvisor.dev/gvisor/pkg/buffer"
)

// chunkSize is the capacity of a view the queue fills by copying: large
// enough that a run of full segments costs one pool get per several
// segments, small enough that a queue holding a few bytes wastes little.
const chunkSize = 16 << 10

// keepSlots is the slot array a queue keeps when it empties; a larger one
// (a burst of many views) goes back to slotPools.
const keepSlots = 16

// slots is a queue's slot arrays. They come from and go back to
// slotPools, one pool per power-of-two capacity, so a queue that fills and
// drains again and again (a bulk receiver whose reader keeps catching up)
// allocates none, and an empty queue still holds no large array.
type slots struct {
	views []*buffer.View
	costs []int
}

var slotPools [64]sync.Pool // by bits.Len of the capacity

// getSlots returns empty arrays of capacity n, a power of two.
func getSlots(n int) *slots {
	if a, ok := slotPools[bits.Len(uint(n))].Get().(*slots); ok {
		return a
	}
	return &slots{views: make([]*buffer.View, 0, n), costs: make([]int, 0, n)}
}

func putSlots(a *slots) {
	clear(a.views[:cap(a.views)])
	a.views, a.costs = a.views[:0], a.costs[:0]
	slotPools[bits.Len(uint(cap(a.views)))].Put(a)
}

// Queue is the bytes received in order and not yet read. The zero value is
// an empty queue. Not safe for concurrent use.
type Queue struct {
	views  []*buffer.View // views[head:] hold data, oldest first
	costs  []int          // what each view is charged (parallel to views)
	arrays *slots         // where views and costs came from (nil: none yet)
	head   int
	n      int
	pinned int // the sum of costs
	// owned: the last view was filled by copying and nobody else holds its
	// chunk, so more bytes may be copied after its end.
	owned bool
}

// Len is the number of bytes held.
func (q *Queue) Len() int { return q.n }

// Views is the number of views held (for tests of the memory bound).
func (q *Queue) Views() int { return len(q.views) - q.head }

// Pinned is the chunk memory the queue is charged for.
func (q *Queue) Pinned() int { return q.pinned }

// Append copies p after the bytes held.
func (q *Queue) Append(p []byte) {
	for len(p) > 0 {
		if !q.owned || q.views[len(q.views)-1].AvailableSize() == 0 {
			v := buffer.NewView(max(chunkSize, min(len(p), buffer.MaxChunkSize)))
			q.push(v, v.Capacity())
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
// and keeps it as it is (no byte copied) if the queue's charge stays within
// limit; otherwise it copies v's bytes and releases v. It reports whether it
// kept v. Nothing is copied after a kept view: its chunk may be shared with
// the link or its sender.
func (q *Queue) AppendView(v *buffer.View, limit int) bool {
	if v.Size() == 0 {
		v.Release()
		return true
	}
	cost := v.Capacity()
	if q.continues(v) {
		cost = v.Size()
	}
	if q.pinned+cost > limit {
		q.Append(v.AsSlice())
		v.Release()
		return false
	}
	q.n += v.Size()
	q.push(v, cost)
	q.owned = false
	return true
}

// continues reports whether v's bytes start where the last view's end, in the
// same chunk: that chunk is charged already.
func (q *Queue) continues(v *buffer.View) bool {
	if q.Views() == 0 {
		return false
	}
	last := q.views[len(q.views)-1].AsSlice()
	if cap(last) == len(last) {
		return false
	}
	return &last[:len(last)+1][len(last)] == &v.AsSlice()[0]
}

func (q *Queue) push(v *buffer.View, cost int) {
	if q.head > 0 && len(q.views) == cap(q.views) {
		k := copy(q.views, q.views[q.head:])
		copy(q.costs, q.costs[q.head:])
		clear(q.views[k:])
		q.views, q.costs = q.views[:k], q.costs[:k]
		q.head = 0
	}
	if len(q.views) == cap(q.views) {
		q.grow()
	}
	q.views = append(q.views, v)
	q.costs = append(q.costs, cost)
	q.pinned += cost
}

// grow moves the slots to arrays twice as large, from slotPools.
func (q *Queue) grow() {
	a := getSlots(max(keepSlots, 2*cap(q.views)))
	a.views = append(a.views, q.views...)
	a.costs = append(a.costs, q.costs...)
	if q.arrays != nil {
		putSlots(q.arrays)
	}
	q.arrays, q.views, q.costs = a, a.views, a.costs
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

// TakeTo moves the views holding the oldest bytes, at most max of them, to
// dst, and returns dst and the bytes moved. Nothing is copied and no view
// is cloned but the one max cuts, whose head the caller gets as a clone
// while the queue keeps its tail. The bytes leave the queue as after
// Consume; the caller releases the views.
func (q *Queue) TakeTo(dst []*buffer.View, max int) ([]*buffer.View, int) {
	n := 0
	for n < max && q.head < len(q.views) {
		v := q.views[q.head]
		// control:tcpinternal-rcvbuf-take-past-max
		if k := max - n; v.Size() > k {
			c := v.Clone()
			c.CapLength(k)
			v.TrimFront(k)
			if q.head == len(q.views)-1 {
				q.owned = false // the chunk is shared now: copy no more into it
			}
			dst = append(dst, c)
			n += k
			break
		}
		n += v.Size()
		dst = append(dst, v)
		q.views[q.head] = nil
		q.pinned -= q.costs[q.head]
		q.head++
	}
	q.n -= n
	if q.head == len(q.views) {
		q.Release()
	}
	return dst, n
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
		q.pinned -= q.costs[q.head]
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
		// control:rcvbuf-slots-not-pooled
		putSlots(q.arrays)
		q.arrays, q.views, q.costs = nil, nil, nil
	} else {
		clear(q.views)
		q.views, q.costs = q.views[:0], q.costs[:0]
	}
	q.head, q.n, q.pinned, q.owned = 0, 0, 0, false
}
