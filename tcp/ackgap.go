package tcp

import "time"

// ackGaps measures the peer's ACK aggregation as the probe timeout sees it:
// the longest time an ACK took to follow the previous ACK, or the first
// send after one that left nothing outstanding, while data was in flight
// all along. A peer that acknowledges once per aggregate (GRO, a Wi-Fi block
// acknowledgement, the t14 path's 20 ms hold) holds ACKs that long on a
// lossless path, which a PTO of 2·SRTT alone (RFC 8985 §7.2) mistakes for a
// tail loss. Intervals that span a timer's firing are not counted: those are
// losses, not aggregation.
type ackGaps struct {
	from    time.Duration // start of the open interval
	open    bool          // data in flight since from
	longest time.Duration
	seen    bool
}

// sent notes a data segment leaving at now; it opens an interval if none is.
func (g *ackGaps) sent(now time.Duration) {
	if !g.open {
		g.from, g.open = now, true
	}
}

// acked notes an ACK at now: it closes the open interval if data was in
// flight when it arrived, and opens the next if data still is.
func (g *ackGaps) acked(now time.Duration, wasOutstanding, outstanding bool) {
	if g.open && wasOutstanding && now >= g.from {
		g.longest = max(g.longest, now-g.from)
		g.seen = true
	}
	g.from, g.open = now, outstanding
}

// timedOut drops the open interval: a timer fired inside it.
func (g *ackGaps) timedOut() { g.open = false }

// allowance is what the PTO adds for the peer's ACK aggregation: the
// longest gap seen, or unknown (the worst-case delayed ACK, WCDelAckT) until
// an ACK has shown one.
func (g *ackGaps) allowance(unknown time.Duration) time.Duration {
	// control:hosttests-pto-ignores-ack-aggregation
	if !g.seen {
		return max(unknown, 0)
	}
	return g.longest
}
