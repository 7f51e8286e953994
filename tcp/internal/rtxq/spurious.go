package rtxq

// Spurious retransmissions: which resends the peer already had, counted
// once per copy. The queue remembers its recent resends (range, send time,
// fate) and matches D-SACKs (RFC 2883) and timestamp echoes (RFC 3522)
// against them.

import "time"

// recentRetx is how many retransmissions are remembered for matching
// D-SACKs and timestamp echoes to them.
const recentRetx = 64

// retxRec is one remembered retransmission: its range, its send time, and
// what is known of its fate.
type retxRec struct {
	Range
	at    time.Duration
	state retxState
}

// retxState is a remembered retransmission's fate as far as spurious
// counting knows it.
type retxState uint8

const (
	retxFresh  retxState = iota // nothing known yet
	retxEchoed                  // counted spurious by a timestamp echo; its D-SACK is still to come
	retxDone                    // accounted: its D-SACK came, or it was needed
)

// remember records a resend of r at now, over the oldest remembered one.
func (q *Queue) remember(r Range, now time.Duration) {
	rec := retxRec{Range: r, at: now}
	if len(q.retxRing) < recentRetx {
		q.retxRing = append(q.retxRing, rec)
	} else {
		q.retxRing[q.retxN%recentRetx] = rec
	}
	q.retxN++
}

// retxOverlaps reports whether r overlaps a remembered retransmission.
func (q *Queue) retxOverlaps(r Range) bool {
	for _, x := range q.retxRing {
		if x.Start < r.End && r.Start < x.End {
			return true
		}
	}
	return false
}

// countDSACK returns the bytes of one D-SACKed range b that match remembered
// retransmissions not yet accounted, and marks them: a D-SACK reports one
// duplicate arrival (RFC 2883 §4), so it accounts for one copy. A copy a
// timestamp echo already counted is taken first, and not counted again. A
// duplicate of a retransmission too old to be remembered is not counted: the
// count errs low, never high.
func (q *Queue) countDSACK(b Range) uint64 {
	var n uint64
	covered := b.Start // bytes of b below covered are accounted
	for {
		best := -1
		for i := range q.retxRing {
			x := &q.retxRing[i]
			if x.state == retxDone || x.End <= covered || x.Start >= b.End {
				continue
			}
			if best < 0 || x.Start < q.retxRing[best].Start ||
				x.Start == q.retxRing[best].Start && x.state == retxEchoed {
				best = i
			}
		}
		if best < 0 {
			return n
		}
		x := &q.retxRing[best]
		lo, hi := max(x.Start, covered), min(x.End, b.End)
		// control:tcpinternal-rtxq-spurious-counted-twice
		if x.state == retxFresh {
			n += hi - lo
		}
		x.state = retxDone
		covered = hi
	}
}

// echoSpurious returns the bytes of s's retransmissions that an ACK
// cumulatively acknowledging s, with timestamp echo echo, shows needless
// (RFC 3522): s is the segment at SND.UNA, so the echo is the TSval of the
// copy of s that arrived first (RFC 7323 §4.3), and every copy sent at or
// after echo was not needed. They are marked, so that the D-SACKs they cause
// later are not counted again.
func (q *Queue) echoSpurious(s *Seg, echo time.Duration) uint64 {
	if echo <= 0 || s.Retrans == 0 || s.Sacked || s.LastSent < echo {
		return 0
	}
	var n uint64
	found := false
	for i := range q.retxRing {
		x := &q.retxRing[i]
		if x.at < echo || x.End <= s.Start || x.Start >= s.End {
			continue
		}
		found = true
		if x.state == retxFresh {
			x.state = retxEchoed
			n += x.End - x.Start
		}
	}
	if !found {
		n = s.Len() // the latest copy, too old to be remembered
	}
	return n
}
