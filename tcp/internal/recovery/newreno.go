package recovery

// NewReno (RFC 5681 §3.2, RFC 6582 §3.2) for ACKs that carry no SACK
// information, whether or not SACK was negotiated (a peer may stop sending
// blocks). The third duplicate ACK starts a recovery and retransmits the
// segment at SND.UNA; every partial ACK inside it retransmits the new head.

// dupThresh is RFC 5681 §3.2's three duplicate ACKs.
const dupThresh = 3

type newReno struct {
	dupAcks int
	// head asks the sender to retransmit the segment at SND.UNA next.
	head bool
}

// DupAcks is the duplicate ACKs counted since the last progress.
func (r *Recovery) DupAcks() int { return r.reno.dupAcks }

// OnDupAck counts a duplicate ACK (RFC 5681 §2: no data, no SYN or FIN, no
// progress, data outstanding, no SACK blocks). It returns true on the third
// one when no recovery is under way: the caller then calls StartNewReno,
// after RACK has had its say on the same ACK.
func (r *Recovery) OnDupAck() bool {
	r.reno.dupAcks++
	return r.reno.dupAcks == dupThresh && r.state == Open
}

// StartNewReno starts a NewReno recovery with the recovery point sndNxt
// (RFC 6582 §3.2 step 2) and asks for the head's retransmission at once. It
// returns false, changing nothing, when a recovery is already under way.
func (r *Recovery) StartNewReno(sndUna, sndNxt uint64) bool {
	if r.state != Open {
		return false
	}
	r.begin(NewReno, sndUna, sndNxt)
	r.fastRtx = true
	r.reno.head = true
	return true
}

// OnPartialAck handles an ACK without SACK blocks that advanced SND.UNA to
// sndUna: inside a NewReno recovery and below its point it is a partial ACK,
// and the new head is retransmitted at once (RFC 6582 §3.2 step 3).
func (r *Recovery) OnPartialAck(sndUna uint64) {
	// control:tcp-newreno-partial-ack-ignored
	if r.state == NewReno && sndUna < r.point {
		r.reno.head = true
		r.fastRtx = true
	}
}

// WantHead reports that the segment at SND.UNA should be retransmitted next
// (NewReno's fast retransmit or a partial ACK) when no segment is marked lost.
func (r *Recovery) WantHead() bool { return r.reno.head }

// HeadDone clears WantHead: the head was sent, or there is none.
func (r *Recovery) HeadDone() { r.reno.head = false }
