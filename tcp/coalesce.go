package tcp

// ACK coalescing over an inbound backlog or a link's delivery burst.
//
// Departure from RFC 5681 §4.2 (and RFC 9293 §3.8.6.3), which say a receiver
// SHOULD ACK at least every second full-sized segment: segments that arrive
// together are processed at once, but their every-second ACK is held and
// one ACK goes for them all when they have all arrived, as a kernel
// receiver acknowledges what one NAPI poll and its GRO flush hand it. Two
// things tell that segments arrive together:
//   - the endpoint is writing its outbox (unlock's flush, with the lock
//     released) and segments arrive meanwhile, nested in that write on a
//     synchronous link or from another goroutine: the flush sends the ACK
//     when its outbox has drained;
//   - the link says it is delivering a burst (nic.Bursts: an RX ring poll,
//     a read loop draining its file, the frames of one write on an
//     in-memory link; burst.go): the end of the burst sends it, on the
//     link's goroutine, before the link polls again.
//
// It is safe because:
//   - the held ACK waits only for segments that have already arrived: the
//     rest of the backlog or of the burst, processed at once, never a timer
//     or the wire. A flush's ACK would leave only after the write under
//     way anyway; a burst's end comes within the link's bound on one burst
//     (its ring or poll budget). With several goroutines delivering, the end
//     of any burst sends everything held so far (burst.go), so an ACK goes
//     at the end of the burst it was held in or earlier, never later;
//   - only the every-second ACK is held: out-of-order, hole-filling,
//     duplicate, short-segment, FIN and window ACKs still go at once, so
//     loss detection (SACK, duplicate ACKs) sees what it did;
//   - the hold is capped at coalesceCap segments (16, or a quarter of the
//     receive buffer if less; an aggregate counts as the full segments it
//     holds, segmentsIn, so one of 16 or more is never held): a burst of N
//     segments gets about N/16 ACKs, so the peer's window and ACK clock
//     never wait on a long burst; and a burst held while its link never
//     reports the end still has the delayed-ACK timer, armed as for any
//     unacknowledged segment;
//   - the sender takes the stretch ACK as every segment it delivers
//     (wholeSegmentCredit): CUBIC grows by the bytes acknowledged (RFC 9438
//     §4.2), slow start by at most L·SMSS an ACK (RFC 9406 §4.2; an unpaced
//     sender's L = 8 makes that 1.5× a round on 16-segment ACKs, slower,
//     never faster, than every-second ACKs: cc/hystart.go hsL). Its ACK
//     clock releases up to 16 segments at once, no more than one burst's
//     worth, which the link just showed it carries. Its RTT samples come at
//     the burst's end, late by at most the burst's processing (microseconds
//     in memory, one poll on a NIC); paced HyStart++ counts a stretch ACK's
//     samples (cc/hystart.go onRTT), so a round still has the samples its
//     delay check needs;
//   - it needs a backlog or a burst: where segments arrive one at a time
//     (virtual time, where the wire delivers from the clock's goroutine, a
//     write only queues and no burst is reported) nothing changes.

// maxCoalesce is the most full segments one held ACK covers.
const maxCoalesce = 16

// holdAck reports whether the every-second ACK now owed is held for the
// flush under way or the burst that delivered the segment (see above), and
// holds it.
func (e *endpoint) holdAck() bool {
	// control:tcp-ack-coalescing-off
	if e.ackNow != ackEverySecond || e.ackPending >= e.coalesceCap() {
		return false
	}
	switch {
	case e.flushing:
		e.ackHeld = true
	// control:tcp-burst-ack-not-held
	case e.rxBurst != nil && e.rxBurst.hold(e):
		e.burstHeld = true
	default:
		return false
	}
	e.ackNow = ackNone
	e.p.st.acksCoalesced.Inc()
	return true
}

// coalesceCap is the most full segments an ACK may be held for: 16, and at
// most a quarter of the receive buffer.
func (e *endpoint) coalesceCap() int {
	return min(maxCoalesce, e.rcvBuf/4/max(e.smss, 1))
}

// sendHeldAck sends the ACK held for the backlog once the flush's outbox has
// drained; any segment sent since carried it.
func (e *endpoint) sendHeldAck() {
	e.ackHeld = false
	if e.ackPending > 0 && e.state.synchronized() {
		e.sendAck(ackEverySecond)
	}
}
