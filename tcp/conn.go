// The application's side of a connection: writing, shutting down, closing and
// resetting.

package tcp

import (
	"gvisor.dev/gvisor/pkg/tcpip"
	"gvisor.dev/gvisor/pkg/tcpip/header"
	"gvisor.dev/gvisor/pkg/tcpip/ports"
	"gvisor.dev/gvisor/pkg/waiter"
)

const (
	waiterReadable  = waiter.ReadableEvents
	waiterWritable  = waiter.WritableEvents
	waiterHUpIfDone = waiter.EventRdHUp
	allEvents       = waiter.EventHUp | waiter.EventErr | waiter.ReadableEvents | waiter.WritableEvents
)

// writeChunk bounds one copy from the caller into the send queue, so the
// queue's backing array grows in the same steps whatever the write's size.
const writeChunk = 64 << 10

// Write implements tcpip.Endpoint. A full send queue returns ErrWouldBlock
// (gonet then waits for WritableEvents); it is never an error.
func (e *endpoint) Write(p tcpip.Payloader, opts tcpip.WriteOptions) (int64, tcpip.Error) {
	e.mu.Lock()
	switch e.state {
	case StateEstablished, StateCloseWait:
	case StateSynSent, StateSynRcvd:
		e.mu.Unlock()
		return 0, &tcpip.ErrWouldBlock{}
	case StateClosed:
		err := e.hardErr
		e.mu.Unlock()
		if err == nil {
			err = &tcpip.ErrClosedForSend{}
		}
		return 0, err
	case StateInitial, StateBound, StateListen:
		e.mu.Unlock()
		return 0, &tcpip.ErrNotConnected{}
	default:
		e.mu.Unlock()
		return 0, &tcpip.ErrClosedForSend{}
	}
	if e.wrShut {
		e.mu.Unlock()
		return 0, &tcpip.ErrClosedForSend{}
	}
	if e.sbuf.Free() == 0 {
		e.mu.Unlock()
		// control:hosttests-full-send-buffer-is-an-error
		return 0, &tcpip.ErrWouldBlock{}
	}
	var total int64
	for e.sbuf.Free() > 0 && p.Len() > 0 {
		n, err := e.sbuf.Fill(p, min(writeChunk, p.Len()))
		total += int64(n)
		if err != nil {
			break
		}
	}
	if total > 0 && e.q.Outstanding() == 0 && e.est.HasSample() && e.now()-e.lastSend > e.est.RTO() && e.lastSend > 0 {
		// Restart after idle (RFC 5681 §4.1).
		e.ctl.OnIdleRestart(e.now())
	}
	e.inWrite = true
	e.output()
	e.unlock()
	return total, nil
}

// Shutdown implements tcpip.Endpoint.
func (e *endpoint) Shutdown(flags tcpip.ShutdownFlags) tcpip.Error {
	e.mu.Lock()
	if e.state == StateListen {
		if flags&tcpip.ShutdownRead != 0 {
			e.closeListenerLocked()
		}
		e.unlock()
		return nil
	}
	if !e.state.synchronized() && e.state != StateSynRcvd {
		e.mu.Unlock()
		return &tcpip.ErrNotConnected{}
	}
	if flags&tcpip.ShutdownRead != 0 {
		e.rdShut = true
		e.notify |= waiterReadable
	}
	if flags&tcpip.ShutdownWrite != 0 {
		e.shutdownWriteLocked()
	}
	e.unlock()
	return nil
}

// shutdownWriteLocked queues our FIN after the data (RFC 9293 §3.10.4).
func (e *endpoint) shutdownWriteLocked() {
	if e.wrShut {
		return
	}
	e.wrShut = true
	switch e.state {
	case StateEstablished, StateSynRcvd:
		e.state = StateFinWait1
	case StateCloseWait:
		e.state = StateLastAck
	default:
		return
	}
	e.finQueued = true
	e.notify |= waiterWritable
	e.output()
}

// Close implements tcpip.Endpoint: a graceful close (FIN) unless unread data
// or a zero linger makes it an abort (RST, RFC 9293 §3.10.4 and RFC 2525
// §2.17).
func (e *endpoint) Close() {
	e.mu.Lock()
	if e.userClosed {
		e.mu.Unlock()
		return
	}
	e.userClosed = true
	switch e.state {
	case StateInitial, StateBound, StateSynSent:
		e.closeLocked(nil)
	case StateListen:
		e.closeListenerLocked()
	case StateSynRcvd, StateEstablished, StateCloseWait:
		e.rdShut = true
		// control:tcp-close-leaves-reader-waiting
		e.notify |= waiterReadable // a Read waiting for data now ends, as after Shutdown(ShutdownRead)
		linger := e.ops.GetLinger()
		if e.rcvq.Len() > 0 || linger.Enabled && linger.Timeout == 0 {
			e.resetLocked(&tcpip.ErrConnectionAborted{})
			break
		}
		e.shutdownWriteLocked()
		if linger.Enabled {
			e.tLinger.arm(linger.Timeout)
		}
	default:
		e.rdShut = true
		e.notify |= waiterReadable
	}
	e.unlock()
}

// Abort implements tcpip.Endpoint and stack.TransportEndpoint: reset at once.
func (e *endpoint) Abort() {
	e.mu.Lock()
	e.userClosed = true
	if e.state == StateListen {
		e.closeListenerLocked()
	} else {
		e.resetLocked(&tcpip.ErrConnectionAborted{})
	}
	e.unlock()
}

// resetLocked sends a RST if the connection is synchronized and closes it.
func (e *endpoint) resetLocked(err tcpip.Error) {
	if e.state.synchronized() && e.state != StateTimeWait || e.state == StateSynRcvd {
		e.sendFlags(header.TCPFlagRst|header.TCPFlagAck, e.sndNxt)
		e.p.st.rstSent.Inc()
	}
	e.closeLocked(err)
}

// closeLocked moves to CLOSED: timers stop, the registration and port are
// released, and waiters are told.
func (e *endpoint) closeLocked(err tcpip.Error) {
	if e.state == StateClosed {
		return
	}
	e.state = StateClosed
	if e.opened {
		e.p.st.connsClosed.Inc()
	}
	if err != nil {
		e.hardErr = err
		e.lastErr = err
	}
	e.stopTimers()
	if e.cancelCredit != nil {
		e.cancelCredit()
		e.cancelCredit = nil
	}
	if e.registered {
		// control:soak-endpoint-left-registered
		e.p.s.UnregisterTransportEndpoint(e.netProtos, ProtocolNumber, e.id, e, ports.Flags{}, e.bindNIC)
		e.registered = false
	}
	if e.portReserved {
		e.p.s.ReleasePort(e.resv)
		e.portReserved = false
	}
	if e.route != nil {
		e.releaseRoute = e.route
	}
	e.notify |= allEvents
}
