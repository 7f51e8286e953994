package recovery

// Proportional Rate Reduction (RFC 6937 §3): while the pipe is above
// ssthresh, a fast recovery sends in proportion to what the receiver reports
// delivered, so the flight comes down to ssthresh smoothly over one round
// trip; below it, PRR-SSRB slow-starts back up, never faster than what was
// delivered plus one segment.

type prr struct {
	recoverFS uint64 // RecoverFS: the flight when the recovery began
	delivered uint64 // prr_delivered
	out       uint64 // prr_out
	sndcnt    int64  // what may still be sent on this ACK
}

// OnDelivered is RFC 6937 §3's per-ACK step in a fast or NewReno recovery:
// delivered bytes left the network (cumulatively acked, SACKed, or one
// segment per duplicate ACK without SACK), pipe is RFC 6675's pipe after the
// ACK and ssthresh the reduced threshold.
func (r *Recovery) OnDelivered(delivered, pipe, ssthresh uint64) {
	if !r.usesPRR() {
		return
	}
	p := &r.prr
	p.delivered += delivered
	ss := max(ssthresh, r.smss)
	var sndcnt int64
	if pipe > ss {
		// CEIL(prr_delivered · ssthresh / RecoverFS) - prr_out
		// control:tcp-recovery-without-prr
		sndcnt = int64((p.delivered*ss+p.recoverFS-1)/p.recoverFS) - int64(p.out)
	} else {
		// PRR-SSRB: min(ssthresh - pipe, max(prr_delivered - prr_out, DeliveredData) + MSS)
		limit := int64(max(p.delivered-min(p.out, p.delivered), delivered)) + int64(r.smss)
		// control:tcpinternal-recovery-prr-ssrb-unbounded
		sndcnt = min(int64(ss-pipe), limit)
	}
	p.sndcnt = max(sndcnt, 0)
}

// PRRSendCount is what PRR lets out now (sndcnt), for tests and traces.
func (r *Recovery) PRRSendCount() int64 { return r.prr.sndcnt }

func (p *prr) allows(n uint64) bool { return int64(n) <= p.sndcnt }

func (p *prr) sent(n uint64) {
	p.out += n
	p.sndcnt -= int64(n)
}
