package cc

// renoSlowStart is RFC 5681 §3.1 slow start, used after any loss or RTO and
// in arm A's every slow start: cwnd grows by min(N, SMSS) per ACK (RFC 3465's
// L = 1, which RFC 5681 requires) and never past ssthresh, where congestion
// avoidance takes over.
func renoSlowStart(cwnd, ssthresh, acked, smss int) int {
	if cwnd >= ssthresh {
		return cwnd
	}
	cwnd += min(acked, smss)
	if cwnd > ssthresh {
		cwnd = ssthresh
	}
	return cwnd
}
