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

// queue adds a built segment to the outbox.
func (e *endpoint) queue(s outSeg) {
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
	pkt := e.p.buildPacket(e.route, e.id.LocalPort, e.id.RemotePort, e.iss, ack, flags, uint16(wnd), opts, buffer.Buffer{})
	e.queue(outSeg{pkt: pkt, start: 0, end: 1})
	e.lastAckSent = e.rcvNxt
	if !e.tRtx.armed() {
		e.tRtx.arm(e.est.RTO())
	}
}

// sendAck sends a pure ACK now, with SACK blocks, and cancels a pending
// delayed ACK.
func (e *endpoint) sendAck() { e.sendFlags(header.TCPFlagAck, e.sndNxt) }

// sendFlags sends a segment without data at sequence offset seq.
func (e *endpoint) sendFlags(flags header.TCPFlags, seq uint64) {
	if e.route == nil {
		return
	}
	var ob [40]byte
	opts := e.dataOptions(ob[:], flags&header.TCPFlagRst == 0, 40)
	var ack uint32
	var wnd uint16
	if flags&header.TCPFlagAck != 0 {
		ack = wire(e.irs, e.rcvNxt)
		wnd = e.rcvWindow()
		e.lastAckSent = e.rcvNxt
		e.ackPending = 0
		e.ackNow = false
		e.dsack = nil
		e.tDelack.stop()
	}
	if flags&header.TCPFlagRst != 0 {
		wnd = 0
	}
	pkt := e.p.buildPacket(e.route, e.id.LocalPort, e.id.RemotePort, wire(e.iss, seq), ack, flags, wnd, opts, buffer.Buffer{})
	e.queue(outSeg{pkt: pkt, start: seq, end: seq, isRst: flags&header.TCPFlagRst != 0})
}

// sendData builds one segment of [start, end) sequence offsets from the send
// buffer; fin marks a FIN occupying the last offset.
func (e *endpoint) sendData(start, end uint64, fin bool, prev *rtxq.Seg) {
	rtx := prev != nil
	dataEnd := end
	if fin {
		dataEnd--
	}
	n := int(dataEnd - start)
	var ob [40]byte
	opts := e.dataOptions(ob[:], true, e.mss-n)
	flags := header.TCPFlagAck
	if fin {
		flags |= header.TCPFlagFin
	}
	var payload buffer.Buffer
	if n > 0 {
		payload = e.sbuf.Clone(start-1, n) // shares the queue's bytes: no copy
		flags |= header.TCPFlagPsh
	}
	wnd := e.rcvWindow()
	pkt := e.p.buildPacket(e.route, e.id.LocalPort, e.id.RemotePort, wire(e.iss, start), wire(e.irs, e.rcvNxt), flags, wnd, opts, payload)
	e.lastAckSent = e.rcvNxt
	e.ackPending = 0
	e.ackNow = false
	e.dsack = nil
	e.tDelack.stop()
	o := outSeg{pkt: pkt, start: start, end: end, newData: !rtx, rtx: rtx, payload: n, priorNxt: e.sndNxt}
	if rtx {
		o.prev = *prev
	}
	e.queue(o)
	if rtx {
		e.p.st.retransBytes.Add(uint64(n))
	} else {
		e.p.st.sentBytes.Add(uint64(n))
	}
	e.lastSend = e.now()
	e.ackGap.sent(e.lastSend)
}

// maxPayload is the payload of a new full segment now: the MSS less the
// options it will carry (timestamps, and SACK blocks while the receive side
// has holes), never more than the SMSS cc counts in.
func (e *endpoint) maxPayload() int { return max(min(e.smss, e.mss-e.optionBytes()), 1) }

// output is one send opportunity (ARCHITECTURE.md "How a segment travels"):
// retransmissions of lost segments first, then new data and the FIN, while
// the congestion window, the peer's window, the data and the card's credit
// allow. It ends on exactly one stop reason, reported to cc with the flight.
// The card is asked last, only for a segment that is otherwise ready, so an
// application or peer-window stop overrides the card's verdict (the gate
// would grow cwnd on a card stop, cc/limited.go); a full cwnd with a full
// card reports cwnd, which the gate reads the same way.
func (e *endpoint) output() {
	switch e.state {
	case StateEstablished, StateCloseWait, StateFinWait1, StateClosing, StateLastAck:
	default:
		return
	}
	if e.pacingWait {
		return
	}
	now := e.now()
	reason := cc.StopApp
	sentNew := false
	cwnd := uint64(e.ctl.Cwnd())
	smss := e.maxPayload()
	for {
		seg, ok := e.q.NextToRetransmit()
		head := false
		if !ok && e.rec.WantHead() {
			seg, ok = e.q.Oldest()
			head = ok
			if !ok {
				e.rec.HeadDone()
			}
		}
		if ok {
			l := seg.End - seg.Start
			if !e.rec.MaySend(l, e.q.InFlight(), cwnd, true) {
				reason = cc.StopCwnd
				break
			}
			if e.cardStopped() {
				reason = cc.StopCard
				break
			}
			if head {
				e.rec.HeadDone()
			}
			if e.paceWait(now, int(l)) {
				return
			}
			e.retransmit(seg.Start, seg.End, seg.Fin, now)
			continue
		}
		dataEnd := e.sbuf.End() + 1
		finUnsent := e.finQueued && e.sndNxt <= dataEnd
		avail := uint64(0)
		if e.sndNxt < dataEnd {
			avail = dataEnd - e.sndNxt
		}
		if avail == 0 && !finUnsent {
			reason = cc.StopApp
			break
		}
		wndRight := e.sndUna + e.sndWnd
		wndRoom := uint64(0)
		if wndRight > e.sndNxt {
			wndRoom = wndRight - e.sndNxt
		}
		size := min64(avail, uint64(smss))
		if size > wndRoom {
			size = wndRoom
		}
		if avail > 0 && size == 0 {
			reason = cc.StopPeerWindow
			e.armPersist()
			break
		}
		if !e.rec.MaySend(size, e.q.InFlight(), cwnd, false) {
			reason = cc.StopCwnd
			break
		}
		fin := finUnsent && e.sndNxt+size == dataEnd
		if size < uint64(smss) && size < avail {
			// Window-limited runt: sender SWS avoidance (RFC 9293 §3.8.6.2.1).
			if size < e.maxSndWnd/2 {
				reason = cc.StopPeerWindow
				e.armPersist()
				break
			}
		} else if size < uint64(smss) && size == avail && !e.nodelay && e.sndNxt > e.sndUna && !fin {
			// Nagle (RFC 9293 §3.7.4): one runt in flight at a time; the
			// last segment, carrying the FIN, is not held.
			reason = cc.StopApp
			break
		}
		if e.cork && size < uint64(smss) && size == avail && !e.finQueued {
			reason = cc.StopApp
			break
		}
		if e.cardStopped() {
			reason = cc.StopCard
			break
		}
		if e.paceWait(now, int(size)) {
			return
		}
		start := e.sndNxt
		end := start + size
		if fin {
			end++
		}
		if err := e.q.Push(start, end, now, fin); err != nil {
			reason = cc.StopCwnd
			break
		}
		e.sndNxt = end
		if e.sndNxt > e.sndMax {
			e.sndMax = e.sndNxt
		}
		e.rec.OnSent(size, false)
		e.sendData(start, end, fin, nil)
		if e.pace != nil {
			e.pace.Sent(now, int(size)+header.TCPMinimumSize)
		}
		sentNew = true
		if fin {
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
		e.armRetransmitTimer(sentNew)
	}
}

// cardStopped reports that the card has no room for another segment beyond
// those already waiting in the outbox.
func (e *endpoint) cardStopped() bool {
	if e.credit == nil {
		return false
	}
	return e.credit.TxFree()-len(e.outbox) <= 0
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
		if e.ackNow && e.state.synchronized() {
			e.sendAck() // an ACK the card refused
		}
		e.unlock()
	})
}

// paceWait reports whether the pacer holds a size-byte segment, arming the
// pacing timer if so.
func (e *endpoint) paceWait(now time.Duration, size int) bool {
	if e.pace == nil || !e.est.HasSample() {
		return false
	}
	e.pace.SetRate(e.ctl.PacingRate(e.est.SRTT(), e.est.MinRTT()), 2*e.smss)
	at := e.pace.NextSend(now, size+header.TCPMinimumSize)
	if at <= now {
		return false
	}
	e.pacingWait = true
	e.tPace.arm(at - now)
	return true
}

// retransmit resends [start, end) from the send buffer.
func (e *endpoint) retransmit(start, end uint64, fin bool, now time.Duration) {
	if start < e.sndUna {
		start = e.sndUna
	}
	if end <= start {
		return
	}
	prev, _ := e.q.Seg(start)
	e.q.Retransmitted(start, now)
	e.rec.OnSent(end-start, true)
	e.sendData(start, end, fin, &prev)
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
		e.p.st.cardRefusals.Inc()
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
			e.ackNow = true
		}
	}
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
