package i219

import (
	"fmt"
	"time"

	"gvisor.dev/gvisor/pkg/buffer"
	"gvisor.dev/gvisor/pkg/tcpip"
	"gvisor.dev/gvisor/pkg/tcpip/header"
	"gvisor.dev/gvisor/pkg/tcpip/stack"

	"github.com/netramp/netramp/nic"
)

// startLoop runs Poll on its own goroutine until a stop is requested; it
// does nothing if a loop is already running.
func (e *Endpoint) startLoop() {
	e.loopMu.Lock()
	defer e.loopMu.Unlock()
	if e.closed.Load() || e.done != nil && !e.stopping {
		return
	}
	if old := e.done; old != nil {
		// A loop asked to stop may still be finishing its pass: the new
		// one starts after it, so two passes never overlap.
		e.loopMu.Unlock()
		<-old
		e.loopMu.Lock()
		if e.done != old {
			return // another Attach restarted it meanwhile
		}
	}
	stop, done := make(chan struct{}), make(chan struct{})
	e.stop, e.done, e.stopping, e.detached = stop, done, false, false
	go e.loop(stop, done)
}

func (e *Endpoint) loop(stop, done chan struct{}) {
	defer close(done)
	ack := false
	for {
		select {
		case <-stop:
			return
		default:
		}
		n := e.Poll()
		if ack {
			// Re-arm only after Poll has read ICR: a level-triggered
			// INTx unmasked earlier would fire again at once.
			_ = e.plat.IRQ.Ack()
			ack = false
		}
		if n > 0 {
			continue // more may be waiting: poll again at once
		}
		if e.plat.IRQ != nil {
			fired, err := e.plat.IRQ.Wait(e.cfg.PollInterval)
			ack = err == nil && fired
			continue
		}
		if e.cfg.BusyPoll {
			e.spin(e.cfg.PollInterval)
		} else {
			e.clk.Sleep(e.cfg.PollInterval)
		}
	}
}

// requestStop asks the running loop, if any, to end.
func (e *Endpoint) requestStop(detached bool) {
	e.loopMu.Lock()
	defer e.loopMu.Unlock()
	if e.done == nil || e.stopping {
		return
	}
	e.stopping, e.detached = true, detached
	close(e.stop)
}

// Stop ends the poll loop and waits for it. Safe to call more than once and
// from several goroutines; a later Attach starts the loop again.
func (e *Endpoint) Stop() {
	e.requestStop(false)
	e.loopMu.Lock()
	done := e.done
	e.loopMu.Unlock()
	if done != nil {
		<-done
	}
}

// Poll runs one pass: read and clear ICR, reap up to PollBatch received
// frames, reclaim finished TX descriptors, and every 100 ms fold the
// statistics registers into the counters and check link and TX hang. It
// returns the number of frames received and reclaimed. With ManualPoll the
// caller must not run two passes at once, nor one concurrently with Close.
func (e *Endpoint) Poll() int {
	if e.closed.Load() {
		return 0
	}
	icr := e.d.rd(regICR)
	n := e.pollRX()

	e.txMu.Lock()
	f := e.reclaimLocked()
	e.txMu.Unlock()
	if e.notifySoon.Swap(false) || f > 0 {
		e.notifyWaiters()
	}
	now := e.clk.Now()
	if icr&icrLSC != 0 || now.Sub(e.lastStats) >= statsInterval {
		e.lastStats = now
		e.foldStats()
		e.checkLink()
		e.watchdog(now)
	}
	return n + f
}

// foldStats adds the read-to-clear statistics registers to the counters.
func (e *Endpoint) foldStats() {
	e.st.rxMissed.Add(uint64(e.d.rd(regMPC)))
	e.st.rxNoBuffer.Add(uint64(e.d.rd(regRNBC)))
	e.st.crcErrors.Add(uint64(e.d.rd(regCRCERRS)))
}

// checkLink reads STATUS.LU, counts a change, and returns the state.
func (e *Endpoint) checkLink() bool {
	up := e.d.linkUp()
	if up != e.link.Swap(up) {
		e.st.linkChanges.Inc()
	}
	return up
}

// watchdog resets the unit when TDH has not moved for TxHangTimeout while
// frames are pending and the link is up: the I219's documented TX hangs
// leave the ring stuck until a reset, and a stalled ring would otherwise
// drop every later frame.
func (e *Endpoint) watchdog(now time.Time) {
	if e.cfg.TxHangTimeout < 0 {
		return
	}
	e.txMu.Lock()
	pending := e.tx.used > 0
	e.txMu.Unlock()
	if !pending || !e.link.Load() {
		e.hangActive = false
		return
	}
	tdh := e.d.rd(regTDH)
	if !e.hangActive || tdh != e.hangTDH {
		e.hangActive, e.hangTDH, e.hangSince = true, tdh, now
		return
	}
	if now.Sub(e.hangSince) < e.cfg.TxHangTimeout {
		return
	}
	e.st.txHangs.Inc()
	e.hangActive = false
	e.resetUnit()
}

// resetUnit resets and re-initialises the card; frames still in the TX ring
// are dropped and counted.
func (e *Endpoint) resetUnit() {
	e.resetting.Store(true)
	defer e.resetting.Store(false)
	e.txFree.Store(0)
	e.rxMu.Lock()
	e.txMu.Lock()
	e.st.txDrops.Add(uint64(e.tx.used))
	if err := e.bringUp(); err != nil {
		err = fmt.Errorf("i219: reset after a TX hang failed: %w", err)
		e.failed.Store(&err)
	}
	e.txMu.Unlock()
	e.rxMu.Unlock()
	e.notifyWaiters()
}

// pollRX reaps up to PollBatch completed RX descriptors, copies each good
// frame out, re-arms the same buffer and hands the frames to the stack
// after the ring lock is released, as one delivery burst.
func (e *Endpoint) pollRX() int {
	if e.rxPaused.Load() {
		return 0
	}
	e.rxMu.Lock()
	if e.closed.Load() {
		e.rxMu.Unlock()
		return 0
	}
	out, protos := e.rxOut[:0], e.rxProto[:0]
	r := &e.rx
	n := 0
	for n < e.cfg.PollBatch {
		d := r.desc(r.head)
		se := d.staterr()
		if se&rxStaDD == 0 {
			break
		}
		n++
		length := d.length()
		eop := se&rxStaEOP != 0
		switch {
		case r.skip || !eop:
			// A frame longer than one buffer: drop every piece, count once.
			if !r.skip {
				e.st.rxTooLong.Inc()
			}
			r.skip = !eop
		case se&rxErrFrame != 0:
			e.st.rxErrors.Inc()
		case length < header.EthernetMinimumSize || length > bufSize:
			e.st.rxErrors.Inc()
		default:
			frame := r.bufs.mem[r.head][:length]
			if pkt, proto, ok := e.frameToPacket(frame, se); ok {
				out = append(out, pkt)
				protos = append(protos, proto)
			}
		}
		d.arm(r.bufs.bus[r.head])
		r.tail = r.head
		r.head = (r.head + 1) % r.n
	}
	if n > 0 {
		e.d.wr(regRDT, uint32(r.tail))
	}
	e.rxOut, e.rxProto = out, protos // reused by the next pass
	e.rxMu.Unlock()

	e.mu.RLock()
	disp := e.dispatcher
	e.mu.RUnlock()
	// The frames of one pass are one delivery burst (nic.Bursts), as a
	// kernel's NAPI poll of the ring: PollBatch bounds it.
	burst := disp != nil && len(out) > 1
	if burst {
		nic.BeginBurst(disp)
	}
	for i, pkt := range out {
		if disp == nil {
			e.st.rxUnattached.Inc()
		} else {
			disp.DeliverNetworkPacket(protos[i], pkt)
		}
		pkt.DecRef()
		out[i] = nil
	}
	if burst {
		nic.EndBurst(disp)
	}
	return n
}

// frameToPacket copies a received frame into a packet buffer with its
// Ethernet header consumed and PktType set from the destination address.
func (e *Endpoint) frameToPacket(frame []byte, se uint32) (*stack.PacketBuffer, tcpip.NetworkProtocolNumber, bool) {
	if e.cfg.RXChecksumOffload {
		if hwChecksumOK(frame, se) {
			e.st.rxCsumOffload.Inc()
		} else if !softwareChecksumOK(frame) {
			e.st.rxErrors.Inc()
			return nil, 0, false
		}
	}
	pkt := stack.NewPacketBuffer(stack.PacketBufferOptions{Payload: buffer.MakeWithData(frame)})
	hdr, ok := pkt.LinkHeader().Consume(header.EthernetMinimumSize)
	if !ok {
		pkt.DecRef()
		e.st.rxErrors.Inc()
		return nil, 0, false
	}
	eth := header.Ethernet(hdr)
	pkt.PktType = nic.PacketType(eth.DestinationAddress(), e.LinkAddress())
	e.st.rxFrames.Inc()
	e.st.rxBytes.Add(uint64(len(frame)))
	return pkt, eth.Type(), true
}
