// Segment arrival: RFC 9293 §3.10.7's checks in order (sequence, RST, SYN,
// ACK, data), dispatching to the files that own each step.

package tcp

import (
	"time"

	"gvisor.dev/gvisor/pkg/buffer"
	"gvisor.dev/gvisor/pkg/tcpip"
	"gvisor.dev/gvisor/pkg/tcpip/header"
	"gvisor.dev/gvisor/pkg/tcpip/stack"

	"github.com/netramp/netramp/tcp/internal/reasm"
)

// HandlePacket implements stack.TransportEndpoint: every inbound segment of
// this endpoint's registration arrives here, synchronously.
func (e *endpoint) HandlePacket(id stack.TransportEndpointID, pkt *stack.PacketBuffer) {
	e.p.st.segsIn.Inc()
	s, ok := e.p.parse(pkt, e.rxSum)
	if !ok {
		return
	}
	e.mu.Lock()
	if e.state == StateTimeWait && e.newIncarnation(&s) {
		// A new incarnation's SYN ends TIME-WAIT early and goes to the
		// listener, if any.
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
		e.segmentArrives(pkt, &s)
	}
	e.unlock()
}

// segmentArrives is HandlePacket's work for an endpoint that is not a
// listener, under e.mu; the listener calls it too, for a child's segment that
// reached the listener (listen.go, toChild).
func (e *endpoint) segmentArrives(pkt *stack.PacketBuffer, s *segment) {
	e.rxBurst, e.rxAggregate = e.p.burstAt(pkt.NICID), false
	e.handleSegment(s)
	e.rxBurst = nil
	// Checks that drop a segment may still owe the peer an ACK.
	if e.ackNow != ackNone && (e.state.synchronized() || e.state == StateSynRcvd) {
		e.sendAck(ackNone)
	}
}

// newIncarnation reports whether s, arriving in TIME-WAIT, is a SYN that may
// end it (RFC 9293 §3.10.7.4's allowance, as RFC 6191 §2 states it). When
// the old incarnation used timestamps the SYN must carry a TSval newer than
// TS.Recent, or an equal one and a sequence number above RCV.NXT.
// Departure from RFC 6191: a SYN without timestamps is not accepted on its
// sequence number alone there. A peer that used timestamps a moment ago
// still does, so such a SYN is more likely blind than a new incarnation;
// refusing it only makes a real one wait for TIME-WAIT to end.
func (e *endpoint) newIncarnation(s *segment) bool {
	if s.flags&(header.TCPFlagSyn|header.TCPFlagAck|header.TCPFlagRst) != header.TCPFlagSyn {
		return false
	}
	above := int32(s.seq-wire(e.irs, e.rcvNxt)) > 0
	// control:tcp-timewait-syn-no-ts-check
	if !e.tsOK || !e.tsRecentSet {
		return above
	}
	so := header.ParseSynOptions(s.opts, false)
	if !so.TS {
		return false
	}
	d := int32(so.TSVal - e.tsRecent)
	return d > 0 || d == 0 && above
}

// handleSegment is RFC 9293 §3.10.7's "SEGMENT ARRIVES" for every state but
// LISTEN, in the RFC's order: sequence check, RST, SYN, ACK, then text.
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
	// control:option-parser
	opts := e.parseOptions(s.opts)

	segOff, ok := e.checkSequence(s, &opts, now)
	if !ok {
		return
	}
	if s.has(header.TCPFlagRst) {
		e.handleRst(segOff, now)
		return
	}
	if s.has(header.TCPFlagSyn) {
		e.handleSynInWindow(s, now)
		return
	}
	// control:no-ack-counted
	if !s.has(header.TCPFlagAck) {
		e.p.st.dropState.Inc()
		return
	}
	// TS.Recent moves only after the ACK check (RFC 7323 §4.3 with RFC 5961).
	// control:ts-recent-after-ack
	if e.state == StateSynRcvd && !e.completeHandshake(s, segOff, now) {
		return
	}
	if !e.processAckField(s, &opts, segOff, now) {
		return
	}
	e.updateTSRecent(&opts, segOff, now)
	if e.state == StateClosed || e.state == StateTimeWait && !s.has(header.TCPFlagFin) {
		return
	}
	e.handleText(s, &opts, segOff, now)
	e.finishInput(now)
}

// checkSequence is the first check of RFC 9293 §3.10.7.4, PAWS first (RFC
// 7323 §5.3). It returns the segment's offset and whether processing goes
// on; an unacceptable segment is answered (or counted) here.
func (e *endpoint) checkSequence(s *segment, opts *header.TCPOptions, now time.Duration) (uint64, bool) {
	segOff, ok := unwrap(e.irs, e.rcvNxt, s.seq)
	if !ok {
		e.p.st.dropBadSeq.Inc()
		if !s.has(header.TCPFlagRst) {
			e.limitedAck(now)
		}
		return 0, false
	}
	if e.pawsRejects(s, opts, segOff, now) {
		e.p.st.dropPAWS.Inc()
		e.owedAck(s, segOff, now)
		return 0, false
	}
	wnd := e.rcvAdv - e.rcvNxt
	segLen := uint64(s.logicalLen())
	if !acceptable(segOff, segLen, e.rcvNxt, wnd) {
		e.unacceptable(s, opts, segOff, segLen, wnd, now)
		return 0, false
	}
	return segOff, true
}

// acceptable is RFC 9293 §3.10.7.4's table: whether a segment of segLen at
// segOff falls in the window of wnd at rcvNxt.
func acceptable(segOff, segLen, rcvNxt, wnd uint64) bool {
	switch {
	case segLen == 0 && wnd == 0:
		return segOff == rcvNxt
	case segLen == 0:
		return segOff >= rcvNxt && segOff < rcvNxt+wnd
	case wnd == 0:
		return false
	default:
		return segOff < rcvNxt+wnd && segOff+segLen > rcvNxt
	}
}

// unacceptable answers a segment outside the window. Old duplicates are
// still acknowledged (and reported as D-SACK, RFC 2883); zero-window probes
// are answered with the window.
func (e *endpoint) unacceptable(s *segment, opts *header.TCPOptions, segOff, segLen, wnd uint64, now time.Duration) {
	if !s.has(header.TCPFlagRst) {
		if segLen > 0 && segOff < e.rcvNxt && e.sackOK {
			e.dsack = &reasm.Range{Start: segOff, End: min64(segOff+uint64(s.data.n), e.rcvNxt)}
		}
		e.owedAck(s, segOff, now)
		if segOff+segLen > e.rcvNxt+wnd {
			e.p.st.dropBadSeq.Inc()
		}
	} else {
		e.p.st.dropBadSeq.Inc()
	}
	if s.has(header.TCPFlagAck) && !s.has(header.TCPFlagRst) && e.state.synchronized() && segOff <= e.rcvNxt {
		// A duplicate can still carry a valid ACK (e.g. a keepalive
		// or window probe answer); use its acknowledgment.
		e.processAckField(s, opts, segOff, now)
	}
}

// handleRst is the second check (RFC 5961 §3.2): an exact match resets, an
// in-window RST gets a challenge ACK.
func (e *endpoint) handleRst(segOff uint64, now time.Duration) {
	// control:rst-exact-match
	if segOff != e.rcvNxt {
		e.challengeAck(now)
		return
	}
	e.p.st.rstRecv.Inc()
	switch e.state {
	case StateSynRcvd: // a simultaneous open: passive ones are requests
		e.closeLocked(&tcpip.ErrConnectionRefused{})
	case StateTimeWait:
		// RFC 1337 §3 (TIME-WAIT assassination): a RST in TIME-WAIT is
		// ignored, so old duplicates cannot reach a new incarnation.
	case StateLastAck, StateClosing:
		e.closeLocked(nil)
	default:
		e.closeLocked(&tcpip.ErrConnectionReset{})
	}
}

// handleSynInWindow is the fourth check: a SYN in a synchronized state gets
// a challenge ACK (RFC 5961 §4.2); a retransmitted SYN in SYN-RECEIVED
// repeats our SYN-ACK.
func (e *endpoint) handleSynInWindow(s *segment, now time.Duration) {
	if e.state == StateSynRcvd && s.seq == e.irs && !s.has(header.TCPFlagAck) {
		e.sendSYN()
		return
	}
	e.challengeAck(now)
}

// completeHandshake is the fifth check in SYN-RECEIVED: an ACK of our SYN
// establishes the connection, any other ACK is answered by a RST.
func (e *endpoint) completeHandshake(s *segment, segOff uint64, now time.Duration) bool {
	ackOff, ok := unwrap(e.iss, e.sndUna, s.ack)
	if !ok || ackOff <= e.sndUna || ackOff > e.sndNxt {
		e.sendRSTFor(s)
		return false
	}
	e.established(now)
	e.sndWnd = uint64(s.wnd) << e.sndWS
	e.sndWL1, e.sndWL2 = segOff, ackOff
	e.maxSndWnd = max64(e.maxSndWnd, e.sndWnd)
	return true
}

// handleText is the seventh and eighth steps: the segment's data and FIN.
func (e *endpoint) handleText(s *segment, opts *header.TCPOptions, segOff uint64, now time.Duration) {
	fin := s.has(header.TCPFlagFin)
	switch e.state {
	case StateEstablished, StateFinWait1, StateFinWait2:
		e.receive(segOff, s.data, fin, now)
		if s.data.n > 0 {
			e.measureRcvRTT(opts, now)
		}
	case StateCloseWait, StateClosing, StateLastAck:
		// The peer's FIN is already in: retransmissions are acknowledged.
		if s.logicalLen() > 0 {
			e.owe(ackFin)
		}
	case StateTimeWait:
		if fin {
			e.owe(ackFin)
			e.tWait.arm(e.p.opts.TimeWait)
		}
	}
}

// finishInput sends what the segment called for: data the ACK allowed, and
// the ACK itself, now or delayed.
func (e *endpoint) finishInput(now time.Duration) {
	if e.state == StateClosed {
		return
	}
	if !e.deferOutput() {
		e.outputAt(now)
	}
	if e.ackNow != ackNone && !e.holdAck() {
		e.sendFlagsAt(header.TCPFlagAck, e.sndNxt, now)
	} else if e.ackPending > 0 && !e.ackHeld && !e.tDelack.armed() {
		e.tDelack.armAt(now, e.p.opts.DelayedAck)
	}
}

// sendRSTFor answers an unacceptable ACK in SYN-RECEIVED or SYN-SENT with a
// RST carrying SEG.ACK as its sequence number (RFC 9293 §3.10.7.3/4).
func (e *endpoint) sendRSTFor(s *segment) {
	if s.has(header.TCPFlagRst) || e.route == nil {
		return
	}
	pkt := e.p.buildPacket(e.pathOf(), e.id.LocalPort, e.id.RemotePort, s.ack, 0, header.TCPFlagRst, 0, nil, buffer.Buffer{})
	e.queue(outSeg{pkt: pkt, isRst: true})
	e.p.st.rstSent.Inc()
}
