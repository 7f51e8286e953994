package rtxq

import "sort"

// The send-order list (RFC 8985 §6.2 step 5's walk without the walk). RACK
// marks lost the segments whose latest transmission came before the most
// recently delivered one and is older than RACK.rtt + reo_wnd. Walking the
// queue in sequence order to find them costs the whole queue on every ACK
// (issue 9: 73% of an ACK's CPU at 82k segments). Instead the segments that
// can still be marked (neither SACKed nor lost and waiting for a resend) are
// kept in a list in send order: its head is the oldest transmission, send
// times rise along it, so the walk stops at the first segment that is not
// lost yet and costs one step per segment it marks.

// noID ends the list.
const noID = ^uint64(0)

// held reports whether id names a segment in the queue. A segment's id is
// the number of segments pushed before it, so ids rise with sequence.
func (q *Queue) held(id uint64) bool {
	return id >= q.base+uint64(q.head) && id < q.base+uint64(len(q.segs))
}

// at is the segment id names, which must be held.
func (q *Queue) at(id uint64) *Seg { return &q.segs[id-q.base] }

// idOf is the id of the segment at index i of live().
func (q *Queue) idOf(i int) uint64 { return q.base + uint64(q.head+i) }

// link appends id at the list's tail: it was just sent.
func (q *Queue) link(id uint64) {
	s := q.at(id)
	s.prev, s.next, s.linked = q.last, noID, true
	if q.last == noID {
		q.first = id
	} else {
		q.at(q.last).next = id
	}
	q.last = id
}

// unlink takes id out of the list, if it is in it.
func (q *Queue) unlink(id uint64) {
	s := q.at(id)
	if !s.linked {
		return
	}
	if s.prev == noID {
		q.first = s.next
	} else {
		q.at(s.prev).next = s.next
	}
	if s.next == noID {
		q.last = s.prev
	} else {
		q.at(s.next).prev = s.prev
	}
	s.linked = false
}

// markable reports whether RACK may still mark s lost: it is in flight.
func markable(s *Seg) bool { return !s.Sacked && (!s.Lost || s.RetransInFlight) }

// insertBySend puts id back at its place in send order, walking from the
// tail: only for a transmission taken back just after it was made (a refused
// resend), so the walk passes only the few sent after it.
func (q *Queue) insertBySend(id uint64) {
	s := q.at(id)
	after := q.last
	for after != noID && q.at(after).xmit > s.xmit {
		after = q.at(after).prev
	}
	s.linked = true
	s.prev = after
	if after == noID {
		s.next = q.first
		q.first = id
	} else {
		s.next = q.at(after).next
		q.at(after).next = id
	}
	if s.next == noID {
		q.last = id
	} else {
		q.at(s.next).prev = id
	}
}

// relink rebuilds the list from the segments' marks, after a change that
// makes SACKed segments markable again (reneging, RFC 2018 §8).
func (q *Queue) relink() {
	var ids []uint64
	l := q.live()
	for i := range l {
		l[i].linked = false
		if markable(&l[i]) {
			ids = append(ids, q.idOf(i))
		}
	}
	sort.Slice(ids, func(a, b int) bool { return q.at(ids[a]).xmit < q.at(ids[b]).xmit })
	q.first, q.last = noID, noID
	for _, id := range ids {
		q.link(id)
	}
}
