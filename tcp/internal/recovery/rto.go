package recovery

// The retransmission timeout (RFC 6298 §5.4–§5.7, RFC 8985 §6.3): the
// timer's expiry starts an RTO recovery whose point is SND.NXT; rtxq marks
// the flight lost and cwnd restarts at one segment (cc.OnRTO). Only these
// timer retransmissions spend the give-up budget; ACK-clocked ones never do
// (seed 000), and any progress refills it (OnProgress).

type rto struct {
	attempts int
	// tsVal is the TSval of the timeout's retransmission: an ACK echoing an
	// older one answers the original transmission (RFC 3522, undo.go).
	tsVal uint32
}

// OnRTO records a retransmission timeout at SND.NXT sndNxt, whose
// retransmission carries tsVal, and returns the number of timeouts since the
// last progress, this one included: the caller gives up past its budget
// (RFC 9293 §3.8.3's R2).
func (r *Recovery) OnRTO(sndUna, sndNxt uint64, tsVal uint32) int {
	r.rto.attempts++
	r.begin(RTO, sndUna, sndNxt)
	r.fastRtx = false
	r.reno.head = false
	r.rto.tsVal = tsVal
	return r.rto.attempts
}

// RTOAttempts is the timeouts since the last progress.
func (r *Recovery) RTOAttempts() int { return r.rto.attempts }
