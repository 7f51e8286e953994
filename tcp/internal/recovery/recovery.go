// Package recovery is the sender's loss recovery, in one place: which
// recovery is under way (Open, Fast, NewReno or RTO), its recovery point,
// the duplicate-ACK count, Proportional Rate Reduction, the bookkeeping that
// lets a spurious recovery be undone, and the RTO attempt count.
//
// The package is pure, like cc: no I/O, no clock, no counters. The endpoint
// feeds it events (an ACK's progress, a loss RACK detected, a duplicate ACK,
// a timeout, a segment sent) and forwards what it reports to cc, which keeps
// only the window arithmetic, and to rtxq, whose reordering window depends on
// InRecovery. One strategy a file:
//   - sack.go: SACK/RACK fast recovery (RFC 6675 §5, RFC 8985 §6);
//   - newreno.go: duplicate ACKs without SACK (RFC 5681 §3.2, RFC 6582);
//   - rto.go: the retransmission timeout (RFC 6298 §5, RFC 8985 §6.3);
//   - prr.go: how much a fast recovery may send (RFC 6937);
//   - undo.go: spurious recoveries (RFC 2883, RFC 3522, RFC 9438 §4.9).
//
// Sizes are bytes; offsets are the endpoint's 64-bit stream offsets.
package recovery

import "fmt"

// State is the one recovery under way.
type State uint8

const (
	// Open: no recovery; cwnd alone governs sending.
	Open State = iota
	// Fast: a SACK/RACK loss recovery (RFC 6675 §5, RFC 8985 §6); PRR governs sending.
	Fast
	// NewReno: a recovery begun by three duplicate ACKs without SACK
	// information (RFC 6582); PRR governs sending, partial ACKs retransmit.
	NewReno
	// RTO: after a retransmission timeout, until the recovery point is
	// acknowledged; cwnd (restarted at one segment) governs sending.
	RTO
)

func (s State) String() string {
	switch s {
	case Open:
		return "open"
	case Fast:
		return "fast"
	case NewReno:
		return "newreno"
	case RTO:
		return "rto"
	}
	return fmt.Sprintf("State(%d)", int(s))
}

// Recovery is one connection's loss recovery. The zero value is Open and
// usable once SMSS is set by New. Not safe for concurrent use.
type Recovery struct {
	smss  uint64
	state State
	// point is RFC 6675's RecoveryPoint (RFC 6582's "recover"): SND.NXT when
	// the recovery began; the recovery ends when it is cumulatively acked.
	point uint64
	// fastRtx lets the first retransmission of a recovery go whatever the
	// reduced window (RFC 5681 §3.2 step 2, RFC 6675 §5 step 4.2).
	fastRtx bool
	reno    newReno
	prr     prr
	undo    undo
	rto     rto
}

// New returns an Open recovery for a sender of smss-byte segments.
func New(smss int) *Recovery {
	return &Recovery{smss: uint64(max(smss, 1))}
}

// State is the recovery under way.
func (r *Recovery) State() State { return r.state }

// InRecovery reports any recovery, fast or after a timeout: what rtxq's
// reordering window (RFC 8985 §6.2 step 4) and the probe timeout need.
func (r *Recovery) InRecovery() bool { return r.state != Open }

// Point is the recovery point of the recovery under way (or the last one).
func (r *Recovery) Point() uint64 { return r.point }

// OnProgress records an ACK that advanced SND.UNA: the duplicate-ACK count
// and the RTO give-up budget start again (RFC 5681 §3.2, RFC 9293 §3.8.3).
func (r *Recovery) OnProgress() {
	r.reno.dupAcks = 0
	r.rto.attempts = 0
}

// MaybeEnd ends the recovery under way once sndUna has reached its recovery
// point (RFC 6675 §5, RFC 6582 §3.2 step 3, RFC 8985 §6.3), and reports
// whether it did: the caller tells cc (OnRecoveryEnd).
func (r *Recovery) MaybeEnd(sndUna uint64) bool {
	// control:tcpinternal-recovery-ends-before-point
	if r.state == Open || sndUna < r.point {
		return false
	}
	r.state = Open
	r.fastRtx = false
	r.reno.head = false
	return true
}

// OnRollback follows SND.NXT back to sndNxt when the link refused segments
// that were never sent: a recovery point above it would name data that is
// not in flight, and the recovery would outlast the data it covers.
func (r *Recovery) OnRollback(sndNxt uint64) {
	if r.state != Open && r.point > sndNxt {
		r.point = sndNxt
	}
}

// begin starts a recovery of state s with the recovery point sndNxt, and
// PRR's RecoverFS from the flight (RFC 6937 §3, "on entering recovery").
func (r *Recovery) begin(s State, sndUna, sndNxt uint64) {
	r.state = s
	r.point = sndNxt
	r.prr = prr{recoverFS: max(sndNxt-sndUna, 1)}
	r.undo.begin()
}

// MaySend reports whether n more bytes may go now with inFlight bytes in
// the pipe and cwnd the congestion window; rtx marks a retransmission. In a
// fast or NewReno recovery PRR decides, except for the recovery's first
// retransmission; otherwise cwnd does, and a retransmission may always go
// into an empty pipe so an RTO recovery cannot stall. Nothing (n = 0, a bare
// FIN) is always allowed.
func (r *Recovery) MaySend(n, inFlight, cwnd uint64, rtx bool) bool {
	switch {
	case n == 0 || rtx && r.fastRtx:
		return true
	case r.usesPRR():
		return r.prr.allows(n)
	default:
		return inFlight+n <= cwnd || rtx && inFlight == 0
	}
}

// OnSent charges n bytes sent to PRR and, for a retransmission, spends the
// first-retransmission pass and counts it for undo.
func (r *Recovery) OnSent(n uint64, rtx bool) {
	if r.usesPRR() {
		r.prr.sent(n)
	}
	if rtx {
		// control:tcp-ack-clocked-retransmit-counts-toward-giveup
		r.fastRtx = false
		r.undo.retransmitted()
	}
}

// OnRefused takes back a retransmission the link refused: it was never sent,
// so it cannot be reported spurious.
func (r *Recovery) OnRefused(rtx bool) {
	if rtx {
		r.undo.refused()
	}
}

func (r *Recovery) usesPRR() bool { return r.state == Fast || r.state == NewReno }
