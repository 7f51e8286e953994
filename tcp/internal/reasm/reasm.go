// Package reasm is the receiver's out-of-order store (RFC 9293 §3.10.7.4):
// segments that arrived beyond RCV.NXT wait here until the hole before them
// is filled, and their ranges are the SACK blocks (RFC 2018).
//
// The store must hold a whole advertised window: a store smaller than the
// window it advertised turns one lost segment into the loss of everything
// after it in that window. Its bounds are fixed by the caller (New, SetLimit,
// SetMaxRanges), never by the peer: at most limit payload bytes, at most
// maxRanges disjoint ranges, and at most about one chunk per 64 bytes held,
// so a flood of one-byte fragments costs bounded bookkeeping.
package reasm

import (
	"errors"
	"fmt"
	"sort"
)

// ErrFull reports data refused because the store holds limit bytes, or
// because it would need a new range beyond the range bound. The caller drops
// and counts; the refused bytes are retransmitted by the peer.
var ErrFull = errors.New("reasm: out-of-order store full")

// ErrRange reports a segment whose end overflows the 64-bit offset space.
var ErrRange = errors.New("reasm: segment range overflows")

// Range is the half-open byte range [Start, End) of stream offsets.
type Range struct{ Start, End uint64 }

// Len is End-Start.
func (r Range) Len() uint64 { return r.End - r.Start }

// bytesPerChunk bounds bookkeeping: a range holding more chunks than
// bytes/bytesPerChunk+1 is compacted into one, so each insert copies at most
// about bytesPerChunk bytes amortized.
const bytesPerChunk = 64

type span struct {
	Range
	chunks deque  // in order, lengths sum to Len()
	stamp  uint64 // when it last changed, for RFC 2018 §4's block order
}

// deque is a list of chunks with room at both ends, so that data arriving
// just before a span (a retransmission filling a hole from the right) costs
// O(1) amortized, like data arriving after it.
type deque struct {
	buf    [][]byte
	lo, hi int
}

func (d *deque) len() int           { return d.hi - d.lo }
func (d *deque) items() [][]byte    { return d.buf[d.lo:d.hi] }
func (d *deque) pushBack(c []byte)  { d.grow(0, 1); d.buf[d.hi] = c; d.hi++ }
func (d *deque) pushFront(c []byte) { d.grow(1, 0); d.lo--; d.buf[d.lo] = c }

// grow makes room for front items before lo and back items after hi.
func (d *deque) grow(front, back int) {
	if d.lo >= front && len(d.buf)-d.hi >= back {
		return
	}
	n := d.len()
	head := n/2 + front + 1
	nb := make([][]byte, head+n+n/2+back+1)
	copy(nb[head:], d.items())
	d.buf, d.lo, d.hi = nb, head, head+n
}

// appendAll moves every chunk of o after d's (o is left empty).
func (d *deque) appendAll(o *deque) {
	d.grow(0, o.len())
	d.hi += copy(d.buf[d.hi:], o.items())
	*o = deque{}
}

// prependAll moves every chunk of o before d's (o is left empty).
func (d *deque) prependAll(o *deque) {
	d.grow(o.len(), 0)
	d.lo -= o.len()
	copy(d.buf[d.lo:], o.items())
	*o = deque{}
}

// Store is the out-of-order queue. Not safe for concurrent use.
type Store struct {
	spans     []span // sorted, disjoint, not adjacent
	bytes     int
	limit     int
	maxRanges int
	clock     uint64 // change counter
	base      uint64 // RCV.NXT of the last Take: data below it is a duplicate
}

// DefaultMaxRanges is the range bound New picks for a limit: one range per
// 1 KiB of window, at least 64. A window needs one range per hole, and with
// every other segment lost and segments of at least 512 bytes that is one
// range per 1 KiB.
func DefaultMaxRanges(limit int) int {
	n := limit / 1024
	if n < 64 {
		n = 64
	}
	return n
}

// New returns an empty store holding at most limit bytes. Set limit to the
// largest window the receiver will advertise.
func New(limit int) *Store {
	if limit < 0 {
		limit = 0
	}
	return &Store{limit: limit, maxRanges: DefaultMaxRanges(limit)}
}

// SetLimit changes the byte bound; the caller keeps it at least the window it
// has advertised. Bytes already held are never discarded: a limit below them
// only refuses new data.
func (s *Store) SetLimit(n int) {
	if n < 0 {
		n = 0
	}
	s.limit = n
}

// Limit is the byte bound.
func (s *Store) Limit() int { return s.limit }

// SetMaxRanges changes the range bound (at least 1).
func (s *Store) SetMaxRanges(n int) {
	if n < 1 {
		n = 1
	}
	s.maxRanges = n
}

// Bytes is the payload held.
func (s *Store) Bytes() int { return s.bytes }

// Ranges is the number of disjoint ranges held.
func (s *Store) Ranges() int { return len(s.spans) }

// Empty reports whether nothing is held.
func (s *Store) Empty() bool { return len(s.spans) == 0 }

// Insert copies p, the bytes at stream offset off, into the store. Bytes it
// already holds, and bytes below the last Take's RCV.NXT, are trimmed and not
// counted. It stores the new bytes in offset order while they fit under the
// limit and the range bound; what does not fit is refused with ErrFull and
// stored says how many new bytes were kept.
func (s *Store) Insert(off uint64, p []byte) (stored int, err error) {
	if len(p) == 0 {
		return 0, nil
	}
	end := off + uint64(len(p))
	if end < off {
		return 0, fmt.Errorf("%w: [%d, +%d)", ErrRange, off, len(p))
	}
	if off < s.base {
		if end <= s.base {
			return 0, nil
		}
		p = p[s.base-off:]
		off = s.base
	}
	s.clock++
	// Walk the gaps of [off, end) that no span covers, in offset order.
	cur := off
	for cur < end {
		j := sort.Search(len(s.spans), func(k int) bool { return s.spans[k].End > cur })
		if j < len(s.spans) && s.spans[j].Start <= cur {
			cur = s.spans[j].End // held already
			continue
		}
		gapEnd := end
		if j < len(s.spans) && s.spans[j].Start < gapEnd {
			gapEnd = s.spans[j].Start
		}
		n := int(gapEnd - cur)
		// control:tcpinternal-reasm-store-half-of-limit
		// control:tcpinternal-reasm-store-quarter-of-limit
		if room := s.limit - s.bytes; n > room {
			n = room
		}
		if n <= 0 {
			return stored, fmt.Errorf("%w: %d of %d bytes held", ErrFull, s.bytes, s.limit)
		}
		piece := append([]byte(nil), p[cur-off:cur-off+uint64(n)]...)
		if !s.place(cur, piece) {
			return stored, fmt.Errorf("%w: %d ranges held", ErrFull, len(s.spans))
		}
		stored += n
		s.bytes += n
		cur += uint64(n)
		if cur < gapEnd {
			return stored, fmt.Errorf("%w: %d of %d bytes held", ErrFull, s.bytes, s.limit)
		}
	}
	return stored, nil
}

// place puts piece, the bytes of a gap starting at off, into the store:
// appended to the span ending at off, prepended to the span starting at its
// end, both (the two merge), or as a new span. It reports false if a new span
// would exceed the range bound.
func (s *Store) place(off uint64, piece []byte) bool {
	end := off + uint64(len(piece))
	j := sort.Search(len(s.spans), func(k int) bool { return s.spans[k].End >= off })
	left, right := -1, -1
	if j < len(s.spans) && s.spans[j].End == off {
		left = j
		if j+1 < len(s.spans) && s.spans[j+1].Start == end {
			right = j + 1
		}
	} else if j < len(s.spans) && s.spans[j].Start == end {
		right = j
	}
	switch {
	case left >= 0 && right >= 0:
		// Merge into whichever side has more chunks, moving the fewer.
		l, r := &s.spans[left], &s.spans[right]
		if l.chunks.len() >= r.chunks.len() {
			l.chunks.pushBack(piece)
			l.chunks.appendAll(&r.chunks)
		} else {
			r.chunks.pushFront(piece)
			r.chunks.prependAll(&l.chunks)
			l.chunks, r.chunks = r.chunks, deque{}
		}
		l.End = r.End
		l.stamp = s.clock
		s.spans = append(s.spans[:right], s.spans[right+1:]...)
		s.compact(left)
		return true
	case left >= 0:
		l := &s.spans[left]
		l.chunks.pushBack(piece)
		l.End = end
		l.stamp = s.clock
		s.compact(left)
		return true
	case right >= 0:
		r := &s.spans[right]
		r.chunks.pushFront(piece)
		r.Start = off
		r.stamp = s.clock
		s.compact(right)
		return true
	}
	if len(s.spans) >= s.maxRanges {
		return false
	}
	s.spans = append(s.spans, span{})
	copy(s.spans[j+1:], s.spans[j:])
	s.spans[j] = span{Range: Range{off, end}, stamp: s.clock}
	s.spans[j].chunks.pushBack(piece)
	return true
}

// compact joins a span's chunks into one when they outnumber its bytes/64+1.
func (s *Store) compact(i int) {
	sp := &s.spans[i]
	// control:tcpinternal-reasm-no-compaction
	if uint64(sp.chunks.len()) <= sp.Len()/bytesPerChunk+1 {
		return
	}
	one := make([]byte, 0, sp.Len())
	for _, c := range sp.chunks.items() {
		one = append(one, c...)
	}
	sp.chunks = deque{}
	sp.chunks.pushBack(one)
}

// Take hands dst every byte now contiguous with rcvNxt, in order, drops any
// held bytes below rcvNxt (duplicates), and returns the new RCV.NXT. The
// slices passed to dst belong to the caller from then on.
func (s *Store) Take(rcvNxt uint64, dst func(p []byte)) (newNxt uint64) {
	if rcvNxt > s.base {
		s.base = rcvNxt
	}
	drop := 0
	for drop < len(s.spans) {
		sp := &s.spans[drop]
		if sp.Start > rcvNxt {
			break
		}
		if sp.End <= rcvNxt {
			s.bytes -= int(sp.Len())
			drop++
			continue
		}
		skip := rcvNxt - sp.Start
		for _, c := range sp.chunks.items() {
			if skip >= uint64(len(c)) {
				skip -= uint64(len(c))
				continue
			}
			if dst != nil {
				dst(c[skip:])
			}
			skip = 0
		}
		s.bytes -= int(sp.Len())
		rcvNxt = sp.End
		drop++
		break
	}
	if drop > 0 {
		n := copy(s.spans, s.spans[drop:])
		for k := n; k < len(s.spans); k++ {
			s.spans[k] = span{}
		}
		s.spans = s.spans[:n]
	}
	if rcvNxt > s.base {
		s.base = rcvNxt
	}
	return rcvNxt
}

// Blocks appends to dst[:0] up to cap(dst) ranges held, the most recently
// changed first (RFC 2018 §4: the first block holds the segment that
// triggered the ACK, then the ones most recently reported).
func (s *Store) Blocks(dst []Range) []Range {
	k := cap(dst)
	dst = dst[:0]
	if k == 0 {
		return dst
	}
	// Top-k by stamp, by insertion: O(ranges·k) with k a handful.
	var stamps [8]uint64
	var st []uint64
	if k <= len(stamps) {
		st = stamps[:0]
	} else {
		st = make([]uint64, 0, k)
	}
	for _, sp := range s.spans {
		if len(dst) == k && sp.stamp <= st[k-1] {
			continue
		}
		j := len(dst)
		if j < k {
			dst = append(dst, Range{})
			st = append(st, 0)
		} else {
			j = k - 1
		}
		// control:tcpinternal-reasm-blocks-by-offset
		for j > 0 && st[j-1] < sp.stamp {
			dst[j], st[j] = dst[j-1], st[j-1]
			j--
		}
		dst[j], st[j] = sp.Range, sp.stamp
	}
	return dst
}

// Held lists every range held, in offset order (for tests and traces).
func (s *Store) Held() []Range {
	out := make([]Range, len(s.spans))
	for i, sp := range s.spans {
		out[i] = sp.Range
	}
	return out
}
