// The send opportunity: what may be sent now (window, cwnd, PRR, pacing, the
// card's credit) and why sending stopped.

package tcp

import (
	"time"

	"gvisor.dev/gvisor/pkg/buffer"
	"gvisor.dev/gvisor/pkg/tcpip/header"

	"github.com/netramp/netramp/cc"
	"github.com/netramp/netramp/tcp/internal/rtxq"
)

// queue adds a built segment to the outbox, after the run of new segments
// that left before it (gso.go).
func (e *endpoint) queue(s outSeg) {
	e.flushRun()
	e.outbox = append(e.outbox, s)
}

// sendSYN sends our SYN (active open) or SYN-ACK (passive open).
func (e *endpoint) sendSYN() {
	var ob [40]byte
	synAck := e.state == StateSynRcvd
	opts := e.synOptions(ob[:], synAck)
	flags := header.TCPFlagSyn
	var ack uint32
	if synAck {
		flags |= header.TCPFlagAck
		ack = wire(e.irs, e.rcvNxt)
	}
	// The window in a SYN is never scaled (RFC 7323 §2.2).
	wnd := e.rcvBuf
	if wnd > 0xffff {
		wnd = 0xffff
	}
	e.rcvAdv = e.rcvNxt + uint64(wnd)
	e.rcvPromise = e.rcvAdv
	pkt := e.p.buildPacket(e.pathOf(), e.id.LocalPort, e.id.RemotePort, e.iss, ack, flags, uint16(wnd), opts, buffer.Buffer{})
	e.queue(outSeg{pkt: pkt, start: 0, end: 1})
	e.lastAckSent = e.rcvNxt
	if !e.tRtx.armed() {
		e.tRtx.arm(e.est.RTO())
	}
}

// sendAck sends a pure ACK now, with SACK blocks, and cancels a pending
// delayed ACK; it is counted for the reason already owed, else for why.
func (e *endpoint) sendAck(why ackReason) {
	e.owe(why)
	e.sendFlags(header.TCPFlagAck, e.sndNxt)
}

// sendFlags sends a segment without data at sequence offset seq.
func (e *endpoint) sendFlags(flags header.TCPFlags, seq uint64) { e.sendFlagsAt(flags, seq, e.now()) }

// sendFlagsAt is sendFlags with the clock already read at now.
func (e *endpoint) sendFlagsAt(flags header.TCPFlags, seq uint64, now time.Duration) {
	if e.route == nil {
		return
	}
	var ob [40]byte
	opts := e.dataOptions(ob[:], flags&header.TCPFlagRst == 0, 40, now)
	var ack uint32
	var wnd uint16
	if flags&header.TCPFlagAck != 0 {
		ack = wire(e.irs, e.rcvNxt)
		wnd = e.rcvWindow()
		if flags&header.TCPFlagRst == 0 && e.ackNow != ackNone {
			e.p.st.acks[e.ackNow].Inc()
		}
		e.ackCarried()
	}
	if flags&header.TCPFlagRst != 0 {
		wnd = 0
	}
	pkt := e.p.buildPacket(e.pathOf(), e.id.LocalPort, e.id.RemotePort, wire(e.iss, seq), ack, flags, wnd, opts, buffer.Buffer{})
	e.queue(outSeg{pkt: pkt, start: seq, end: seq, isRst: flags&header.TCPFlagRst != 0})
}

// ackCarried notes a segment built with our ACK of RCV.NXT: no ACK is owed,
// held or delayed any more.
func (e *endpoint) ackCarried() {
	e.lastAckSent = e.rcvNxt
	e.ackPending = 0
	e.ackNow = ackNone
	e.ackHeld = false
	e.burstHeld = false
	e.dsack = nil
	e.tDelack.stop()
}

// sendData builds one segment of [start, end) sequence offsets from the send
// buffer at now; fin marks a FIN occupying the last offset.
func (e *endpoint) sendData(start, end uint64, fin bool, prev *rtxq.Seg, now time.Duration) {
	rtx := prev != nil
	dataEnd := end
	if fin {
		dataEnd--
	}
	n := int(dataEnd - start)
	if !rtx && e.runExtend(start, end, fin, n, now) {
		// The run's first segment carried our ACK: none is owed now; its
		// bytes count in tcp.sent.bytes when the run leaves.
		e.lastSend = now
		return
	}
	e.headersBuilt++
	var ob [40]byte
	// control:hosttests-sack-options-not-counted-in-mss-1
	// control:tcp-sack-options-beyond-mss-1
	opts := e.dataOptions(ob[:], true, e.mss-n, now)
	ack := wire(e.irs, e.rcvNxt)
	wnd := e.rcvWindow()
	noDF := e.mayFragment(n + len(opts))
	if rtx || !e.runJoin(start, end, fin, n, ack, wnd, opts, noDF, now) {
		flags := header.TCPFlagAck
		if fin {
			flags |= header.TCPFlagFin
		}
		var payload buffer.Buffer
		if n > 0 {
			payload = e.sbuf.Clone(start-1, n) // shares the queue's bytes: no copy
			// control:tcp-segment-copies-payload
			flags |= e.pushFlag(dataEnd)
		}
		pkt := e.p.buildPacket(e.pathOf(), e.id.LocalPort, e.id.RemotePort, wire(e.iss, start), ack, flags, wnd, opts, payload)
		o := outSeg{pkt: pkt, start: start, end: end, newData: !rtx, rtx: rtx, payload: n, priorNxt: e.sndNxt, noDF: noDF}
		if rtx {
			o.prev = *prev
		}
		e.queue(o)
	}
	e.ackCarried()
	if rtx {
		e.p.st.retransBytes.Add(uint64(n))
	} else {
		e.p.st.sentBytes.Add(uint64(n))
	}
	e.lastSend = now
	e.ackGap.sent(now)
}

// maxPayload is the payload of a new full segment now: the MSS less the
// options it will carry (timestamps, and SACK blocks while the receive side
// has holes), never more than the SMSS cc counts in.
// control:hosttests-sack-options-not-counted-in-mss-2
// control:tcp-sack-options-beyond-mss-2
func (e *endpoint) maxPayload() int { return max(min(e.smss, e.mss-e.optionBytes()), 1) }

// output is one send opportunity (ARCHITECTURE.md "How a segment travels"):
// retransmissions of lost segments first, then new data and the FIN, then a
// pending loss probe's resend, while the congestion window (or PRR), the
// peer's window, the data and the card's credit allow. Every segment, loss
// probes included, goes through the same checks and pacing. It ends on
// exactly one stop reason, reported to cc with the flight. The card is asked
// last, only for a segment that is otherwise ready, so an application or
// peer-window stop overrides the card's verdict (the gate would grow cwnd on
// a card stop, cc/limited.go); a full cwnd with a full card reports cwnd,
// which the gate reads the same way.
func (e *endpoint) output() { e.outputAt(e.now()) }

// outputAt is output with the clock already read at now: one read per send
// opportunity or inbound segment, passed down to every segment it builds.
func (e *endpoint) outputAt(now time.Duration) {
	switch e.state {
	case StateEstablished, StateCloseWait, StateFinWait1, StateClosing, StateLastAck:
	default:
		return
	}
	// Arm B's ACKs bring credit its pacer lets go at once (creditClock), so
	// an ACK resumes it before the pacing timer; arm P waits for the timer.
	if e.pacingWait && !e.clockPaced {
		return
	}
	defer e.flushRun() // the opportunity's last run leaves with it
	var reason cc.StopReason
	sentNew := false
	cwnd := uint64(e.ctl.Cwnd())
	smss := uint64(e.maxPayload())
	// Nothing an opportunity does marks a segment lost (losses are found on
	// ACKs and timers, which wait for e.mu), so once no retransmission is
	// due, none comes due before the loop ends.
	rtxDue := true
	for {
		// control:tcp-card-judged-first
		c, stop, ok := e.nextSegment(smss, cwnd, &rtxDue)
		if !ok {
			reason = stop
			break
		}
		if e.cardStopped() {
			reason = cc.StopCard
			break
		}
		if e.paceWait(now, int(c.size())) {
			return
		}
		e.probe = false
		if c.rtx {
			if c.head {
				e.rec.HeadDone()
			}
			e.retransmit(c.start, c.end, c.fin, now)
			continue
		}
		if !e.sendNew(c, now) {
			// The segment cap (segCapMSS): a limit the peer's tiny MSS
			// set, not the congestion window, so cwnd must not grow on it.
			e.p.st.segCapStops.Inc()
			reason = cc.StopPeerWindow
			break
		}
		sentNew = true
		if c.fin {
			reason = cc.StopApp
			break
		}
	}
	if reason == cc.StopCard {
		e.p.st.cardStops.Inc()
		e.waitCredit()
	}
	e.p.st.stops[reason].Inc()
	e.ctl.OnSendStop(reason, int(e.q.InFlight()))
	if sentNew {
		e.ctl.OnSend(now, e.sndNxt)
	}
	if e.q.Outstanding() > 0 {
		e.armRetransmitTimer(sentNew, now)
	}
}

// candidate is the next segment an opportunity would send: [start, end) of
// sequence offsets (a FIN takes the last), a retransmission or new data.
type candidate struct {
	start, end uint64
	fin        bool
	rtx        bool
	head       bool // NewReno's retransmission of the segment at SND.UNA
}

// size is what the segment counts against the windows and the pacer: a
// retransmission's whole range, new data's payload.
func (c candidate) size() uint64 {
	if c.fin && !c.rtx {
		return c.end - c.start - 1
	}
	return c.end - c.start
}

// nextSegment is the segment the windows allow next, or why none may go:
// a lost segment (or NewReno's head), else new data, else, when a loss probe
// is pending and no new data may go, a resend of the newest segment (RFC
// 8985 §7.3).
// *rtxDue false skips the search for a retransmission, and a search that
// finds none sets it false.
func (e *endpoint) nextSegment(smss, cwnd uint64, rtxDue *bool) (candidate, cc.StopReason, bool) {
	if *rtxDue {
		if c, ok := e.nextRetransmission(); ok {
			if !e.rec.MaySend(c.end-c.start, e.q.InFlight(), cwnd, true) {
				return c, cc.StopCwnd, false
			}
			// control:tcp-one-resend-per-opportunity
			return c, 0, true
		}
		*rtxDue = false
	}
	c, stop, ok := e.nextNewData(smss, cwnd)
	if ok || !e.probe || stop == cc.StopCwnd {
		return c, stop, ok
	}
	if seg, ok := e.probeSegment(); ok {
		return candidate{start: seg.Start, end: seg.End, fin: seg.Fin, rtx: true}, 0, true
	}
	return c, stop, false
}

// probeSegment is what a loss probe resends when no new data may go: the
// newest segment (RFC 8985 §7.3), or, in a recovery, the segment at SND.UNA.
//
// Departure from RFC 8985 §7.3, whose probe is always the newest segment and
// which arms no probe in recovery (§7.2; here a probe armed by new data
// before a recovery began still fires in it). In a recovery the hole at
// SND.UNA has been resent; if that resend was lost and nothing new follows
// it (the tail of a transfer), only a copy sent after it can show RACK the
// loss. The newest segment's ACK cannot: it arrives as a SACK, whose echo is
// the left edge's (RFC 7323 §4.3), so it is no RACK sample of a resend
// (rtxq's RFC 8985 §6.2 step 2), and the flight waits for the RTO (200 ms
// on a 1 ms path). The head's copy, once delivered, moves SND.UNA: that ACK
// echoes the probe, so it is a sample, and RACK marks every earlier
// transmission still missing lost. It is safe: one segment, resent at most
// once a PTO, what the RTO would resend first (RFC 6298 §5.4); a needless
// copy is reported by a D-SACK and counted spurious.
func (e *endpoint) probeSegment() (rtxq.Seg, bool) {
	// control:tcp-probe-in-recovery-sends-newest
	if e.rec.InRecovery() {
		if seg, ok := e.q.Oldest(); ok && !seg.Sacked {
			return seg, true
		}
	}
	return e.q.Newest()
}

// nextRetransmission is the lowest segment marked lost, else the head when
// NewReno asks for it.
func (e *endpoint) nextRetransmission() (candidate, bool) {
	if seg, ok := e.q.NextToRetransmit(); ok {
		return candidate{start: seg.Start, end: seg.End, fin: seg.Fin, rtx: true}, true
	}
	if !e.rec.WantHead() {
		return candidate{}, false
	}
	seg, ok := e.q.Oldest()
	if !ok {
		e.rec.HeadDone()
		return candidate{}, false
	}
	return candidate{start: seg.Start, end: seg.End, fin: seg.Fin, rtx: true, head: true}, true
}

// nextNewData is the next segment of new data (and the FIN), or the stop:
// the application's (no data, Nagle, cork), the peer's window (full, or a
// runt it would force: sender SWS avoidance), or cwnd/PRR. A pending loss
// probe may take one segment past cwnd, Nagle and cork (RFC 8985 §7.3).
func (e *endpoint) nextNewData(smss, cwnd uint64) (candidate, cc.StopReason, bool) {
	dataEnd := e.sbuf.End() + 1
	finUnsent := e.finQueued && e.sndNxt <= dataEnd
	avail := uint64(0)
	if e.sndNxt < dataEnd {
		avail = dataEnd - e.sndNxt
	}
	if avail == 0 && !finUnsent {
		return candidate{}, cc.StopApp, false
	}
	wndRoom := uint64(0)
	if wndRight := e.sndUna + e.sndWnd; wndRight > e.sndNxt {
		wndRoom = wndRight - e.sndNxt
	}
	size := min(avail, smss, wndRoom)
	if avail > 0 && size == 0 {
		e.armPersist()
		return candidate{}, cc.StopPeerWindow, false
	}
	if !e.probe && !e.rec.MaySend(size, e.q.InFlight(), cwnd, false) {
		return candidate{}, cc.StopCwnd, false
	}
	if e.corkTail(avail, wndRoom, smss) {
		return candidate{}, cc.StopApp, false
	}
	fin := finUnsent && e.sndNxt+size == dataEnd
	if size < smss && size < avail {
		// Window-limited runt: sender SWS avoidance (RFC 9293 §3.8.6.2.1),
		// until the persist timer, which is also the section's override
		// timeout, lets it go (onPersistTimer).
		// control:tcp-sws-runt-never-overridden
		if size < e.maxSndWnd/2 && !e.swsOverride {
			e.armPersist()
			return candidate{}, cc.StopPeerWindow, false
		}
		if size < e.maxSndWnd/2 {
			e.p.st.swsOverrides.Inc()
		}
	} else if size < smss && size == avail && !e.nodelay && e.sndNxt > e.sndUna && !fin && !e.probe {
		// Nagle (RFC 9293 §3.7.4): one runt in flight at a time; the
		// last segment, carrying the FIN, is not held.
		return candidate{}, cc.StopApp, false
	}
	if e.cork && size < smss && size == avail && !e.finQueued && !e.probe {
		return candidate{}, cc.StopApp, false
	}
	c := candidate{start: e.sndNxt, end: e.sndNxt + size, fin: fin}
	if fin {
		c.end++
	}
	return c, 0, true
}

// sendNew sends the new data c, or reports false if the retransmission
// queue cannot hold it.
func (e *endpoint) sendNew(c candidate, now time.Duration) bool {
	if err := e.q.Push(c.start, c.end, now, c.fin); err != nil {
		return false
	}
	e.sndNxt = c.end
	if e.sndNxt > e.sndMax {
		e.sndMax = e.sndNxt
	}
	size := c.size()
	e.rec.OnSent(size, false)
	e.sendData(c.start, c.end, c.fin, nil, now)
	if e.pace != nil {
		e.pace.Sent(now, int(size)+header.TCPMinimumSize)
	}
	return true
}

// cardStopped reports that the card has no room for another segment beyond
// those already waiting in the outbox.
func (e *endpoint) cardStopped() bool {
	// control:tcp-loss-probe-skips-card-check
	if e.credit == nil {
		return false
	}
	return e.credit.TxFree()-len(e.outbox)-e.outExtra-e.run.segs <= 0
}

// waitCredit asks the card to resume this endpoint when TX room returns.
func (e *endpoint) waitCredit() {
	if e.credit == nil || e.cancelCredit != nil {
		return
	}
	e.cancelCredit = e.credit.NotifyTxFree(func() {
		e.mu.Lock()
		e.cancelCredit = nil
		e.output()
		if e.ackNow != ackNone && e.state.synchronized() {
			e.sendAck(ackNone) // an ACK the card refused
		}
		e.unlock()
	})
}

// paceBytes is what n bytes of payload count in the pacer, which counts
// each segment with its TCP header: a header for each SMSS or part of one.
func (e *endpoint) paceBytes(n int) int {
	return n + (n+e.smss-1)/e.smss*header.TCPMinimumSize
}

// paceWait reports whether the pacer holds a size-byte segment, arming the
// pacing timer if so: arm P's every segment, arm B's and D's beyond what
// the last ACK released (creditClock) and the pacer's burst.
//
// Arm B's rate is computed only for a segment the ACK's credit does not
// cover: one the credit covers leaves at once at any rate (NextSend), and
// its Sent takes credit, never tokens, so the rate it would have set is
// never read before the next computation replaces it (over TSO and GRO,
// each ACK credits a GSO packet's worth, and the rate was computed for each
// of its segments). The one thing a skipped SetRate did was clip the tokens
// to its burst; the tokens do not grow while the credit covers, and the next
// SetRate clips them to its own burst, which is the same except on a route
// with GSO, where gsoBurst follows the rate: there the tokens may keep up
// to the next burst instead of a smaller one a skipped segment would have
// set, at most one GSO packet (gsoBurst's departure).

func (e *endpoint) paceWait(now time.Duration, size int) bool {
	// control:tcp-pacing-never-waits
	if e.pace == nil || !e.est.HasSample() {
		return false
	}
	if e.clockPaced {
		// control:tcp-pacing-rate-per-segment
		if e.pace.ClockCovers(size + header.TCPMinimumSize) {
			return false // leaves on the ACK's credit, whatever the rate
		}
		e.paceRates++
		rate, burst := e.ctl.ClockPacing(e.est.MinRTT(), e.est.SRTT(), int(e.q.InFlight()))
		e.pace.SetRate(rate, e.gsoBurst(rate, e.paceBytes(burst)))
	} else {
		rate := e.ctl.PacingRate(e.est.SRTT(), e.est.MinRTT())
		e.pace.SetRate(rate, e.gsoBurst(rate, 2*e.smss))
	}
	at := e.pace.NextSend(now, size+header.TCPMinimumSize)
	if at <= now {
		return false
	}
	e.pacingWait = true
	e.tPace.armAt(now, at-now)
	return true
}

// retransmit resends [start, end) from the send buffer. A resend of the
// segment at SND.UNA restarts the RTO, unless a loss probe is armed.
//
// Departure from RFC 6298 §5.3, which restarts the RTO only when an ACK
// acknowledges new data: the timer then runs from the last advance of
// SND.UNA, and a resend of the head that is itself lost, found lost by RACK
// an RTT later (RFC 8985 §6.2) and resent again, cannot be acknowledged
// within an RTO of about SRTT + 200 ms, so the RTO fired in a recovery that
// was working (20 Mbit/s, 600 ms, 1% loss). It is safe: the head is resent
// only on evidence that the path delivers (RACK saw a later transmission
// delivered, NewReno a partial ACK) or by the RTO itself, never twice on the
// same evidence, so when ACKs stop the RTO fires an RTO after the last resend.
func (e *endpoint) retransmit(start, end uint64, fin bool, now time.Duration) {
	if start < e.sndUna {
		start = e.sndUna
	}
	if end <= start {
		return
	}
	// control:tcp-head-resend-keeps-rto
	if start == e.sndUna && !e.tlpArmed {
		e.tRtx.armAt(now, e.est.RTO())
	}
	prev, _ := e.q.Retransmitted(start, now)
	e.rec.OnSent(end-start, true)
	e.sendData(start, end, fin, &prev, now)
	if e.pace != nil {
		e.pace.Sent(now, int(end-start)+header.TCPMinimumSize)
	}
}

// refused handles segments the link refused (ErrNoBufferSpace): they were
// never sent, so new data is rolled back out of SND.NXT and the
// retransmission queue, and a refused resend gives its segment back the state
// it had before (never counted in flight or as lost); the endpoint resumes
// when the card has room.
func (e *endpoint) refused(segs []outSeg) {
	rollTo := uint64(0)
	rolled := false
	for _, s := range segs {
		e.p.st.cardRefusals.Add(uint64(max(s.segs, 1)))
		if s.newData && !rolled {
			rollTo = s.start
			rolled = true
			e.p.st.sentBytes.Add(^uint64(s.payload - 1)) // not sent after all
		} else if s.newData {
			e.p.st.sentBytes.Add(^uint64(s.payload - 1))
		}
		if s.rtx {
			e.p.st.retransBytes.Add(^uint64(s.payload - 1))
			e.q.RetransmitRefused(s.prev)
			e.rec.OnRefused(true)
		}
		if s.end == s.start && !s.isRst {
			e.ackNow = ackRefused
		}
	}
	// control:tcp-card-refusal-counted-in-flight
	if rolled && rollTo >= e.sndUna && rollTo < e.sndNxt {
		if err := e.q.Truncate(rollTo); err != nil {
			// rollTo is where a segment the sender pushed began, so this
			// cannot happen; keep SND.NXT where the queue ends if it does.
			rollTo = e.q.Nxt()
		}
		e.sndNxt = rollTo
		if e.sndMax > rollTo {
			e.sndMax = rollTo
		}
		e.rec.OnRollback(rollTo)
	}
	if e.q.Outstanding() == 0 {
		e.tRtx.stop()
	}
	if e.credit == nil {
		// A link without a credit interface (a qdisc) gives no signal
		// when it has room: retry after a millisecond.
		e.tPace.arm(time.Millisecond)
		return
	}
	e.waitCredit()
}
