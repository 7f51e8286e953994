package tcp

import "github.com/netramp/netramp/tcp/internal/rtxq"

// truncateQueue drops every segment at or above end from the retransmission
// queue, as if it had never been pushed: the link refused those segments, so
// they were never sent. The queue has no tail removal, so it is rebuilt from
// its segments below end, keeping send times and retransmission counts; SACK
// and lost marks are rebuilt by the next ACKs and RACK. Refusals are rare
// (the sender reads the card's credit before each segment), so the O(n)
// rebuild is off the fast path.
func truncateQueue(q *rtxq.Queue, maxSegs int, end uint64) *rtxq.Queue {
	if q.Nxt() <= end {
		return q
	}
	segs := q.Segs(nil)
	nq := rtxq.New(maxSegs)
	for _, s := range segs {
		if s.Start >= end {
			break
		}
		fin := s.Fin
		e := s.End
		if e > end {
			e, fin = end, false
		}
		if nq.Push(s.Start, e, s.FirstSent, fin) != nil {
			break
		}
		for i := 0; i < s.Retrans; i++ {
			nq.Retransmitted(s.Start, s.LastSent)
		}
	}
	return nq
}
