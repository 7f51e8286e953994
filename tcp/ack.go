// ACK processing (RFC 9293 §3.10.7.4, fifth step): the send window, RTT
// samples, SACK scoreboard, loss detection and congestion control.

package tcp

import (
	"time"

	"gvisor.dev/gvisor/pkg/tcpip/header"

	"github.com/netramp/netramp/cc"
	"github.com/netramp/netramp/tcp/internal/rtxq"
)

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
	e.ackGap.acked(now, wasOutstanding, e.q.Outstanding() > 0)
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
