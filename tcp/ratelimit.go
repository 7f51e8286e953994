// Rate limits on the ACKs a connection owes to segments it drops: without
// them every blind segment is reflected, and two ends that disagree about
// the sequence space (after an on-path injection) ACK each other forever.

package tcp

import (
	"sync"
	"time"

	"gvisor.dev/gvisor/pkg/tcpip/header"
)

const (
	// invalidAckInterval is the least time between two ACKs one connection
	// sends for unacceptable segments (out of window, PAWS, bad ACK) or as
	// RFC 5961 challenges: about two a second, as Linux allows by default.
	// RFC 9293 §3.10.7.4 asks for an ACK each time; RFC 5961 §7 and RFC
	// 7323 §5.3 leave room to limit them. A peer that really is out of step
	// still hears from us twice a second, which is enough to resynchronize.
	invalidAckInterval = 500 * time.Millisecond

	// challengeAcksPerSecond bounds the challenge ACKs of the whole stack
	// (RFC 5961 §7's system-wide limit), so a flood spread over many
	// connections is not reflected either.
	challengeAcksPerSecond = 1000
)

// owedAck asks for the ACK a check that drops s owes the peer. Data or a
// FIN at or just below RCV.NXT (a retransmission, whose sender needs our ACK
// and D-SACK, or a zero-window probe) is answered at once; anything else is
// rate limited per connection.
func (e *endpoint) owedAck(s *segment, segOff uint64, now time.Duration) {
	carries := (s.data.n > 0 || s.has(header.TCPFlagFin)) && !s.has(header.TCPFlagSyn)
	if carries && segOff <= e.rcvNxt && e.rcvNxt-segOff <= uint64(e.p.opts.ReceiveBufferMax) {
		e.owe(ackDuplicate)
		return
	}
	e.limitedAck(now)
}

// limitedAck asks for an ACK unless the connection sent one for an
// unacceptable segment less than invalidAckInterval ago.
func (e *endpoint) limitedAck(now time.Duration) {
	if e.p.mayAnswer(&e.invalidAcks, false, now) {
		e.owe(ackInvalid)
	}
}

// challengeAck sends an RFC 5961 challenge ACK within the connection's and
// the stack's limits (§7).
func (e *endpoint) challengeAck(now time.Duration) {
	if e.p.mayAnswer(&e.invalidAcks, true, now) {
		e.sendAck(ackInvalid)
	}
}

// ackLimit is when a connection (or a request, synqueue.go) last sent an
// ACK for an unacceptable segment.
type ackLimit struct {
	at   time.Duration
	sent bool
}

// mayAnswer reports whether an ACK for an unacceptable segment, or a
// challenge ACK, may go now within the connection's limit l and, for a
// challenge, the stack's; it counts the ones that may not, and records the
// one that may.
func (p *protocol) mayAnswer(l *ackLimit, challenge bool, now time.Duration) bool {
	// control:hosttests-invalid-acks-unlimited
	if l.sent && now-l.at < invalidAckInterval {
		p.st.acksRateLimited.Inc()
		return false
	}
	if challenge && !p.challenges.allow(now) {
		p.st.challengeRateLimited.Inc()
		return false
	}
	l.sent, l.at = true, now
	if challenge {
		p.st.challengeAcks.Inc()
	}
	return true
}

// stackLimit is a budget of events per one-second interval shared by every
// endpoint of a protocol (they run on different goroutines in real time,
// hence the lock). Each interval's budget is drawn between half the limit
// and the limit: a fixed stack-wide budget lets an off-path attacker count,
// by exhausting it, the challenge ACKs another connection sends, and so
// learn its sequence numbers (the side channel reported against Linux in
// 2016).
type stackLimit struct {
	mu     sync.Mutex
	limit  int
	seed   uint64
	start  time.Duration
	n, max int
}

func newStackLimit(limit int, seed uint64) *stackLimit {
	return &stackLimit{limit: limit, seed: seed}
}

func (l *stackLimit) allow(now time.Duration) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.max == 0 || now-l.start >= time.Second || now < l.start {
		l.seed = l.seed*6364136223846793005 + 1442695040888963407
		half := l.limit / 2
		l.start, l.n, l.max = now, 0, l.limit-half+int((l.seed>>33)%uint64(half+1))
	}
	// control:tcp-no-stack-challenge-limit
	if l.n >= l.max {
		return false
	}
	l.n++
	return true
}
