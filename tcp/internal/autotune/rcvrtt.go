package autotune

import "time"

// RcvRTT estimates the round trip at a receiver that may send no data of its
// own, for OnRead's measurement round: without timestamps, the time one
// advertised window takes to arrive (it is at least one RTT, so the smaller
// samples are kept); with timestamps, the age of the TSecr echoed on arriving
// data (RFC 7323 §4.1 from the receiver's side).
type RcvRTT struct {
	edge  uint64        // sequence offset to wait for
	since time.Duration // when the edge was set
	armed bool
	rtt   time.Duration
}

// OnData notes in-order data up to rcvNxt at now; rightEdge is RCV.NXT plus
// the window now advertised. When the edge set one window ago is reached, the
// elapsed time is a sample, and a new edge is set.
func (r *RcvRTT) OnData(now time.Duration, rcvNxt, rightEdge uint64) {
	if !r.armed {
		r.edge, r.since, r.armed = rightEdge, now, true
		return
	}
	if rcvNxt < r.edge {
		return
	}
	r.sample(now-r.since, true)
	r.edge, r.since = rightEdge, now
}

// OnTimestampSample takes a sample from a timestamp echo: now minus the time
// the echoed TSval was sent.
func (r *RcvRTT) OnTimestampSample(rtt time.Duration) { r.sample(rtt, false) }

func (r *RcvRTT) sample(s time.Duration, upperBound bool) {
	if s <= 0 {
		return
	}
	switch {
	case r.rtt == 0 || s < r.rtt:
		r.rtt = s
	case !upperBound:
		r.rtt = (7*r.rtt + s) / 8
	}
}

// RTT is the estimate, 0 before any sample.
func (r *RcvRTT) RTT() time.Duration { return r.rtt }
