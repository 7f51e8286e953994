package tcp

import (
	"time"

	"gvisor.dev/gvisor/pkg/buffer"
	"gvisor.dev/gvisor/pkg/tcpip/header"
	"gvisor.dev/gvisor/pkg/tcpip/seqnum"

	"github.com/netramp/netramp/cc"
	"github.com/netramp/netramp/tcp/internal/reasm"
	"github.com/netramp/netramp/tcp/internal/rtxq"
)

// bufferBuilder gathers payload parts into one gVisor buffer.
type bufferBuilder struct{ b buffer.Buffer }

func (bb *bufferBuilder) add(p []byte) {
	if len(p) > 0 {
		_ = bb.b.Append(buffer.NewViewWithData(p))
	}
}

// tsVal is our timestamp clock (RFC 7323 §5.4): milliseconds plus the
// connection's offset.
func (e *endpoint) tsVal() uint32 { return e.tsAt(e.now()) }

// tsAt is the timestamp clock at a time already read (a segment's arrival),
// sparing a second clock read on the per-segment path.
func (e *endpoint) tsAt(now time.Duration) uint32 { return uint32(now/time.Millisecond) + e.tsOffset }

// synOptions encodes the options of our SYN or SYN-ACK: MSS always; window
// scale, timestamps and SACK-permitted as offered (SYN) or agreed (SYN-ACK).
func (e *endpoint) synOptions(dst []byte, synAck bool) []byte {
	b := dst[:40]
	n := header.EncodeMSSOption(uint32(e.ourMSS()), b)
	offerWS := !e.p.opts.NoWindowScale && !e.cookie
	offerTS := !e.p.opts.NoTimestamps && !e.cookie
	offerSACK := !e.p.opts.NoSACK && !e.cookie
	if synAck {
		offerWS, offerTS, offerSACK = e.wsOK, e.tsOK, e.sackOK
	}
	if offerWS {
		n += header.EncodeNOP(b[n:])
		n += header.EncodeWSOption(int(e.rcvWS), b[n:])
	}
	if offerSACK && !offerTS {
		n += header.EncodeNOP(b[n:])
		n += header.EncodeNOP(b[n:])
		n += header.EncodeSACKPermittedOption(b[n:])
	}
	if offerTS {
		if offerSACK {
			n += header.EncodeSACKPermittedOption(b[n:])
		} else {
			n += header.EncodeNOP(b[n:])
			n += header.EncodeNOP(b[n:])
		}
		n += header.EncodeTSOption(e.tsVal(), e.tsRecent, b[n:])
	}
	n += header.AddTCPOptionPadding(b, n)
	return b[:n]
}

// ourMSS is the MSS we announce: the route's MTU less the TCP header.
func (e *endpoint) ourMSS() int {
	m := 536
	if e.route != nil {
		m = int(e.route.MTU()) - header.TCPMinimumSize
	}
	if m > 0xffff {
		m = 0xffff
	}
	if m < header.TCPMinimumSendMSS {
		m = header.TCPMinimumSendMSS
	}
	return m
}

// sackBlocksWanted is how many SACK blocks (D-SACK first) a segment would
// carry now, before any size budget.
func (e *endpoint) sackBlocksWanted() int {
	if !e.sackOK || e.ooo == nil {
		return 0
	}
	k := e.ooo.Ranges()
	if e.dsack != nil {
		k++
	}
	return k
}

// optionBytes is the TCP option length of a data segment sent now: the
// timestamp option and as many SACK blocks as the 40 option bytes hold.
func (e *endpoint) optionBytes() int {
	n := 0
	if e.tsOK {
		n = 12
	}
	if k := min(e.sackBlocksWanted(), (40-n-4)/8); k > 0 {
		n += 4 + 8*k
	}
	return n
}

// dataOptions encodes timestamps and SACK blocks for a non-SYN segment,
// within budget option bytes: a segment's options and payload together never
// exceed the MSS (RFC 9293 §3.7.1), so it is never IP-fragmented.
func (e *endpoint) dataOptions(dst []byte, withSACK bool, budget int) []byte {
	b := dst[:40]
	n := 0
	if e.tsOK {
		n += header.EncodeNOP(b[n:])
		n += header.EncodeNOP(b[n:])
		n += header.EncodeTSOption(e.tsVal(), e.tsRecent, b[n:])
	}
	if withSACK && e.sackOK && (e.dsack != nil || !e.ooo.Empty()) {
		var blocks [4]header.SACKBlock
		k := 0
		if e.dsack != nil {
			blocks[k] = header.SACKBlock{Start: seqnum.Value(wire(e.irs, e.dsack.Start)), End: seqnum.Value(wire(e.irs, e.dsack.End))}
			k++
		}
		if cap(e.sackBlocks) < 4 {
			e.sackBlocks = make([]reasm.Range, 0, 4)
		}
		e.sackBlocks = e.ooo.Blocks(e.sackBlocks[:0:4])
		for _, r := range e.sackBlocks {
			if k == len(blocks) {
				break
			}
			blocks[k] = header.SACKBlock{Start: seqnum.Value(wire(e.irs, r.Start)), End: seqnum.Value(wire(e.irs, r.End))}
			k++
		}
		max := (min(40, budget) - n - 4) / 8
		if k > max {
			k = max
		}
		if k > 0 {
			n += header.EncodeNOP(b[n:])
			n += header.EncodeNOP(b[n:])
			n += header.EncodeSACKBlocks(blocks[:k], b[n:])
		}
	}
	return b[:n]
}

// rcvWindow returns the window field to send and moves the advertised right
// edge, which never moves left (RFC 9293 §3.8.6.2.1 forbids shrinking) and
// moves right only by at least min(buffer/2, MSS) (receiver SWS avoidance,
// §3.8.6.2.2).
func (e *endpoint) rcvWindow() uint16 {
	free := e.rcvBuf - e.rcvLen
	if free < 0 {
		free = 0
	}
	maxWnd := 0xffff << e.rcvWS
	if free > maxWnd {
		free = maxWnd
	}
	right := e.rcvNxt + uint64(free)
	step := uint64(e.rcvBuf / 2)
	if m := uint64(e.ourMSS()); m < step {
		step = m
	}
	if right > e.rcvPromise && (right-e.rcvPromise >= step || e.rcvPromise <= e.rcvNxt+step) {
		e.rcvPromise = right
	}
	if e.rcvPromise < e.rcvNxt {
		e.rcvPromise = e.rcvNxt
	}
	// Scaling rounds the window up, so the edge on the wire may pass the
	// promise by less than one scale unit; the ring keeps that much spare.
	// The promise, not the rounded edge, is what the next window grows from.
	wnd := e.rcvPromise - e.rcvNxt
	scaled := (wnd + (1 << e.rcvWS) - 1) >> e.rcvWS
	if scaled > 0xffff {
		scaled = 0xffff
	}
	if edge := e.rcvNxt + scaled<<e.rcvWS; edge > e.rcvAdv {
		e.rcvAdv = edge
	}
	return uint16(scaled)
}

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
	pkt := e.p.buildPacket(e.route, e.id.LocalPort, e.id.RemotePort, e.iss, ack, flags, uint16(wnd), opts, nil, nil)
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
	pkt := e.p.buildPacket(e.route, e.id.LocalPort, e.id.RemotePort, wire(e.iss, seq), ack, flags, wnd, opts, nil, nil)
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
	var pa, pb []byte
	if n > 0 {
		pa, pb = e.sbuf.Slices(start-1, n)
		flags |= header.TCPFlagPsh
	}
	wnd := e.rcvWindow()
	pkt := e.p.buildPacket(e.route, e.id.LocalPort, e.id.RemotePort, wire(e.iss, start), wire(e.irs, e.rcvNxt), flags, wnd, opts, pa, pb)
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
}

// maxPayload is the payload of a new full segment now: the MSS less the
// options it will carry (timestamps, and SACK blocks while the receive side
// has holes), never more than the SMSS cc counts in.
func (e *endpoint) maxPayload() int { return max(min(e.smss, e.mss-e.optionBytes()), 1) }

// output is one send opportunity (ARCHITECTURE.md "How a segment travels"):
// retransmissions of lost segments first, then new data and the FIN, while
// the congestion window, the peer's window, the data and the card's credit
// allow. It ends on exactly one stop reason, reported to cc with the flight.
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
		if e.cardStopped() {
			reason = cc.StopCard
			break
		}
		seg, ok := e.q.NextToRetransmit()
		reno := false
		if !ok && e.renoRtx {
			seg, ok = e.q.Oldest()
			reno = ok
			if !ok {
				e.renoRtx = false
			}
		}
		if ok {
			l := seg.End - seg.Start
			if !e.fastRtx && (e.inRecovery && int64(l) > e.prrSndcnt || !e.inRecovery && e.q.InFlight()+l > cwnd && e.q.InFlight() > 0) {
				reason = cc.StopCwnd
				break
			}
			e.fastRtx = false
			if reno {
				e.renoRtx = false
			}
			e.prrSent(l)
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
		inflight := e.q.InFlight()
		if size > 0 && (e.inRecovery && int64(size) > e.prrSndcnt || !e.inRecovery && inflight+size > cwnd) {
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
		e.prrSent(size)
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

// prrSent charges n bytes sent during recovery to PRR's allowance.
func (e *endpoint) prrSent(n uint64) {
	if e.inRecovery {
		e.prrOut += n
		e.prrSndcnt -= int64(n)
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
	e.pace.SetRate(e.ctl.PacingRate(e.est.SRTT()), 2*e.smss)
	at := e.pace.NextSend(now, size+header.TCPMinimumSize)
	if at <= now {
		return false
	}
	e.pacingWait = true
	e.tPace.arm(at - now)
	return true
}

// onPaceTimer resumes a paced sender, or one whose link refused a write.
func (e *endpoint) onPaceTimer() {
	e.pacingWait = false
	e.output()
	if e.ackNow && e.state.synchronized() {
		e.sendAck()
	}
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
	if e.undoable {
		e.undoRetrans++
	}
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
			if e.undoable && e.undoRetrans > 0 {
				e.undoRetrans--
			}
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

// armRetransmitTimer arms the tail loss probe (RFC 8985 §7.2) after new data
// when SACK is on and no recovery is running, else the RTO (RFC 6298 §5.1).
func (e *endpoint) armRetransmitTimer(sentNew bool) {
	if sentNew && e.armPTO() {
		return
	}
	if !e.tRtx.armed() || sentNew && e.tlpArmed {
		e.tlpArmed = false
		e.tRtx.arm(e.est.RTO())
	}
}

// armPTO arms the probe timeout if a tail loss probe is allowed: SACK on, no
// recovery, an RTT known (RFC 8985 §7.2); the PTO never exceeds the RTO.
func (e *endpoint) armPTO() bool {
	if !e.sackOK || e.inRecovery || e.rtoEpisode || !e.est.HasSample() {
		return false
	}
	segs := int(e.q.InFlight()) / max(e.smss, 1)
	pto := e.q.PTO(e.est.SRTT(), segs, e.p.opts.DelayedAck)
	if rto := e.est.RTO(); pto > rto {
		pto = rto
	}
	e.tlpArmed = true
	e.tRtx.arm(pto)
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

func (e *endpoint) onPersistTimer() {
	if !e.state.synchronized() || e.q.Outstanding() > 0 {
		return
	}
	dataEnd := e.sbuf.End() + 1
	if e.sndNxt >= dataEnd || e.sndUna+e.sndWnd > e.sndNxt {
		e.output()
		return
	}
	// Departure from RFC 9293 §3.8.6.1, which probes with a byte of new data:
	// the probe is an ACK carrying the already-acknowledged SND.UNA-1, which
	// the peer must answer with its window (§3.10.7.4) whatever that window
	// is, and which puts nothing in flight. Linux probes the same way.
	if e.persistBackoff < 8 {
		e.persistBackoff++
	}
	e.sendFlags(header.TCPFlagAck, e.sndUna-1)
	e.armPersist()
}
