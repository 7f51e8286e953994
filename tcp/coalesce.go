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
//   - the hold is capped at coalesceCap segments (64 KB of full segments but
//     at least 16, or a quarter of the receive buffer if less; an aggregate
//     counts as the full segments it holds, segmentsIn, so one of the cap or
//     more is never held): a burst gets about one ACK per 64 KB, so the
//     peer's window and ACK clock never wait on a long burst; and a burst
//     held while its link never reports the end still has the delayed-ACK
//     timer, armed as for any unacknowledged segment;
//   - the sender takes the stretch ACK as every segment it delivers
//     (wholeSegmentCredit): CUBIC grows by the bytes acknowledged (RFC 9438
//     §4.2), slow start by at most L·SMSS an ACK (RFC 9406 §4.2). An unpaced
//     sender's L = 8 (cc/hystart.go hsL) makes that 1.5× a round on
//     16-segment ACKs and 1.18× on 45-segment ones: slower, never faster,
//     than every-second ACKs, and different from the 16-segment cap only
//     where a flight comes in bursts of more than 16 segments. A fresh
//     connection's 128 KB buffer keeps the cap at a quarter of it (22
//     segments at MSS 1460) until autotuning grows it, and slow start's first
//     flights (10, 20 segments) fit under either cap or nearly. A Linux
//     receiver with GRO ACKs such a 64 KB aggregate once (one ACK per skb of
//     more than one MSS), so a sender meets the same stretch from it. Its ACK
//     clock releases up to 64 KB at once, no more than one burst's worth,
//     which the link just showed it carries. Its RTT samples come at the
//     burst's end, late by at most the burst's processing (microseconds in
//     memory, one poll on a NIC); paced HyStart++ counts a stretch ACK's
//     samples (cc/hystart.go onRTT), so a round still has the samples its
//     delay check needs;
//   - it needs a backlog or a burst: where segments arrive one at a time
//     (virtual time, where the wire delivers from the clock's goroutine, a
//     write only queues and no burst is reported, unless the wire models
//     the receiving card's poll, nic/wire's GRO) nothing changes.

// maxCoalesce is the fewest full segments one held ACK may cover, and
// coalesceBytes the payload it may cover when that is more segments: one
// 64 KB GSO packet's worth, what the qdisc gathers into one link write and
// a pipe or ring delivers as one burst. With a cap of 16 segments, a burst
// at MTU 1500 (up to 45 segments) drew two every-second ACKs and one at its
// end; with 64 KB, one (osbench cpu -bytes 300000000 -tso off -cores 1, MTU
// 1500, the write's tail corked: pure ACKs per MB every-second 33 and
// burst-end 23 with 16 segments, 2.7 and 26 with 64 KB; packets per MB 748
// and 720, gVisor's 726). At MTU 9000 (16 segments = 143 KB) nothing
// changes.
const (
	maxCoalesce   = 16
	coalesceBytes = 64 << 10
)

// aggregateCoalesceBytes is the payload one held ACK may cover in a link's
// burst when the segment that owes it is an aggregate (a GRO or a TAP's GSO
// frame, more than one full segment): four 64 KB aggregates, still at most
// a quarter of the receive buffer. Further departure from RFC 9293
// §3.8.6.3 and RFC 5681 §4.2: an aggregate already stands for the tens of
// segments it was cut from, and its ACK is held past one 64 KB aggregate
// only while the link hands over several at once. It is safe because:
//   - bytes: at most a quarter of the receive buffer, so the sender keeps
//     three quarters of the window to send into while the ACK is held, and
//     a fresh connection's buffer (128 KB, a quarter below one aggregate)
//     ACKs each aggregate at once as before, through slow start's first
//     flights;
//   - time: the hold ends with the burst, which ends when the device has
//     nothing more ready or after the link's budget (nic/tap: 64 frames),
//     never on a timer or the wire; 256 KB ends it first;
//   - ramp: it applies only where one burst hands over more than 64 KB of
//     aggregates, frames that waited at the device for the reader (a TAP's
//     queue, a poll of a ring at MTU 9000, gso.NewPipe's write of several
//     GSO packets); one aggregate a burst, or a poll's 64 wire frames at
//     MTU 1500, never reaches the larger cap, so those ACKs are unchanged.
//     Where it applies, a sender that caps growth per ACK in slow start
//     (ours unpaced, RFC 9406 §4.3's L = 8) grows by L segments per 256 KB
//     instead of per 64 KB: slower, never faster, and only once the
//     receive buffer has grown past 1 MB (the quarter bound), a window
//     already well into its ramp;
//   - the ACK carries every byte and the window: a kernel sender (no
//     per-ACK growth limit) takes it as the bytes it acknowledges, ours as
//     its whole segments (wholeSegmentCredit).
//
// Against the kernel across a TAP with GRO (osbench cpu -peer linux -dir
// from, MTU 1500) our receiver sent 15.4 ACK frames a MB at 64 KB, one an
// aggregate, each a TAP write that ran the kernel sender's ACK processing
// inline; gVisor's sent 3.0.
const aggregateCoalesceBytes = 256 << 10

// holdAck reports whether the every-second ACK now owed is held for the
// flush under way or the burst that delivered the segment (see above), and
// holds it.
func (e *endpoint) holdAck() bool {
	// control:tcp-ack-coalescing-off
	if e.ackNow != ackEverySecond || e.ackPending >= e.coalesceCap(e.holdBytes()) {
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

// coalesceCap is the most full segments an ACK may be held for: bytes of
// them but at least 16, and at most a quarter of the receive buffer.
func (e *endpoint) coalesceCap(bytes int) int {
	smss := max(e.smss, 1)
	// control:tcp-ack-coalescing-segment-cap
	return min(max(maxCoalesce, bytes/smss), e.rcvBuf/4/smss)
}

// holdBytes is the payload the ACK now owed may be held for: more when a
// link's burst brought the segment in hand and it is an aggregate
// (aggregateCoalesceBytes); a flush's hold stays at coalesceBytes.
func (e *endpoint) holdBytes() int {
	// control:tcp-aggregate-burst-cap
	if !e.flushing && e.rxBurst != nil && e.rxAggregate {
		return aggregateCoalesceBytes
	}
	return coalesceBytes
}

// sendHeldAck sends the ACK held for the backlog once the flush's outbox has
// drained; any segment sent since carried it.
func (e *endpoint) sendHeldAck() {
	e.ackHeld = false
	if e.ackPending > 0 && e.state.synchronized() {
		e.sendAck(ackEverySecond)
	}
}
