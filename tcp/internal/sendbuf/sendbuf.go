// Package sendbuf holds a connection's send queue: the bytes sent but not yet
// acknowledged and the bytes not yet sent, addressed by 64-bit stream offset.
// It is a ring whose capacity is fixed by the caller (and grown only by
// SetCap), so the peer cannot make it grow; its backing array is allocated on
// demand, so an idle or slow connection does not hold its whole capacity.
package sendbuf

import (
	"errors"
	"fmt"
	"io"
)

// ErrShrink reports a SetCap below the bytes the buffer holds.
var ErrShrink = errors.New("sendbuf: capacity below the bytes held")

// ErrCap reports a negative capacity.
var ErrCap = errors.New("sendbuf: negative capacity")

// minAlloc is the smallest backing array, so small writes do not reallocate.
const minAlloc = 4096

// Buffer is the byte queue [Start, End). Not safe for concurrent use.
type Buffer struct {
	buf   []byte // ring; len(buf) <= cap
	head  int    // index of Start in buf
	n     int    // bytes held
	start uint64
	cap   int
}

// New returns an empty buffer of the given capacity starting at offset 0.
// A negative capacity is treated as 0.
func New(capacity int) *Buffer {
	if capacity < 0 {
		capacity = 0
	}
	return &Buffer{cap: capacity}
}

// Start is the offset of the oldest byte held (the lowest unacknowledged).
func (b *Buffer) Start() uint64 { return b.start }

// End is the offset one past the newest byte written.
func (b *Buffer) End() uint64 { return b.start + uint64(b.n) }

// Len is the number of bytes held.
func (b *Buffer) Len() int { return b.n }

// Free is the room left for Write.
func (b *Buffer) Free() int { return b.cap - b.n }

// Cap is the capacity.
func (b *Buffer) Cap() int { return b.cap }

// Write appends up to Free() bytes of p and returns how many it took.
func (b *Buffer) Write(p []byte) int {
	if len(p) > b.Free() {
		p = p[:b.Free()]
	}
	if len(p) == 0 {
		return 0
	}
	b.reserve(b.n + len(p))
	tail := (b.head + b.n) % len(b.buf)
	c := copy(b.buf[tail:], p)
	if c < len(p) {
		copy(b.buf, p[c:])
	}
	b.n += len(p)
	return len(p)
}

// Fill appends up to k bytes (at most Free()) read from r straight into
// the ring, sparing the caller a staging copy. Like io.ReadFull it returns
// how many bytes it took and r's error if fewer than asked; those bytes are
// kept.
func (b *Buffer) Fill(r io.Reader, k int) (int, error) {
	k = min(k, b.Free())
	if k <= 0 {
		return 0, nil
	}
	b.reserve(b.n + k)
	tail := (b.head + b.n) % len(b.buf)
	first := min(k, len(b.buf)-tail)
	n, err := io.ReadFull(r, b.buf[tail:tail+first])
	b.n += n
	if err == nil && first < k {
		var m int
		m, err = io.ReadFull(r, b.buf[:k-first])
		b.n += m
		n += m
	}
	return n, err
}

// reserve grows the backing array (doubling, bounded by cap) to hold need bytes.
func (b *Buffer) reserve(need int) {
	if need <= len(b.buf) {
		return
	}
	size := len(b.buf)
	if size < minAlloc {
		size = minAlloc
	}
	for size < need {
		size *= 2
	}
	if size > b.cap {
		size = b.cap
	}
	nb := make([]byte, size)
	if b.n > 0 {
		x, y := b.Slices(b.start, b.n)
		copy(nb[copy(nb, x):], y)
	}
	b.buf = nb
	b.head = 0
}

// Peek copies bytes from stream offset off into dst and returns how many;
// 0 if off is outside [Start, End).
func (b *Buffer) Peek(off uint64, dst []byte) int {
	x, y := b.Slices(off, len(dst))
	n := copy(dst, x)
	return n + copy(dst[n:], y)
}

// Slices is a zero-copy view of [off, off+n), clamped to End, in two parts
// where the ring wraps. Both are nil if off is outside [Start, End). The view
// is valid until the next Write, Trim or SetCap.
func (b *Buffer) Slices(off uint64, n int) (first, second []byte) {
	if off < b.start || off >= b.End() || n <= 0 {
		return nil, nil
	}
	rel := int(off - b.start)
	if n > b.n-rel {
		n = b.n - rel
	}
	i := (b.head + rel) % len(b.buf)
	if i+n <= len(b.buf) {
		return b.buf[i : i+n], nil
	}
	return b.buf[i:], b.buf[:n-(len(b.buf)-i)]
}

// Trim drops the bytes below una (the cumulative acknowledgement). An una
// below Start is ignored; one beyond End empties the buffer, and the buffer
// then continues from una, since a FIN takes an offset that holds no byte.
func (b *Buffer) Trim(una uint64) {
	if una <= b.start {
		return
	}
	if una >= b.End() {
		b.start = una
		b.head, b.n = 0, 0
		return
	}
	d := int(una - b.start)
	b.head = (b.head + d) % len(b.buf)
	b.n -= d
	b.start = una
}

// SetCap changes the capacity (send-buffer autotuning). Shrinking below Len
// is refused with ErrShrink; a backing array larger than the new capacity is
// reallocated down.
func (b *Buffer) SetCap(n int) error {
	if n < 0 {
		return fmt.Errorf("%w: %d", ErrCap, n)
	}
	if n < b.n {
		return fmt.Errorf("%w: capacity %d, holding %d", ErrShrink, n, b.n)
	}
	b.cap = n
	if len(b.buf) > n {
		nb := make([]byte, n)
		if b.n > 0 {
			x, y := b.Slices(b.start, b.n)
			copy(nb[copy(nb, x):], y)
		}
		b.buf = nb
		b.head = 0
	}
	return nil
}
