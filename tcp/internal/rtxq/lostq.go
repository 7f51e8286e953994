package rtxq

// The lost queue: segments marked lost and waiting for a resend, by id (so
// by sequence), in a binary min-heap. NextToRetransmit hands out the lowest
// at the cost of the entries it drops, instead of scanning the queue from a
// hint past every segment that is not lost. Entries go stale (the segment
// was resent, SACKed or acknowledged) and are dropped when they reach the
// top; a segment is queued at most once at a time (Seg.queued), so the heap
// never holds more entries than the queue holds segments.

// queueLost queues id as waiting for a resend.
func (q *Queue) queueLost(id uint64) {
	s := q.at(id)
	if s.queued {
		return
	}
	s.queued = true
	h := append(q.lostQ, id)
	for i := len(h) - 1; i > 0; {
		p := (i - 1) / 2
		if h[p] <= h[i] {
			break
		}
		h[p], h[i] = h[i], h[p]
		i = p
	}
	q.lostQ = h
}

// popLost drops the lowest entry.
func (q *Queue) popLost() {
	h := q.lostQ
	if id := h[0]; q.held(id) {
		q.at(id).queued = false
	}
	n := len(h) - 1
	h[0] = h[n]
	h = h[:n]
	for i := 0; ; {
		c := 2*i + 1
		if c >= n {
			break
		}
		if c+1 < n && h[c+1] < h[c] {
			c++
		}
		if h[i] <= h[c] {
			break
		}
		h[i], h[c] = h[c], h[i]
		i = c
	}
	q.lostQ = h
}

// waiting reports whether s waits for a resend.
func waiting(s *Seg) bool { return s.Lost && !s.RetransInFlight && !s.Sacked }
