// Active open and the handshake's end: Connect, Bind, option negotiation,
// SYN-SENT, and entering ESTABLISHED or TIME-WAIT.

package tcp

import (
	"time"

	"gvisor.dev/gvisor/pkg/tcpip"
	"gvisor.dev/gvisor/pkg/tcpip/header"
	"gvisor.dev/gvisor/pkg/tcpip/ports"
	"gvisor.dev/gvisor/pkg/tcpip/stack"

	"github.com/netramp/netramp/cc"
	"github.com/netramp/netramp/tcp/internal/autotune"
	"github.com/netramp/netramp/tcp/internal/isn"
	"github.com/netramp/netramp/tcp/internal/pacer"
	"github.com/netramp/netramp/tcp/internal/reasm"
	"github.com/netramp/netramp/tcp/internal/recovery"
	"github.com/netramp/netramp/tcp/internal/rtt"
	"github.com/netramp/netramp/tcp/internal/rtxq"
	"github.com/netramp/netramp/tcp/internal/sendbuf"
)

// tuple is the connection's identity for sequence numbers and cookies.
func tupleOf(id stack.TransportEndpointID) isn.Tuple {
	var t isn.Tuple
	copy(t.SrcAddr[:], id.LocalAddress.AsSlice())
	copy(t.DstAddr[:], id.RemoteAddress.AsSlice())
	t.SrcPort, t.DstPort = id.LocalPort, id.RemotePort
	return t
}

// rcvScale is the window scale that lets the largest receive buffer be
// advertised (RFC 7323 §2.3, at most 14).
func (p *protocol) rcvScale() uint8 {
	var ws uint8
	for ws < 14 && 0xffff<<ws < p.opts.ReceiveBufferMax {
		ws++
	}
	return ws
}

// minSndMSS is the smallest MSS we send with, whatever the peer asks: 48
// bytes, the most TCP options (40) plus the smallest IPv4 fragment payload
// (8), as Linux's TCP_MIN_SND_MSS. A departure from RFC 9293 §3.7.1 (never
// send more than the peer's MSS), safe because a segment of 48 bytes and
// full options is a 128-byte datagram, and every IPv4 host must accept 576
// (RFC 1122 §3.3.2), every IPv6 host 1280 (RFC 8200 §5). Below it a peer
// could make each byte cost a whole segment's header, ACK and queue entry.
const minSndMSS = header.TCPMinimumSendMSS

// segCapMSS bounds the segments outstanding on one connection: no more than
// its send buffer holds in segments of 536 bytes, the IPv4 default MSS (RFC
// 9293 §3.7.1). A peer that forces smaller segments gets no more of them in
// flight than a default-MSS peer would (4 MiB: 7,889 segments, not 116,508
// at 36 bytes a segment), so its queue's memory and per-ACK work stay those
// of an ordinary connection; it gets a smaller window instead.
const segCapMSS = 536

// negotiate applies the peer's SYN options: each of window scale,
// timestamps and SACK is used only if both ends offered it.
func (e *endpoint) negotiate(so *header.TCPSynOptions, weOffered bool) {
	o := &e.p.opts
	e.wsOK = so.WS >= 0 && !o.NoWindowScale
	if e.wsOK {
		e.sndWS = uint8(so.WS)
		e.rcvWS = e.p.rcvScale()
	} else {
		e.sndWS, e.rcvWS = 0, 0
	}
	e.tsOK = so.TS && !o.NoTimestamps
	e.sackOK = so.SACKPermitted && !o.NoSACK
	mss := max(min(int(so.MSS), e.ourMSS()), minSndMSS)
	e.mss = mss
	e.smss = mss
	if e.tsOK {
		e.smss -= header.TCPOptionTSLength + 2
	}
}

// initConn allocates the connection's queues and controllers once the send
// MSS is known.
func (e *endpoint) initConn() {
	o := &e.p.opts
	if e.sbuf == nil {
		e.sbuf = sendbuf.New(min(initialSendBuffer, o.SendBufferMax))
	}
	// control:hosttests-no-segment-cap
	e.maxSegs = o.SendBufferMax/max(e.smss, segCapMSS) + 64
	e.q = rtxq.New(e.maxSegs)
	e.rec = recovery.New(e.smss)
	// Cannot fail: the options were validated at protocol creation and the
	// MSS option's parser keeps SMSS within (0, 65535].
	e.ctl, _ = cc.New(cc.Config{SMSS: e.smss, InitialWindow: o.InitialWindow, Arm: o.Arm, Pacing: o.Pacing, Counters: e.p.st.cc}) // control:cc-config
	// control:hosttests-default-arm-paced-from-the-first-segment
	e.clockPaced = o.Arm != cc.ArmA && !o.Pacing
	if o.Pacing || e.clockPaced {
		e.pace = pacer.New()
	}
	if !e.wsOK && e.rcvBuf > 0xffff {
		e.rcvBuf = 0xffff
	}
	e.ooo = reasm.New(e.rcvBuf + e.rcvSpare(e.rcvBuf)) // control:ooo-store-size
	max := o.ReceiveBufferMax
	if !e.wsOK {
		max = 0xffff
	}
	e.tuner = autotune.New(e.rcvBuf, max)
	// control:tcp-receive-buffer-at-handshake-1
	if o.Credit != nil && e.route != nil {
		e.credit = o.Credit(e.route.NICID())
	}
}

// preConn prepares what the SYN needs: estimator, receive buffer, scale.
func (e *endpoint) preConn() {
	e.est = rtt.New(rtt.Config{})
	e.rcvBuf = min(initialReceiveBuffer, e.p.opts.ReceiveBufferMax)
	e.rcvWS = 0
	if !e.p.opts.NoWindowScale {
		e.rcvWS = e.p.rcvScale()
	}
}

// Connect implements tcpip.Endpoint: an active open (RFC 9293 §3.5). It
// returns ErrConnectStarted; completion is signalled by WritableEvents and
// the result read with LastError.
func (e *endpoint) Connect(addr tcpip.FullAddress) tcpip.Error {
	e.mu.Lock()
	switch e.state {
	case StateInitial, StateBound:
	case StateSynSent, StateSynRcvd:
		e.mu.Unlock()
		return &tcpip.ErrAlreadyConnecting{}
	case StateListen:
		e.mu.Unlock()
		return &tcpip.ErrInvalidEndpointState{}
	default:
		e.mu.Unlock()
		return &tcpip.ErrAlreadyConnected{}
	}
	if addr.Port == 0 || addr.Addr.Len() == 0 {
		e.mu.Unlock()
		return &tcpip.ErrBadAddress{}
	}
	netProto := e.netProto
	if addr.Addr.Len() == 4 && netProto != header.IPv4ProtocolNumber || addr.Addr.Len() == 16 && netProto != header.IPv6ProtocolNumber {
		e.mu.Unlock()
		return &tcpip.ErrAddressFamilyNotSupported{}
	}
	nicID := addr.NIC
	if e.bindNIC != 0 {
		nicID = e.bindNIC
	}
	r, err := e.p.s.FindRoute(nicID, e.id.LocalAddress, addr.Addr, netProto, false)
	if err != nil {
		e.mu.Unlock()
		return err
	}
	e.route = r
	e.id.LocalAddress = r.LocalAddress()
	e.id.RemoteAddress = r.RemoteAddress()
	e.id.RemotePort = addr.Port
	e.netProtos = []tcpip.NetworkProtocolNumber{netProto}
	// control:tcp-active-open-sum-unset
	e.rxSum = knownPseudoSum(pseudoSum(e.id.LocalAddress, e.id.RemoteAddress))
	if e.state == StateBound {
		if err := e.p.s.RegisterTransportEndpoint(e.netProtos, ProtocolNumber, e.id, e, ports.Flags{}, e.bindNIC); err != nil {
			e.route = nil
			r.Release()
			e.mu.Unlock()
			return err
		}
	} else {
		_, err := e.p.s.PickEphemeralPort(e.p.s.SecureRNG(), func(port uint16) (bool, tcpip.Error) {
			res := ports.Reservation{Networks: e.netProtos, Transport: ProtocolNumber, Addr: e.id.LocalAddress,
				Port: port, BindToDevice: e.bindNIC, Dest: addr}
			if _, err := e.p.s.ReservePort(e.p.s.SecureRNG(), res, nil); err != nil {
				return false, nil
			}
			id := e.id
			id.LocalPort = port
			if err := e.p.s.RegisterTransportEndpoint(e.netProtos, ProtocolNumber, id, e, ports.Flags{}, e.bindNIC); err != nil {
				e.p.s.ReleasePort(res)
				if _, ok := err.(*tcpip.ErrPortInUse); ok {
					return false, nil
				}
				return false, err
			}
			e.id.LocalPort = port
			e.resv = res
			e.portReserved = true
			return true, nil
		})
		if err != nil {
			e.route = nil
			r.Release()
			e.mu.Unlock()
			return err
		}
	}
	e.registered = true
	e.opened = true
	e.p.st.connsOpened.Inc()
	e.preConn()
	now := e.now()
	e.iss = e.p.isn.ISN(tupleOf(e.id), now)
	e.tsOffset = e.p.tsOffsetFor(tupleOf(e.id))
	e.sndUna, e.sndNxt, e.sndMax = 0, 1, 1
	e.state = StateSynSent
	e.lastSend = now
	e.sendSYN()
	e.unlock()
	return &tcpip.ErrConnectStarted{}
}

// Bind implements tcpip.Endpoint, reserving the port with the stack.
func (e *endpoint) Bind(addr tcpip.FullAddress) tcpip.Error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.state != StateInitial {
		return &tcpip.ErrAlreadyBound{}
	}
	netProtos := []tcpip.NetworkProtocolNumber{e.netProto}
	if addr.Addr.Len() != 0 {
		if nic := e.p.s.CheckLocalAddress(addr.NIC, e.netProto, addr.Addr); nic == 0 {
			return &tcpip.ErrBadLocalAddress{}
		}
	}
	res := ports.Reservation{Networks: netProtos, Transport: ProtocolNumber, Addr: addr.Addr, Port: addr.Port, BindToDevice: addr.NIC}
	port, err := e.p.s.ReservePort(e.p.s.SecureRNG(), res, func(p uint16) (bool, tcpip.Error) {
		id := stack.TransportEndpointID{LocalPort: p, LocalAddress: addr.Addr}
		if err := e.p.s.CheckRegisterTransportEndpoint(netProtos, ProtocolNumber, id, ports.Flags{}, addr.NIC); err != nil {
			return false, nil
		}
		return true, nil
	})
	if err != nil {
		return err
	}
	res.Port = port
	e.resv = res
	e.portReserved = true
	e.netProtos = netProtos
	e.bindNIC = addr.NIC
	e.id.LocalAddress = addr.Addr
	e.id.LocalPort = port
	e.state = StateBound
	return nil
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
		e.owe(ackHandshake)
		e.finishInput(now)
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
