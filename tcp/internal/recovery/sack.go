package recovery

// SACK/RACK fast recovery (RFC 6675 §5, RFC 8985 §6.2): rtxq marks segments
// lost by time (RACK) and the endpoint reports the first such loss here. One
// recovery per window: a loss inside a fast or NewReno recovery starts
// nothing (RFC 6675 §5: "if ... not already in loss recovery").

// OnLoss reports that RACK marked data lost with SND.UNA and SND.NXT as
// given. It returns true if that starts a fast recovery; the caller then
// reduces the window once (cc.OnCongestion, RFC 9438 §4.6), and passes the
// reduced ssthresh to OnDelivered with each ACK.
//
// A loss found during an RTO recovery also starts a fast recovery: the
// timeout already reduced ssthresh, so cc counts the event as a repeat loss
// and reduces nothing, but PRR, rather than the one-segment window the
// timeout left, then paces the repair of what RACK found, so a large hole is
// drained in round trips, not timeouts. This departs from RFC 6675 §5.1,
// which leaves the rest of an RTO recovery to slow start; it is safe because
// PRR never sends more than ssthresh allows (RFC 6937 §3, PRR-SSRB).
func (r *Recovery) OnLoss(sndUna, sndNxt uint64) bool {
	// control:tcpinternal-recovery-second-fast-recovery
	if r.usesPRR() {
		return false
	}
	r.begin(Fast, sndUna, sndNxt)
	r.fastRtx = true
	return true
}
