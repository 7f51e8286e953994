package tcp

// ACK coalescing over an inbound backlog.
//
// Departure from RFC 5681 §4.2 (and RFC 9293 §3.8.6.3), which say a receiver
// SHOULD ACK at least every second full-sized segment: while the endpoint is
// writing its outbox (unlock's flush, with the lock released), segments that
// arrive meanwhile, nested in that write on a synchronous link or from
// another goroutine, are processed at once but their every-second ACK is
// held, and the flush sends one ACK for them all when its outbox has
// drained, as a receiver that takes a burst as one GRO aggregate does. It is
// safe because:
//   - an ACK built during the flush would leave only after the write under
//     way anyway, so holding it delays what the peer learns by no more than
//     the rest of that backlog's processing, and never waits on a timer;
//   - only the every-second ACK is held: out-of-order, hole-filling,
//     duplicate, short-segment, FIN and window ACKs still go at once, so
//     loss detection (SACK, duplicate ACKs) sees what it did;
//   - the hold is capped at coalesceCap segments (16, or a quarter of the
//     receive buffer if less; an aggregate counts as the full segments it
//     holds, segmentsIn, so one of 16 or more is never held), so the peer's window and ACK clock never wait
//     on a long backlog; the sender takes the stretch ACK as every segment
//     it delivers (wholeSegmentCredit), within cc's per-ACK growth limit;
//   - it needs a backlog: where segments arrive one at a time (virtual
//     time, where the wire delivers from the clock's goroutine and a write
//     only queues) nothing arrives during a flush and nothing changes.

// maxCoalesce is the most full segments one held ACK covers.
const maxCoalesce = 16

// holdAck reports whether the every-second ACK now owed is held for the
// flush under way (see above), and holds it.
func (e *endpoint) holdAck() bool {
	// control:tcp-ack-coalescing-off
	if e.ackNow != ackEverySecond || !e.flushing || e.ackPending >= e.coalesceCap() {
		return false
	}
	e.ackNow = ackNone
	e.ackHeld = true
	e.p.st.acksCoalesced.Inc()
	return true
}

// coalesceCap is the most full segments an ACK may be held for: 16, and at
// most a quarter of the receive buffer.
func (e *endpoint) coalesceCap() int {
	return min(maxCoalesce, e.rcvBuf/4/max(e.smss, 1))
}

// sendHeldAck sends the ACK held for the backlog once the flush's outbox has
// drained; any segment sent since carried it already.
func (e *endpoint) sendHeldAck() {
	e.ackHeld = false
	if e.ackPending > 0 && e.state.synchronized() {
		e.sendAck(ackEverySecond)
	}
}
