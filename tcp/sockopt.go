// The rest of tcpip.Endpoint: addresses, socket options and endpoint
// information.

package tcp

import (
	"time"

	"gvisor.dev/gvisor/pkg/tcpip"
	"gvisor.dev/gvisor/pkg/tcpip/header"
	"gvisor.dev/gvisor/pkg/tcpip/stack"
)

// Disconnect implements tcpip.Endpoint (not supported by TCP).
func (e *endpoint) Disconnect() tcpip.Error { return &tcpip.ErrNotSupported{} }

// GetLocalAddress implements tcpip.Endpoint.
func (e *endpoint) GetLocalAddress() (tcpip.FullAddress, tcpip.Error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	return tcpip.FullAddress{Addr: e.id.LocalAddress, Port: e.id.LocalPort, NIC: e.nicID}, nil
}

// GetRemoteAddress implements tcpip.Endpoint.
func (e *endpoint) GetRemoteAddress() (tcpip.FullAddress, tcpip.Error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if !e.state.synchronized() && e.state != StateSynRcvd {
		return tcpip.FullAddress{}, &tcpip.ErrNotConnected{}
	}
	return tcpip.FullAddress{Addr: e.id.RemoteAddress, Port: e.id.RemotePort, NIC: e.nicID}, nil
}

// SetSockOpt implements tcpip.Endpoint.
func (e *endpoint) SetSockOpt(opt tcpip.SettableSocketOption) tcpip.Error {
	e.mu.Lock()
	defer e.mu.Unlock()
	switch v := opt.(type) {
	case *tcpip.KeepaliveIdleOption:
		if *v <= 0 {
			return &tcpip.ErrInvalidOptionValue{}
		}
		e.kaIdle = time.Duration(*v)
		if e.ops.GetKeepAlive() && e.state.synchronized() {
			e.tKeep.arm(e.kaIdle)
		}
	case *tcpip.KeepaliveIntervalOption:
		if *v <= 0 {
			return &tcpip.ErrInvalidOptionValue{}
		}
		e.kaIntvl = time.Duration(*v)
	case *tcpip.TCPUserTimeoutOption:
		e.userTimeout = time.Duration(*v)
	default:
		return &tcpip.ErrUnknownProtocolOption{}
	}
	return nil
}

// SetSockOptInt implements tcpip.Endpoint.
func (e *endpoint) SetSockOptInt(opt tcpip.SockOptInt, v int) tcpip.Error {
	e.mu.Lock()
	defer e.mu.Unlock()
	switch opt {
	case tcpip.KeepaliveCountOption:
		if v <= 0 {
			return &tcpip.ErrInvalidOptionValue{}
		}
		e.kaCount = v
	case tcpip.MaxSegOption:
	default:
		return &tcpip.ErrUnknownProtocolOption{}
	}
	return nil
}

// GetSockOpt implements tcpip.Endpoint.
func (e *endpoint) GetSockOpt(opt tcpip.GettableSocketOption) tcpip.Error {
	e.mu.Lock()
	defer e.mu.Unlock()
	switch v := opt.(type) {
	case *tcpip.KeepaliveIdleOption:
		*v = tcpip.KeepaliveIdleOption(e.kaIdle)
	case *tcpip.KeepaliveIntervalOption:
		*v = tcpip.KeepaliveIntervalOption(e.kaIntvl)
	case *tcpip.TCPUserTimeoutOption:
		*v = tcpip.TCPUserTimeoutOption(e.userTimeout)
	case *tcpip.TCPInfoOption:
		*v = tcpip.TCPInfoOption{}
		if e.est != nil {
			v.RTT = e.est.SRTT()
			v.RTTVar = e.est.RTTVar()
			v.RTO = e.est.RTO()
		}
		if e.ctl != nil {
			v.SndCwnd = uint32(e.ctl.Cwnd() / max(e.smss, 1))
			v.SndSsthresh = uint32(min(e.ctl.Ssthresh()/max(e.smss, 1), 1<<31))
		}
		v.State = tcpip.EndpointState(e.state)
	default:
		return &tcpip.ErrUnknownProtocolOption{}
	}
	return nil
}

// GetSockOptInt implements tcpip.Endpoint.
func (e *endpoint) GetSockOptInt(opt tcpip.SockOptInt) (int, tcpip.Error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	switch opt {
	case tcpip.KeepaliveCountOption:
		return e.kaCount, nil
	case tcpip.ReceiveQueueSizeOption:
		return e.rcvq.Len(), nil
	case tcpip.SendQueueSizeOption:
		if e.sbuf == nil {
			return 0, nil
		}
		return e.sbuf.Len(), nil
	case tcpip.MaxSegOption:
		if e.smss == 0 {
			return header.TCPDefaultMSS, nil
		}
		return e.smss, nil
	}
	return 0, &tcpip.ErrUnknownProtocolOption{}
}

// State implements tcpip.Endpoint.
func (e *endpoint) State() uint32 {
	e.mu.Lock()
	defer e.mu.Unlock()
	return uint32(e.state)
}

// ModerateRecvBuf implements tcpip.Endpoint; autotuning runs in Read.
func (e *endpoint) ModerateRecvBuf(int) {}

// Info implements tcpip.Endpoint.
func (e *endpoint) Info() tcpip.EndpointInfo {
	e.mu.Lock()
	defer e.mu.Unlock()
	return &stack.TransportEndpointInfo{NetProto: e.netProto, TransProto: ProtocolNumber, ID: e.id, BindNICID: e.bindNIC}
}

// Stats implements tcpip.Endpoint.
func (e *endpoint) Stats() tcpip.EndpointStats { return &tcpip.TransportEndpointStats{} }

// SetOwner implements tcpip.Endpoint.
func (e *endpoint) SetOwner(tcpip.PacketOwner) {}

// LastError implements tcpip.Endpoint and SocketOptionsHandler: it returns
// and clears the pending error (a failed connect reports here).
func (e *endpoint) LastError() tcpip.Error {
	e.mu.Lock()
	defer e.mu.Unlock()
	err := e.lastErr
	e.lastErr = nil
	return err
}

// UpdateLastError implements SocketOptionsHandler.
func (e *endpoint) UpdateLastError(err tcpip.Error) {
	e.mu.Lock()
	e.lastErr = err
	e.mu.Unlock()
}

// SocketOptions implements tcpip.Endpoint.
func (e *endpoint) SocketOptions() *tcpip.SocketOptions { return &e.ops }

// Wait implements stack.TransportEndpoint; there are no goroutines to wait for.
func (e *endpoint) Wait() {}

// OnDelayOptionSet implements SocketOptionsHandler (TCP_NODELAY off = Nagle on).
func (e *endpoint) OnDelayOptionSet(v bool) {
	e.mu.Lock()
	e.nodelay = !v
	if e.nodelay && e.sbuf != nil {
		e.output()
	}
	e.unlock()
}

// OnCorkOptionSet implements SocketOptionsHandler.
func (e *endpoint) OnCorkOptionSet(v bool) {
	e.mu.Lock()
	e.cork = v
	if !v && e.sbuf != nil {
		e.output()
	}
	e.unlock()
}

// OnKeepAliveSet implements SocketOptionsHandler.
func (e *endpoint) OnKeepAliveSet(v bool) {
	e.mu.Lock()
	if v && e.state.synchronized() {
		e.tKeep.arm(e.kaIdle)
	} else if !v {
		e.tKeep.stop()
	}
	e.mu.Unlock()
}

// GetAcceptConn implements SocketOptionsHandler.
func (e *endpoint) GetAcceptConn() bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.state == StateListen
}

// HasNIC implements SocketOptionsHandler.
func (e *endpoint) HasNIC(id int32) bool { return e.p.s.HasNIC(tcpip.NICID(id)) }

// WakeupWriters implements SocketOptionsHandler.
func (e *endpoint) WakeupWriters() { e.wq.Notify(waiterWritable) }
