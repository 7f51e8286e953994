package tcp

import (
	"time"

	"gvisor.dev/gvisor/pkg/tcpip"
	"gvisor.dev/gvisor/pkg/tcpip/header"
	"gvisor.dev/gvisor/pkg/tcpip/stack"

	"github.com/netramp/netramp/cc"
	"github.com/netramp/netramp/tcp/internal/reasm"
	"github.com/netramp/netramp/tcp/internal/rtxq"
)

// segment is one parsed inbound segment; payload and opts alias the packet.
type segment struct {
	seq, ack uint32
	flags    header.TCPFlags
	wnd      uint16
	payload  []byte
	opts     []byte
}

func (s *segment) logicalLen() int {
	n := len(s.payload)
	if s.flags&header.TCPFlagSyn != 0 {
		n++
	}
	if s.flags&header.TCPFlagFin != 0 {
		n++
	}
	return n
}

func (s *segment) has(f header.TCPFlags) bool { return s.flags&f != 0 }

// parse validates the header (data offset, options inside it, checksum) and
// returns the segment; a malformed or corrupted one is counted and refused.
func (p *protocol) parse(pkt *stack.PacketBuffer) (segment, bool) {
	hdr := header.TCP(pkt.TransportHeader().Slice())
	if len(hdr) < header.TCPMinimumSize {
		p.st.dropMalformed.Inc()
		return segment{}, false
	}
	off := int(hdr.DataOffset())
	if off < header.TCPMinimumSize || off > len(hdr) {
		p.st.dropMalformed.Inc()
		return segment{}, false
	}
	size := pkt.Data().Size()
	if size > 0xffff {
		p.st.dropMalformed.Inc()
		return segment{}, false
	}
	src, dst := pseudoAddrs(pkt)
	_, csumValid, ok := header.TCPValid(hdr, func() uint16 { return pkt.Data().Checksum() }, uint16(size),
		src, dst, pkt.RXChecksumValidated)
	if !ok {
		p.st.dropMalformed.Inc()
		return segment{}, false
	}
	if !csumValid {
		p.st.csumErrors.Inc()
		return segment{}, false
	}
	s := segment{
		seq: hdr.SequenceNumber(), ack: hdr.AckNumber(), flags: hdr.Flags(),
		wnd: hdr.WindowSize(), opts: hdr[header.TCPMinimumSize:off],
	}
	if size > 0 {
		s.payload = payloadInPlace(pkt, size)
	}
	return s, true
}

// payloadInPlace is the segment's payload, read where it lies when one view
// holds it: PullUp would copy a view whose chunk is shared (an in-memory link
// shares it with the sender's packet), and the payload is only read here,
// then copied into the receive ring or the out-of-order store.
func payloadInPlace(pkt *stack.PacketBuffer, size int) []byte {
	vl, off := pkt.AsViewList()
	off += pkt.HeaderSize()
	for v := vl.Front(); v != nil; v = v.Next() {
		n := v.Size()
		if off < n {
			if off+size <= n {
				return v.AsSlice()[off : off+size]
			}
			break
		}
		off -= n
	}
	b, _ := pkt.Data().PullUp(size)
	return b
}

// pseudoAddrs reads the pseudo-header's addresses (RFC 9293 §3.1) straight
// from the network header: PacketBuffer.Network boxes the header in an
// interface, one heap allocation per segment.
func pseudoAddrs(pkt *stack.PacketBuffer) (src, dst tcpip.Address) {
	switch pkt.NetworkProtocolNumber {
	case header.IPv4ProtocolNumber:
		h := header.IPv4(pkt.NetworkHeader().Slice())
		return h.SourceAddress(), h.DestinationAddress()
	case header.IPv6ProtocolNumber:
		h := header.IPv6(pkt.NetworkHeader().Slice())
		return h.SourceAddress(), h.DestinationAddress()
	}
	net := pkt.Network()
	return net.SourceAddress(), net.DestinationAddress()
}

// HandlePacket implements stack.TransportEndpoint: every inbound segment of
// this endpoint's registration arrives here, synchronously.
func (e *endpoint) HandlePacket(id stack.TransportEndpointID, pkt *stack.PacketBuffer) {
	e.p.st.segsIn.Inc()
	s, ok := e.p.parse(pkt)
	if !ok {
		return
	}
	e.mu.Lock()
	if e.state == StateTimeWait && s.flags&(header.TCPFlagSyn|header.TCPFlagAck|header.TCPFlagRst) == header.TCPFlagSyn &&
		int32(s.seq-wire(e.irs, e.rcvNxt)) > 0 {
		// A new incarnation's SYN above the old sequence space ends
		// TIME-WAIT early (RFC 9293 §3.10.7.4's allowance, as RFC 6191),
		// and goes to the listener, if any.
		e.closeLocked(nil)
		e.unlock()
		if l := e.p.s.FindTransportEndpoint(pkt.NetworkProtocolNumber, ProtocolNumber, id, pkt.NICID); l != nil && l != stack.TransportEndpoint(e) {
			l.HandlePacket(id, pkt)
		} else {
			e.p.HandleUnknownDestinationPacket(id, pkt)
		}
		return
	}
	if e.state == StateListen {
		e.handleListen(id, pkt, &s)
	} else {
		e.handleSegment(&s)
		// Checks that drop a segment may still owe the peer an ACK.
		if e.ackNow && (e.state.synchronized() || e.state == StateSynRcvd) {
			e.sendAck()
		}
	}
	e.unlock()
}

// HandleError implements stack.TransportEndpoint; ICMP errors are ignored
// (RFC 5927 §4.1 lets a TCP treat soft errors as advisory).
func (e *endpoint) HandleError(stack.TransportError, *stack.PacketBuffer) {}

// handleSegment is RFC 9293 §3.10.7's "SEGMENT ARRIVES" for every state but
// LISTEN.
func (e *endpoint) handleSegment(s *segment) {
	now := e.now()
	switch e.state {
	case StateClosed, StateInitial, StateBound:
		e.p.st.dropState.Inc()
		return
	case StateSynSent:
		e.handleSynSent(s, now)
		return
	}
	e.lastRecv = now
	e.kaProbes = 0
	opts := header.ParseTCPOptions(s.opts)

	// Sequence number checks, PAWS first (RFC 7323 §5.3).
	segOff, ok := unwrap(e.irs, e.rcvNxt, s.seq)
	if !ok {
		e.p.st.dropBadSeq.Inc()
		if !s.has(header.TCPFlagRst) {
			e.ackNow = true
		}
		return
	}
	if e.tsOK && opts.TS && !s.has(header.TCPFlagRst) && e.tsRecentSet && int32(opts.TSVal-e.tsRecent) < 0 &&
		now-e.tsRecentT < 24*24*time.Hour {
		e.p.st.dropPAWS.Inc()
		e.ackNow = true
		return
	}
	wnd := e.rcvAdv - e.rcvNxt
	segLen := uint64(s.logicalLen())
	acceptable := false
	switch {
	case segLen == 0 && wnd == 0:
		acceptable = segOff == e.rcvNxt
	case segLen == 0:
		acceptable = segOff >= e.rcvNxt && segOff < e.rcvNxt+wnd
	case wnd == 0:
		acceptable = false
	default:
		acceptable = segOff < e.rcvNxt+wnd && segOff+segLen > e.rcvNxt
	}
	if !acceptable {
		// Old duplicates are still acknowledged (and reported as D-SACK,
		// RFC 2883); zero-window probes are answered with the window.
		if !s.has(header.TCPFlagRst) {
			if segLen > 0 && segOff < e.rcvNxt && e.sackOK {
				e.dsack = &reasm.Range{Start: segOff, End: min64(segOff+uint64(len(s.payload)), e.rcvNxt)}
			}
			e.ackNow = true
			if segOff+segLen > e.rcvNxt+wnd {
				e.p.st.dropBadSeq.Inc()
			}
		} else {
			e.p.st.dropBadSeq.Inc()
		}
		if s.has(header.TCPFlagAck) && !s.has(header.TCPFlagRst) && e.state.synchronized() && segOff <= e.rcvNxt {
			// A duplicate can still carry a valid ACK (e.g. a keepalive
			// or window probe answer); use its acknowledgment.
			e.processAckField(s, &opts, segOff, now)
		}
		return
	}

	// RST (RFC 5961 §3.2): exact match resets, in-window gets a challenge.
	if s.has(header.TCPFlagRst) {
		if segOff != e.rcvNxt {
			e.challengeAck(now)
			return
		}
		e.p.st.rstRecv.Inc()
		switch e.state {
		case StateSynRcvd:
			if e.parent != nil {
				e.closeLocked(nil)
				return
			}
			e.closeLocked(&tcpip.ErrConnectionRefused{})
		case StateTimeWait:
			// RFC 1337 §3 (TIME-WAIT assassination): a RST in TIME-WAIT is
			// ignored, so old duplicates cannot reach a new incarnation.
			return
		case StateLastAck, StateClosing:
			e.closeLocked(nil)
		default:
			e.closeLocked(&tcpip.ErrConnectionReset{})
		}
		return
	}

	// SYN in a synchronized state: challenge ACK (RFC 5961 §4.2). A
	// retransmitted SYN in SYN-RECEIVED repeats our SYN-ACK.
	if s.has(header.TCPFlagSyn) {
		if e.state == StateSynRcvd && s.seq == e.irs && !s.has(header.TCPFlagAck) {
			e.sendSYN()
			return
		}
		e.challengeAck(now)
		return
	}

	if !s.has(header.TCPFlagAck) {
		e.p.st.dropState.Inc()
		return
	}

	// TS.Recent (RFC 7323 §4.3): the segment covers Last.ACK.sent.
	if e.tsOK && opts.TS && segOff <= e.lastAckSent {
		e.tsRecent = opts.TSVal
		e.tsRecentT = now
		e.tsRecentSet = true
	}

	if e.state == StateSynRcvd {
		ackOff, ok := unwrap(e.iss, e.sndUna, s.ack)
		if !ok || ackOff <= e.sndUna || ackOff > e.sndNxt {
			e.sendRSTFor(s)
			return
		}
		e.established(now)
		e.sndWnd = uint64(s.wnd) << e.sndWS
		e.sndWL1, e.sndWL2 = segOff, ackOff
		e.maxSndWnd = max64(e.maxSndWnd, e.sndWnd)
		if e.parent != nil {
			e.handOff = true
		}
	}

	if !e.processAckField(s, &opts, segOff, now) {
		return
	}
	if e.state == StateClosed || e.state == StateTimeWait && !s.has(header.TCPFlagFin) {
		return
	}

	// Data and FIN.
	fin := s.has(header.TCPFlagFin)
	switch e.state {
	case StateEstablished, StateFinWait1, StateFinWait2:
		e.receive(segOff, s.payload, fin, now)
		if len(s.payload) > 0 {
			e.measureRcvRTT(&opts, now)
		}
	case StateCloseWait, StateClosing, StateLastAck:
		// The peer's FIN is already in: retransmissions are acknowledged.
		if segLen > 0 {
			e.ackNow = true
		}
	case StateTimeWait:
		if fin {
			e.ackNow = true
			e.tWait.arm(e.p.opts.TimeWait)
		}
	}
	e.finishInput()
}

// finishInput sends what the segment called for: data the ACK allowed, and
// the ACK itself, now or delayed.
func (e *endpoint) finishInput() {
	if e.state == StateClosed {
		return
	}
	e.output()
	if e.ackNow {
		e.sendAck()
	} else if e.ackPending > 0 && !e.tDelack.armed() {
		e.tDelack.arm(e.p.opts.DelayedAck)
	}
}

// processAckField is §3.10.7.4's fifth step; false means drop the segment.
func (e *endpoint) processAckField(s *segment, opts *header.TCPOptions, segOff uint64, now time.Duration) bool {
	ackOff, ok := unwrap(e.iss, e.sndUna, s.ack)
	if !ok || ackOff > e.sndNxt {
		// Acknowledges data never sent: ACK and drop (RFC 9293, RFC 5961 §5.2).
		e.p.st.dropBadAck.Inc()
		e.ackNow = true
		return false
	}
	if ackOff+e.maxSndWnd < e.sndUna {
		// Too old for any window the peer has seen: challenge (RFC 5961 §5.2).
		e.p.st.dropBadAck.Inc()
		e.challengeAck(now)
		return false
	}
	e.onAck(s, opts, segOff, ackOff, now)
	if e.state == StateClosed {
		return false
	}
	finAcked := e.finQueued && e.sndUna == e.sbuf.End()+2
	switch e.state {
	case StateFinWait1:
		if finAcked {
			e.state = StateFinWait2
			if e.userClosed {
				// An orphaned FIN-WAIT-2 does not wait forever for the peer.
				e.tLinger.arm(e.p.opts.TimeWait)
			}
		}
	case StateClosing:
		if finAcked {
			e.enterTimeWait()
		}
	case StateLastAck:
		if finAcked {
			e.closeLocked(nil)
			return false
		}
	}
	return true
}

// onAck updates the send side from an acceptable ACK: window, SACK
// scoreboard, RTT, congestion control, loss detection and recovery.
func (e *endpoint) onAck(s *segment, opts *header.TCPOptions, segOff, ackOff uint64, now time.Duration) {
	// Window update (RFC 9293 §3.10.7.4, SND.WL1/WL2).
	if e.sndWL1 < segOff || e.sndWL1 == segOff && e.sndWL2 <= ackOff {
		e.sndWnd = uint64(s.wnd) << e.sndWS
		e.sndWL1, e.sndWL2 = segOff, ackOff
		if e.sndWnd > e.maxSndWnd {
			e.maxSndWnd = e.sndWnd
		}
		if e.sndWnd > 0 {
			e.tPersist.stop()
		}
	}
	if e.q == nil {
		return
	}
	sacks := e.sackScratch[:0]
	if e.sackOK {
		for i, b := range opts.SACKBlocks {
			st, ok1 := unwrap(e.iss, e.sndUna, uint32(b.Start))
			en, ok2 := unwrap(e.iss, e.sndUna, uint32(b.End))
			switch {
			case !ok1 || !ok2 || en <= st || en > e.sndNxt:
				e.p.st.dropBadSACK.Inc()
			case st <= ackOff || st < e.sndUna:
				// A D-SACK (RFC 2883 §4) is only meaningful first and
				// below the cumulative ACK.
				if i == 0 && en <= ackOff {
					sacks = append(sacks, rtxq.Range{Start: st, End: en})
				} else if st > ackOff || en > ackOff {
					e.p.st.dropBadSACK.Inc()
				}
			default:
				sacks = append(sacks, rtxq.Range{Start: st, End: en})
			}
		}
	}
	e.sackScratch = sacks[:0]
	wasOutstanding := e.q.Outstanding() > 0
	res := e.q.OnAck(ackOff, sacks, now)
	progress := ackOff > e.sndUna
	if progress {
		e.sndUna = ackOff
		dataUna := e.sndUna - 1
		if end := e.sbuf.End(); dataUna > end {
			dataUna = end
		}
		e.sbuf.Trim(dataUna)
		e.rtoAttempts = 0
		e.est.ResetBackoff()
		e.persistBackoff = 0
		e.dupAcks = 0
		e.notify |= waiterWritable
		e.growSendBuffer()
	}
	// RTT: per-segment send times (Karn-clean, RFC 6298 §3), else the
	// timestamp echo (RFC 7323 §4.1).
	sample := res.RTT
	if sample <= 0 && progress && e.tsOK && opts.TS && opts.TSEcr != 0 {
		ms := int32(e.tsAt(now) - opts.TSEcr)
		if ms >= 0 && ms < 600000 {
			sample = time.Duration(ms)*time.Millisecond + time.Millisecond/2
		}
	}
	if sample > 0 {
		e.est.Sample(now, sample)
	}
	// Spurious retransmission evidence: D-SACK of a retransmission, or an
	// ACK echoing a timestamp older than the RTO's retransmission (RFC 3522).
	// A recovery is undone only when every retransmission it made has been
	// reported spurious (RFC 8985 §9.3's intent, RFC 9438 §4.9): one D-SACK
	// among real losses proves nothing.
	spuriousRTO := e.rtoEpisode && progress && e.tsOK && opts.TS && opts.TSEcr != 0 && int32(opts.TSEcr-e.retransTS) < 0
	allDSACKed := false
	if e.undoable && res.DSACK && res.SpuriousHint && e.undoRetrans > 0 {
		e.undoRetrans--
		allDSACKed = e.undoRetrans == 0
	}
	if e.undoable && (spuriousRTO || allDSACKed) {
		e.undoable = false
		e.ctl.OnSpurious(now)
		e.p.st.spurious.Inc()
		e.rtoEpisode = false
		e.inRecovery = false
	}
	// An ACK with no SACK information, whether or not SACK was negotiated
	// (a peer may stop sending blocks, as some do once their write side is
	// shut), is read as NewReno reads it (RFC 5681 §3.2, RFC 6582): the third
	// duplicate ACK starts a recovery and retransmits the head; each partial
	// ACK in a recovery NewReno started retransmits the new head at once. A
	// duplicate ACK means one segment has left the network (RFC 6937's
	// DeliveredData without SACK). ACKs that carry blocks go to RACK instead.
	dupDelivered := uint64(0)
	renoEnter := false
	if len(sacks) == 0 {
		switch {
		case !progress && len(s.payload) == 0 && wasOutstanding && !s.has(header.TCPFlagFin|header.TCPFlagSyn):
			e.dupAcks++
			dupDelivered = uint64(e.smss)
			if e.dupAcks == 3 && !e.inRecovery && !e.rtoEpisode {
				renoEnter = true
			}
		case progress && e.inRecovery && e.renoRecovery && e.sndUna < e.recoverPt:
			e.renoRtx = true
			e.fastRtx = true
		}
	}
	acked := res.CumAcked + res.NewlySacked
	srtt := e.est.SRTT()
	e.ctl.OnAck(cc.Ack{
		Now: now, Acked: int(acked), SndUna: e.sndUna, SndNxt: e.sndNxt,
		RTT: sample, SRTT: srtt, InFlight: int(e.q.InFlight()),
	})
	if e.sackOK {
		lost, reo := e.q.DetectLoss(now, srtt)
		if reo > 0 {
			e.tReo.arm(reo)
		} else {
			e.tReo.stop()
		}
		if lost > 0 && !e.inRecovery {
			e.enterRecovery(now)
		}
	}
	if renoEnter && !e.inRecovery {
		e.enterRecovery(now)
		e.renoRecovery = true
		e.renoRtx = true
	}
	if e.inRecovery {
		delivered := res.Delivered + dupDelivered
		e.prrDelivered += delivered
		e.prrUpdate(delivered)
	}
	if e.inRecovery && e.sndUna >= e.recoverPt {
		e.inRecovery = false
		e.ctl.OnRecoveryEnd(now)
	}
	if e.rtoEpisode && e.sndUna >= e.recoverPt {
		e.rtoEpisode = false
	}
	e.q.SetInRecovery(e.inRecovery || e.rtoEpisode)
	if e.q.Outstanding() == 0 {
		e.tRtx.stop()
		e.tlpArmed = false
	} else if progress {
		// RFC 6298 §5.3 restarts the RTO on an ACK of new data; RFC 8985
		// §7.2 arms the probe timeout instead when a probe may be sent.
		e.tlpArmed = false
		if !e.armPTO() {
			e.tRtx.arm(e.est.RTO())
		}
	}
}

// enterRecovery starts a loss recovery episode (RFC 6675 §5, RFC 8985 §6):
// one window reduction, and retransmissions of the marked segments follow.
func (e *endpoint) enterRecovery(now time.Duration) {
	e.inRecovery = true
	e.renoRecovery = false
	e.recoverPt = e.sndNxt
	e.undoable = true
	e.undoRetrans = 0
	e.p.st.recoveries.Inc()
	e.ctl.OnCongestion(now, int(e.q.InFlight()))
	e.q.SetInRecovery(true)
	// The first lost segment goes at once, whatever the reduced window
	// (fast retransmit: RFC 5681 §3.2 step 2, RFC 6675 §5 step 4.2).
	e.fastRtx = true
	e.recoverFS = max(e.sndNxt-e.sndUna, 1)
	e.prrDelivered, e.prrOut, e.prrSndcnt = 0, 0, 0
}

// prrUpdate is Proportional Rate Reduction (RFC 6937 §3) on one ACK in
// recovery: while the pipe is above ssthresh, send in proportion to what
// was delivered, so the window comes down to ssthresh smoothly over one RTT;
// below it, slow-start back up (PRR-SSRB), never faster than delivered + 1 MSS.
func (e *endpoint) prrUpdate(delivered uint64) {
	pipe := e.q.InFlight()
	ss := uint64(max(e.ctl.Ssthresh(), e.smss))
	var sndcnt int64
	if pipe > ss {
		sndcnt = int64((e.prrDelivered*ss+e.recoverFS-1)/e.recoverFS) - int64(e.prrOut)
	} else {
		limit := int64(max(e.prrDelivered-min(e.prrOut, e.prrDelivered), delivered)) + int64(e.smss)
		sndcnt = min(int64(ss-pipe), limit)
	}
	e.prrSndcnt = max(sndcnt, 0)
}

// growSendBuffer lets the send queue follow the window in use: twice cwnd
// and at least the peer's window, up to SendBufferMax.
func (e *endpoint) growSendBuffer() {
	want := 2 * e.ctl.Cwnd()
	if w := int(e.sndWnd); w > want {
		want = w
	}
	if want <= e.sbuf.Cap() {
		return
	}
	// Grow by doubling, so the ring is reallocated O(log) times, not on
	// every ACK of slow start.
	want = max(want, 2*e.sbuf.Cap())
	if want > e.p.opts.SendBufferMax {
		want = e.p.opts.SendBufferMax
	}
	if want > e.sbuf.Cap() {
		_ = e.sbuf.SetCap(want)
	}
}

// receive takes the in-window part of a segment's data and FIN.
func (e *endpoint) receive(segOff uint64, payload []byte, fin bool, now time.Duration) {
	if e.rdShut && e.userClosed {
		// Data for a closed socket has no reader: RFC 9293 §3.10.4 (CLOSE
		// with data pending) is answered by a reset.
		if len(payload) > 0 {
			e.resetLocked(&tcpip.ErrConnectionAborted{})
			return
		}
	}
	dataOff := segOff
	if len(payload) > 0 && dataOff < e.rcvNxt {
		cut := e.rcvNxt - dataOff
		if e.sackOK {
			e.dsack = &reasm.Range{Start: dataOff, End: e.rcvNxt}
		}
		e.ackNow = true
		if cut >= uint64(len(payload)) {
			payload = nil
		} else {
			payload = payload[cut:]
		}
		dataOff = e.rcvNxt
	}
	if end := dataOff + uint64(len(payload)); end > e.rcvAdv {
		keep := uint64(0)
		if e.rcvAdv > dataOff {
			keep = e.rcvAdv - dataOff
		}
		payload = payload[:keep]
		fin = false
	}
	if fin {
		e.finPending = true
		e.finOff = dataOff + uint64(len(payload))
	}
	if len(payload) > 0 {
		if dataOff == e.rcvNxt {
			if free := len(e.rcvRing) - e.rcvLen; len(payload) > free {
				// Cannot happen while the window is honoured (the ring
				// holds the whole advertised window); keep what fits and
				// let the rest be retransmitted rather than lose it.
				e.p.st.dropOOOFull.Add(uint64(len(payload) - free))
				payload = payload[:free]
			}
			hadHoles := !e.ooo.Empty()
			e.appendRcv(payload)
			e.rcvNxt += uint64(len(payload))
			if hadHoles {
				e.rcvNxt = e.ooo.Take(e.rcvNxt, e.appendRcv)
				e.ackNow = true // a hole filled: ACK at once (RFC 5681 §4.2)
			}
			e.ackPending++
			if len(payload) < e.smss && len(payload) < e.ourMSS()-40 {
				// Short segments are not delayed past the peer's Nagle.
				e.ackPending = e.p.opts.StretchAck
			}
			e.notify |= waiterReadable
		} else {
			stored, err := e.ooo.Insert(dataOff, payload)
			if err != nil || stored < len(payload) {
				e.p.st.dropOOOFull.Add(uint64(len(payload) - stored))
			}
			e.ackNow = true // out of order: ACK at once with SACK (RFC 5681 §4.2)
		}
	}
	if e.finPending && e.finOff == e.rcvNxt {
		e.finPending = false
		e.finRcvd = true
		e.rcvNxt++
		e.ackNow = true
		e.notify |= waiterReadable | waiterHUpIfDone
		switch e.state {
		case StateEstablished:
			e.state = StateCloseWait
		case StateFinWait1:
			e.state = StateClosing
		case StateFinWait2:
			e.enterTimeWait()
		}
	}
	if e.ackPending >= e.p.opts.StretchAck || e.p.opts.DelayedAck < 0 {
		e.ackNow = true
	}
}

// measureRcvRTT keeps the receiver's round-trip estimate for autotuning:
// from the timestamp echo when timestamps are on (RFC 7323 §4.1), else the
// time one advertised window takes to arrive.
func (e *endpoint) measureRcvRTT(opts *header.TCPOptions, now time.Duration) {
	if e.tsOK && opts.TS && opts.TSEcr != 0 {
		if ms := int32(e.tsAt(now) - opts.TSEcr); ms >= 0 && ms < 600000 {
			e.rcvRTT.OnTimestampSample(time.Duration(ms)*time.Millisecond + time.Millisecond/2)
		}
		return
	}
	e.rcvRTT.OnData(now, e.rcvNxt, e.rcvAdv)
}

// rttForTuning is the round trip autotuning measures reads over.
func (e *endpoint) rttForTuning() time.Duration {
	if e.est.HasSample() {
		return e.est.SRTT()
	}
	return e.rcvRTT.RTT()
}

// appendRcv copies in-order bytes into the receive ring.
func (e *endpoint) appendRcv(p []byte) {
	for len(p) > 0 {
		if e.rcvLen == len(e.rcvRing) {
			// Cannot happen while the window is honoured; refuse rather
			// than grow past the buffer.
			e.p.st.dropOOOFull.Add(uint64(len(p)))
			return
		}
		tail := (e.rcvHead + e.rcvLen) % len(e.rcvRing)
		n := len(e.rcvRing) - tail
		if free := len(e.rcvRing) - e.rcvLen; n > free {
			n = free
		}
		n = copy(e.rcvRing[tail:tail+n], p)
		e.rcvLen += n
		p = p[n:]
	}
}

// challengeAck sends an RFC 5961 challenge ACK, at most ten per second per
// connection (§7 leaves the limit to the implementation).
func (e *endpoint) challengeAck(now time.Duration) {
	if now-e.chalStart > time.Second {
		e.chalStart = now
		e.chalCount = 0
	}
	if e.chalCount >= 10 {
		e.p.st.dropRateLimited.Inc()
		return
	}
	e.chalCount++
	e.p.st.challengeAcks.Inc()
	e.sendAck()
}

// sendRSTFor answers an unacceptable ACK in SYN-RECEIVED or SYN-SENT with a
// RST carrying SEG.ACK as its sequence number (RFC 9293 §3.10.7.3/4).
func (e *endpoint) sendRSTFor(s *segment) {
	if s.has(header.TCPFlagRst) || e.route == nil {
		return
	}
	pkt := e.p.buildPacket(e.route, e.id.LocalPort, e.id.RemotePort, s.ack, 0, header.TCPFlagRst, 0, nil, nil, nil)
	e.queue(outSeg{pkt: pkt, isRst: true})
	e.p.st.rstSent.Inc()
}

// handleSynSent is RFC 9293 §3.10.7.3.
func (e *endpoint) handleSynSent(s *segment, now time.Duration) {
	ackOK := false
	if s.has(header.TCPFlagAck) {
		if s.ack != e.iss+1 {
			e.sendRSTFor(s)
			return
		}
		ackOK = true
	}
	if s.has(header.TCPFlagRst) {
		if ackOK {
			e.p.st.rstRecv.Inc()
			e.closeLocked(&tcpip.ErrConnectionRefused{})
		}
		return
	}
	if !s.has(header.TCPFlagSyn) {
		return
	}
	so := header.ParseSynOptions(s.opts, s.has(header.TCPFlagAck))
	e.irs = s.seq
	e.rcvNxt = 1
	e.negotiate(&so, true)
	if e.tsOK {
		e.tsRecent = so.TSVal
		e.tsRecentT = now
		e.tsRecentSet = true
	}
	e.lastRecv = now
	if ackOK {
		if e.synRetries == 0 {
			e.est.Sample(now, now-e.lastSend)
		}
		e.sndUna = 1
		e.initConn()
		e.sndWnd = uint64(s.wnd) // never scaled in a SYN (RFC 7323 §2.2)
		e.maxSndWnd = e.sndWnd
		e.sndWL1, e.sndWL2 = 0, 1
		e.established(now)
		e.ackNow = true
		e.finishInput()
		return
	}
	// Simultaneous open (RFC 9293 §3.5, figure 8).
	e.state = StateSynRcvd
	e.initConn()
	e.sndWnd = uint64(s.wnd)
	e.tRtx.stop()
	e.sendSYN()
}

// established completes the handshake.
func (e *endpoint) established(now time.Duration) {
	e.state = StateEstablished
	e.synAcked = true
	if e.sndUna == 0 {
		e.sndUna = 1
	}
	e.synRetries = 0
	e.est.ResetBackoff()
	e.tRtx.stop()
	e.lastRecv = now
	e.notify |= waiterWritable
	if e.ops.GetKeepAlive() {
		e.tKeep.arm(e.kaIdle)
	}
}

// enterTimeWait starts TIME-WAIT's 2·MSL (RFC 9293 §3.10.7.4).
func (e *endpoint) enterTimeWait() {
	e.state = StateTimeWait
	e.tRtx.stop()
	e.tReo.stop()
	e.tKeep.stop()
	e.tPersist.stop()
	e.tLinger.stop()
	e.tWait.arm(e.p.opts.TimeWait)
	e.notify |= waiterReadable | waiterWritable
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

func (e *endpoint) onDelackTimer() {
	if e.state.synchronized() && (e.ackPending > 0 || e.ackNow) {
		e.sendAck()
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
	if lost > 0 && !e.inRecovery {
		e.enterRecovery(now)
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
			if e.parent != nil && e.state == StateSynRcvd {
				e.closeLocked(nil)
				return
			}
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
	if e.tlpArmed {
		e.tlpArmed = false
		e.lossProbe(now)
		e.tRtx.arm(e.est.RTO())
		return
	}
	// The give-up budget counts only these timer retransmissions; ACK-clocked
	// ones never spend it, and any progress refills it (onAck).
	e.rtoAttempts++
	if e.rtoAttempts > maxRTOAttempts || e.userTimeout > 0 && now-e.lastRecv > e.userTimeout {
		e.p.st.giveUps.Inc()
		e.resetLocked(&tcpip.ErrTimeout{})
		return
	}
	e.p.st.rto.Inc()
	flight := int(e.q.InFlight())
	e.q.OnRTO(now)
	e.ctl.OnRTO(now, flight)
	e.est.Backoff()
	e.rtoEpisode = true
	e.inRecovery = false
	e.recoverPt = e.sndNxt
	e.undoable = true
	e.undoRetrans = 0
	e.retransTS = e.tsVal()
	e.q.SetInRecovery(true)
	e.output()
	// output may not have resent anything (card stop); the timer stays.
	e.tRtx.arm(e.est.RTO())
}

// lossProbe is RFC 8985 §7.3: send one new segment if the windows allow,
// else resend the last segment, to get an ACK that reveals a tail loss.
func (e *endpoint) lossProbe(now time.Duration) {
	e.p.st.lossProbes.Inc()
	dataEnd := e.sbuf.End() + 1
	if e.sndNxt < dataEnd && e.sndNxt < e.sndUna+e.sndWnd {
		size := min64(min64(dataEnd-e.sndNxt, uint64(e.maxPayload())), e.sndUna+e.sndWnd-e.sndNxt)
		start := e.sndNxt
		fin := e.finQueued && start+size == dataEnd
		end := start + size
		if fin {
			end++
		}
		if e.q.Push(start, end, now, fin) == nil {
			e.sndNxt = end
			e.sndMax = max64(e.sndMax, end)
			e.sendData(start, end, fin, nil)
			e.ctl.OnSend(now, e.sndNxt)
			return
		}
	}
	if seg, ok := e.q.Newest(); ok {
		e.retransmit(seg.Start, seg.End, seg.Fin, now)
	}
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
	e.sendFlags(header.TCPFlagAck, e.sndNxt-1)
	e.tKeep.arm(e.kaIntvl)
}
