// ACK processing (RFC 9293 §3.10.7.4, fifth step): the send window, RTT
// samples, SACK scoreboard, loss detection and congestion control.

package tcp

import (
	"time"

	"gvisor.dev/gvisor/pkg/tcpip/header"

	"github.com/netramp/netramp/cc"
	"github.com/netramp/netramp/tcp/internal/recovery"
	"github.com/netramp/netramp/tcp/internal/rtxq"
)

// processAckField is §3.10.7.4's fifth step; false means drop the segment.
func (e *endpoint) processAckField(s *segment, opts *header.TCPOptions, segOff uint64, now time.Duration) bool {
	ackOff, ok := unwrap(e.iss, e.sndUna, s.ack)
	if !ok || ackOff > e.sndNxt {
		// Acknowledges data never sent: ACK and drop (RFC 9293, RFC 5961 §5.2).
		e.p.st.dropBadAck.Inc()
		e.limitedAck(now)
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
	// The peer answers: it is alive, whatever its window.
	e.persistProbes = 0 // control:persist-answered
	e.updateSendWindow(s, segOff, ackOff)
	if e.q == nil {
		return
	}
	sacks := e.sackRanges(opts, ackOff)
	e.probe = false // an ACK came: a probe still waiting has done its job
	wasOutstanding := e.q.Outstanding() > 0
	res := e.q.OnAckEcho(ackOff, sacks, now, e.echoSpan(opts, now))
	e.p.st.spuriousBytes.Add(res.SpuriousBytes)
	e.ackGap.acked(now, wasOutstanding, e.q.Outstanding() > 0)
	progress := ackOff > e.sndUna
	if progress {
		e.advanceUna(ackOff)
	}
	sample := e.rttSample(res, opts, progress, now)
	if sample > 0 {
		e.est.Sample(now, sample)
	}
	e.recoveryOnAck(s, opts, res, len(sacks) > 0, progress, wasOutstanding, sample, now)
	e.q.SetInRecovery(e.rec.InRecovery())
	e.rearmOnAck(progress, now)
}

// updateSendWindow takes the segment's window if it is newer than the last
// one taken (RFC 9293 §3.10.7.4, SND.WL1/WL2).
func (e *endpoint) updateSendWindow(s *segment, segOff, ackOff uint64) {
	if !(e.sndWL1 < segOff || e.sndWL1 == segOff && e.sndWL2 <= ackOff) {
		return
	}
	e.sndWnd = uint64(s.wnd) << e.sndWS
	e.sndWL1, e.sndWL2 = segOff, ackOff
	if e.sndWnd > e.maxSndWnd {
		e.maxSndWnd = e.sndWnd
	}
	if e.sndWnd > 0 {
		e.tPersist.stop()
	}
}

// sackRanges unwraps the ACK's SACK blocks into the endpoint's scratch,
// counting and ignoring blocks outside what was sent.
func (e *endpoint) sackRanges(opts *header.TCPOptions, ackOff uint64) []rtxq.Range {
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
	return sacks
}

// advanceUna moves SND.UNA to ackOff and frees the acknowledged bytes.
func (e *endpoint) advanceUna(ackOff uint64) {
	e.sndUna = ackOff
	dataUna := e.sndUna - 1
	if end := e.sbuf.End(); dataUna > end {
		dataUna = end
	}
	e.sbuf.Trim(dataUna)
	e.rec.OnProgress()
	e.est.ResetBackoff()
	e.persistBackoff = 0
	e.growSendBuffer()
	if e.writeSpace() {
		e.notify |= waiterWritable
	}
}

// writeSpace reports whether the send queue has room enough to wake a
// writer, and to poll writable: free space at least half of what it holds,
// so a third of the buffer once it is full (Linux's rule for POLLOUT). A
// writer woken at every ACK appended the segment or two that ACK freed,
// each into a chunk of its own, since the last chunk is closed once a
// packet holds it (sendbuf.room): with a slow scheduler (the race
// detector) a third of the segments then spanned two chunks, a view more
// per packet through every layer, against 2% woken at a third. A Write
// still takes whatever room there is; only the wake waits.
func (e *endpoint) writeSpace() bool {
	// control:tcp-writer-woken-every-ack
	return e.sbuf.Free() > 0 && e.sbuf.Free() >= e.sbuf.Len()/2
}

// rttSample is the ACK's RTT sample: per-segment send times (Karn-clean,
// RFC 6298 §3), else the timestamp echo (RFC 7323 §4.1); 0 for none.
func (e *endpoint) rttSample(res rtxq.AckResult, opts *header.TCPOptions, progress bool, now time.Duration) time.Duration {
	sample := res.RTT
	if sample <= 0 && progress && e.tsOK && opts.TS && opts.TSEcr != 0 {
		ms := int32(e.tsAt(now) - opts.TSEcr)
		if ms >= 0 && ms < 600000 {
			sample = time.Duration(ms)*time.Millisecond + time.Millisecond/2
		}
	}
	return sample
}

// rearmOnAck stops the retransmission timer when nothing is outstanding;
// on an ACK of new data RFC 6298 §5.3 restarts the RTO, and RFC 8985 §7.2
// arms the probe timeout instead when a probe may be sent.
func (e *endpoint) rearmOnAck(progress bool, now time.Duration) {
	if e.q.Outstanding() == 0 {
		e.tRtx.stop()
		e.tlpArmed = false
	} else if progress {
		e.tlpArmed = false
		if !e.armPTO(now) {
			e.tRtx.armAt(now, e.est.RTO())
		}
	}
}

// recoveryOnAck feeds one ACK to loss recovery and cc, in the order that
// keeps them honest: undo evidence, NewReno's duplicate ACKs, RACK's losses
// (so a loss is known before cc may grow cwnd), cc, PRR, then the end of the
// recovery.
func (e *endpoint) recoveryOnAck(s *segment, opts *header.TCPOptions, res rtxq.AckResult, sacked, progress, wasOutstanding bool, sample, now time.Duration) {
	if e.rec.OnEvidence(recovery.Evidence{
		Progress: progress, TSEcr: opts.TSEcr, HasTSEcr: e.tsOK && opts.TS && opts.TSEcr != 0,
		DSACKOfRetransmission: res.DSACK && res.SpuriousHint,
	}) {
		e.ctl.OnSpurious(now)
		e.ctl.OnRecoveryEnd(now)
		e.p.st.spurious.Inc()
	}
	// An ACK without SACK blocks is read as NewReno reads it (newreno.go); a
	// duplicate ACK means one segment has left the network (RFC 6937's
	// DeliveredData without SACK). ACKs that carry blocks go to RACK instead.
	dupDelivered := uint64(0)
	renoEnter := false
	// control:tcp-sackless-dupacks-ignored-with-sack
	if !sacked {
		switch {
		case !progress && s.data.n == 0 && wasOutstanding && !s.has(header.TCPFlagFin|header.TCPFlagSyn):
			dupDelivered = uint64(e.smss)
			// control:tcp-no-dupack-recovery-without-sack
			renoEnter = e.rec.OnDupAck()
		case progress:
			e.rec.OnPartialAck(e.sndUna)
		}
	}
	// Loss is detected before cc sees the ACK, so an ACK that reveals a loss
	// reduces the window without first growing it (RFC 9438 §4.6: cwnd does
	// not grow in recovery, and cwnd_prior is the window before the loss).
	srtt := e.est.SRTT()
	// control:tcp-growth-before-loss-detection-1
	if e.sackOK {
		lost, reo := e.q.DetectLoss(now, srtt)
		if reo > 0 {
			e.tReo.armAt(now, reo)
		} else {
			e.tReo.stop()
		}
		if lost > 0 && e.rec.OnLoss(e.sndUna, e.sndNxt) {
			e.startedRecovery(now)
		}
	}
	if renoEnter && e.rec.StartNewReno(e.sndUna, e.sndNxt) {
		e.startedRecovery(now)
	}
	// control:tcp-growth-before-loss-detection-2
	acked := max(res.CumAcked+res.NewlySacked, e.wholeSegmentCredit(res))
	e.ctl.OnAck(cc.Ack{
		// control:tcp-stretch-ack-reported-as-one-segment
		Now: now, Acked: int(acked), SndUna: e.sndUna, SndNxt: e.sndNxt,
		RTT: sample, SRTT: srtt, InFlight: int(e.q.InFlight()),
	})
	delivered := res.Delivered + dupDelivered
	e.creditClock(delivered)
	e.rec.OnDelivered(delivered, e.q.InFlight(), uint64(e.ctl.Ssthresh()))
	if e.rec.MaybeEnd(e.sndUna) {
		e.ctl.OnRecoveryEnd(now)
	}
}

// wholeSegmentCredit is one SMSS for each segment the ACK delivers whole:
// what congestion control grows by when the ACK acknowledges fewer bytes,
// because a segment was short. Departure from RFC 5681 §3.1's byte counting
// (cwnd += min(N, SMSS), N the bytes acknowledged), which takes a short
// segment at its length: osbench's 30-byte hello ahead of the payload left
// the initial window 9 full segments and 30 bytes, cwnd grew by that, and
// every later round of slow start was one full segment short, the deficit
// doubling (32 segments in the 7th round at 100 Mbit/s, 100 ms), where a
// stack counting cwnd in segments (the kernel's) lost nothing. It is safe:
// the credit is per segment this sender sent, so a receiver that splits its
// ACKs (the ACK division byte counting guards against) gains nothing; cc
// still bounds each ACK's growth to L·SMSS in slow start; and a sender of
// short segments only is held by its flight, which the cwnd-limited rule
// (cc/limited.go) requires before cwnd grows at all.
func (e *endpoint) wholeSegmentCredit(res rtxq.AckResult) uint64 {
	// control:tcp-short-segment-counted-by-bytes
	return uint64(res.DeliveredSegs) * uint64(e.smss)
}

// startedRecovery follows the start of a fast or NewReno recovery
// (recovery.OnLoss, StartNewReno): one window reduction, and rtxq's
// reordering window for recovery.
func (e *endpoint) startedRecovery(now time.Duration) {
	e.p.st.recoveries.Inc()
	e.ctl.OnCongestion(now, int(e.q.InFlight()))
	e.q.SetInRecovery(e.rec.InRecovery())
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

// creditClock lets the bytes an ACK delivered leave at once when arm B's
// pacer spreads only the rest (cc.ClockPacing). delivered counts each byte
// once, when it first reached the peer: the cumulative ACK that fills a
// recovery's hole delivers the hole, not the SACKed bytes behind it. Counted
// as SND.UNA's advance, that ACK released the whole window at once (200
// Mbit/s, 150 ms, 0.1 BDP: 2.9 MB in one burst, 2.5 MB of it dropped).
func (e *endpoint) creditClock(acked uint64) {
	if !e.clockPaced || acked == 0 {
		return
	}
	e.pace.Credit(e.paceBytes(int(acked)), e.paceBytes(e.ctl.Cwnd()))
}
