// Timers on the stack's clock: retransmission, loss probe, reordering,
// delayed ACK, persist, keepalive, pacing, linger and TIME-WAIT.

package tcp

import (
	"time"

	"gvisor.dev/gvisor/pkg/tcpip"
	"gvisor.dev/gvisor/pkg/tcpip/header"
)

// timer is one of an endpoint's timers on the stack's clock: a deadline and
// the callback that runs, with the endpoint locked, once it has passed.
//
// An endpoint's timers (a listener's SYN-ACK timer among them) share one
// place in the protocol's timer queue (timerq.go), which runs the endpoint's
// onClock by the earliest deadline: a connection moves no clock timer of its
// own, where it made one for each kind it used (retransmission, delayed
// ACK, pacing, linger and TIME-WAIT are five for a short connection that
// closes first), three allocations and a stop each. Its place is moved
// lazily: a re-arm to a later deadline (the retransmission timer on every
// ACK, the delayed-ACK timer on every second segment) leaves it where it
// is, and stop leaves it queued; when onClock runs early it queues the
// endpoint again for the earliest deadline left, or not at all. A bulk
// transfer then moves it about once per timeout instead of once per segment
// (issue 12: Reset and Stop took a tenth of this package's CPU).
type timer struct {
	e        *endpoint
	deadline time.Duration // protocol time it is due; 0 = stopped
	fn       func(*endpoint)
}

func (e *endpoint) initTimers() {
	e.tRtx = timer{e: e, fn: (*endpoint).onRetransmitTimer}
	e.tReo = timer{e: e, fn: (*endpoint).onReorderTimer}
	e.tDelack = timer{e: e, fn: (*endpoint).onDelackTimer}
	e.tKeep = timer{e: e, fn: (*endpoint).onKeepaliveTimer}
	e.tPersist = timer{e: e, fn: (*endpoint).onPersistTimer}
	e.tWait = timer{e: e, fn: (*endpoint).onTimeWaitTimer}
	e.tPace = timer{e: e, fn: (*endpoint).onPaceTimer}
	e.tLinger = timer{e: e, fn: (*endpoint).onLingerTimer}
}

// timers are the endpoint's timers in the order a fire runs those due, a
// listener's SYN-ACK timer (synqueue.go) last; nil where it has none.
func (e *endpoint) timers() [9]*timer {
	ts := [9]*timer{&e.tRtx, &e.tReo, &e.tDelack, &e.tKeep, &e.tPersist, &e.tWait, &e.tPace, &e.tLinger}
	if e.lst != nil {
		ts[8] = &e.lst.syn.t
	}
	return ts
}

// arm sets the timer to fire d from now (d <= 0 fires at once, still from
// the clock).
func (t *timer) arm(d time.Duration) { t.armAt(t.e.now(), d) }

// armAt is arm with the clock already read at now.
func (t *timer) armAt(now, d time.Duration) {
	if d < 0 {
		d = 0
	}
	t.deadline = now + d
	if t.deadline == 0 {
		t.deadline = 1
	}
	t.e.clockBy(now, t.deadline)
}

// clockBy makes the endpoint's onClock run by deadline, through the
// protocol's timer queue: moved only if it is set later or not at all.
func (e *endpoint) clockBy(now, deadline time.Duration) {
	// control:tcp-timer-rearm-eager
	if e.clkAt != 0 && e.clkAt <= deadline {
		return // runs first; it sets the clock again for the rest
	}
	e.clkAt = deadline
	e.p.schedule(e, now, deadline)
}

func (t *timer) armed() bool { return t.deadline != 0 }

// stop disarms the timer; the clock's timer, if set, fires and is ignored.
func (t *timer) stop() { t.deadline = 0 }

// onClock runs each timer whose deadline has passed, in timers' order, then
// queues the endpoint again for the earliest deadline left. A run that raced
// a re-arm or a stop finds nothing due and only queues it again.
func (e *endpoint) onClock() {
	e.mu.Lock()
	e.clkAt = 0
	now := e.now()
	ran := false
	for _, t := range e.timers() {
		// A callback may end the endpoint (stopTimers) or arm timers: each
		// deadline is read when its turn comes.
		if t != nil && t.deadline != 0 && t.deadline <= now {
			t.deadline = 0
			t.fn(e)
			ran = true
		}
	}
	var next time.Duration
	for _, t := range e.timers() {
		if t != nil && t.deadline != 0 && (next == 0 || t.deadline < next) {
			next = t.deadline
		}
	}
	if next != 0 {
		e.clockBy(now, next)
	}
	if !ran {
		e.mu.Unlock()
		return
	}
	e.unlock()
}

// stopTimers disarms every timer and takes the endpoint out of the timer
// queue, for an endpoint that ends.
func (e *endpoint) stopTimers() {
	for _, t := range e.timers() {
		if t != nil {
			t.deadline = 0
		}
	}
	e.clkAt = 0
	e.p.unschedule(e)
}

func (e *endpoint) onTimeWaitTimer() { e.closeLocked(nil) }

func (e *endpoint) onLingerTimer() {
	switch e.state {
	case StateFinWait2:
		e.closeLocked(nil)
	case StateFinWait1, StateClosing, StateLastAck, StateEstablished, StateCloseWait:
		e.resetLocked(&tcpip.ErrConnectionAborted{})
	}
}

// onDelackTimer ACKs what the pairs left over: the flight has ended, so the
// next one's segments are counted from the first (receiveInOrder).
func (e *endpoint) onDelackTimer() {
	e.ackCount = 0
	if e.state.synchronized() && (e.ackPending > 0 || e.ackNow != ackNone) {
		e.sendAck(ackDelayed)
	}
}

func (e *endpoint) onReorderTimer() {
	if !e.state.synchronized() || e.q == nil {
		return
	}
	now := e.now()
	lost, reo := e.q.DetectLoss(now, e.est.SRTT())
	if reo > 0 {
		e.tReo.arm(reo)
	}
	if lost > 0 && e.rec.OnLoss(e.sndUna, e.sndNxt) {
		e.startedRecovery(now)
	}
	e.output()
}

// maxRTOAttempts is the RTO retransmissions without progress after which a
// connection gives up (RFC 9293 §3.8.3's R2, about 15 minutes with backoff,
// as Linux's tcp_retries2).
const maxRTOAttempts = 15

// maxSynRetries bounds SYN and SYN-ACK retransmissions (RFC 9293 §3.8.3 R2
// for SYN is at least 3 minutes; 6 backed-off retries from 1 s is 127 s).
const maxSynRetries = 6

func (e *endpoint) onRetransmitTimer() {
	now := e.now()
	switch e.state {
	case StateSynSent, StateSynRcvd:
		if e.synRetries >= maxSynRetries {
			e.closeLocked(&tcpip.ErrTimeout{})
			return
		}
		e.synRetries++
		e.est.Backoff()
		e.sendSYN()
		e.tRtx.arm(e.est.RTO())
		return
	}
	if !e.state.synchronized() || e.q == nil || e.q.Outstanding() == 0 {
		e.tlpArmed = false
		return
	}
	e.ackGap.timedOut()
	if e.tlpArmed {
		e.lossProbe()
		// After a probe the RTO, not another PTO, guards the flight (RFC
		// 8985 §7.3), whatever output armed.
		e.tlpArmed = false
		e.tRtx.arm(e.est.RTO())
		return
	}
	// The give-up budget counts only these timer retransmissions (recovery's
	// rto.go); ACK-clocked ones never spend it, and any progress refills it.
	attempts := e.rec.OnRTO(e.sndUna, e.sndNxt, e.tsVal())
	if attempts > maxRTOAttempts || e.userTimeout > 0 && now-e.lastRecv > e.userTimeout {
		e.p.st.giveUps.Inc()
		e.resetLocked(&tcpip.ErrTimeout{})
		return
	}
	e.p.st.rto.Inc()
	flight := int(e.q.InFlight())
	e.q.OnRTO(now)
	e.ctl.OnRTO(now, flight)
	e.est.Backoff()
	e.probe = false
	e.q.SetInRecovery(e.rec.InRecovery())
	e.output()
	// output may not have resent anything (card stop); the timer stays.
	e.tRtx.arm(e.est.RTO())
}

// lossProbe is RFC 8985 §7.3: one segment goes whatever cwnd allows, new
// data if the peer's window has room, else a resend of the newest segment,
// to get an ACK that reveals a tail loss. It is an ordinary send opportunity
// (output), so pacing, the card's credit and the stop reason apply to it; a
// probe the card or the pacer holds goes when they allow, unless an ACK
// comes first.
func (e *endpoint) lossProbe() {
	e.p.st.lossProbes.Inc()
	e.probe = true
	e.output()
}

func (e *endpoint) onKeepaliveTimer() {
	if !e.ops.GetKeepAlive() || !e.state.synchronized() {
		return
	}
	now := e.now()
	if idle := now - e.lastRecv; idle < e.kaIdle && e.kaProbes == 0 {
		e.tKeep.arm(e.kaIdle - idle)
		return
	}
	if e.kaProbes >= e.kaCount {
		e.resetLocked(&tcpip.ErrTimeout{})
		return
	}
	e.kaProbes++
	// RFC 9293 §3.8.4: a keepalive is a segment with SEG.SEQ = SND.NXT-1.
	e.owe(ackProbe)
	e.sendFlags(header.TCPFlagAck, e.sndNxt-1)
	e.tKeep.arm(e.kaIntvl)
}

// armRetransmitTimer arms the tail loss probe (RFC 8985 §7.2) after new data
// when SACK is on and no recovery is running, else the RTO (RFC 6298 §5.1).
func (e *endpoint) armRetransmitTimer(sentNew bool, now time.Duration) {
	if sentNew && e.armPTO(now) {
		return
	}
	if !e.tRtx.armed() || sentNew && e.tlpArmed {
		e.tlpArmed = false
		e.tRtx.armAt(now, e.est.RTO())
	}
}

// armPTO arms the probe timeout if a tail loss probe is allowed: SACK on, no
// recovery, an RTT known (RFC 8985 §7.2); the PTO never exceeds the RTO.
//
// Departure from RFC 8985 §7.2, whose PTO adds the peer's worst-case delayed
// ACK only with one segment in flight: here it adds the peer's ACK
// aggregation for any flight, the longest ACK gap seen (ackGaps), or the
// delayed-ACK allowance until a gap has been seen. A peer that aggregates
// holds its ACKs that long whatever the flight, so a shorter PTO probes a
// lossless path (the t14 path: four probes a connection). It is safe: a
// tail loss is still probed, at most one aggregation later, and the RTO
// bounds the PTO as before.
func (e *endpoint) armPTO(now time.Duration) bool {
	if !e.sackOK || e.rec.InRecovery() || !e.est.HasSample() {
		return false
	}
	segs := int(e.q.InFlight()) / max(e.smss, 1)
	pto := e.q.PTO(e.est.SRTT(), segs, e.p.opts.DelayedAck) + e.ackGap.allowance(e.p.opts.DelayedAck)
	if rto := e.est.RTO(); pto > rto {
		pto = rto
	}
	e.tlpArmed = true
	e.tRtx.armAt(now, pto)
	return true
}

// armPersist starts the zero-window probe timer (RFC 9293 §3.8.6.1) when
// nothing is in flight to elicit a window update.
func (e *endpoint) armPersist() {
	if e.q.Outstanding() > 0 || e.tPersist.armed() {
		return
	}
	d := e.est.RTO() << e.persistBackoff
	if d > 60*time.Second {
		d = 60 * time.Second
	}
	e.tPersist.arm(d)
}

// persistGiveUp ends a connection whose peer has left maxRTOAttempts probes
// in a row unanswered, or been silent past the user timeout, as an
// unanswered retransmission would (RFC 9293 §3.8.6.1 keeps probing while the
// peer answers; a peer that answers nothing is gone, and RFC 9293 §3.8.3's R2
// applies; Linux bounds probes by tcp_retries2 the same way). With a 1 s RTO
// and the 60 s cap on the probe interval that is about 12 minutes. Any
// acceptable ACK, a zero window included, refills the budget (onAck): a live
// receiver that is slow to read is never cut off.
func (e *endpoint) persistGiveUp(now time.Duration) bool {
	if e.persistProbes < maxRTOAttempts && (e.userTimeout <= 0 || now-e.lastRecv <= e.userTimeout) {
		return false
	}
	e.p.st.persistGiveUps.Inc()
	e.resetLocked(&tcpip.ErrTimeout{})
	return true
}

func (e *endpoint) onPersistTimer() {
	now := e.now()
	if !e.state.synchronized() || e.q.Outstanding() > 0 {
		return
	}
	dataEnd := e.sbuf.End() + 1
	if e.sndNxt >= dataEnd || e.sndUna+e.sndWnd > e.sndNxt {
		// The window has room, but less than a segment: sender SWS avoidance
		// held the runt back. This timer is the override timeout of RFC 9293
		// §3.8.6.2.1 (4): the runt goes now. A receiver need not announce
		// that a small window opened (gVisor's TCP announces it only when the
		// window was zero, and waits for data to carry the news), so without
		// the runt both ends wait for the other for ever; Linux's probe
		// timer sends what the window allows for the same reason.
		e.swsOverride = true
		e.output()
		e.swsOverride = false
		return
	}
	if e.persistGiveUp(now) { // control:persist-give-up
		return
	}
	// Departure from RFC 9293 §3.8.6.1, which probes with a byte of new data:
	// the probe is an ACK carrying the already-acknowledged SND.UNA-1, which
	// the peer must answer with its window (§3.10.7.4) whatever that window
	// is, and which puts nothing in flight. Linux probes the same way.
	e.persistProbes++
	if e.persistBackoff < 8 {
		e.persistBackoff++
	}
	e.owe(ackProbe)
	e.sendFlags(header.TCPFlagAck, e.sndUna-1)
	e.armPersist()
}

// onPaceTimer resumes a paced sender, or one whose link refused a write.
func (e *endpoint) onPaceTimer() {
	e.pacingWait = false
	e.output()
	if e.ackNow != ackNone && e.state.synchronized() {
		e.sendAck(ackNone)
	}
}
