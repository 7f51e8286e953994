package tcp

import (
	"io"
	"sort"
	"time"

	"gvisor.dev/gvisor/pkg/tcpip"
	"gvisor.dev/gvisor/pkg/tcpip/header"
	"gvisor.dev/gvisor/pkg/tcpip/ports"
	"gvisor.dev/gvisor/pkg/tcpip/stack"
	"gvisor.dev/gvisor/pkg/waiter"

	"github.com/netramp/netramp/cc"
	"github.com/netramp/netramp/tcp/internal/autotune"
	"github.com/netramp/netramp/tcp/internal/isn"
	"github.com/netramp/netramp/tcp/internal/pacer"
	"github.com/netramp/netramp/tcp/internal/reasm"
	"github.com/netramp/netramp/tcp/internal/rtt"
	"github.com/netramp/netramp/tcp/internal/rtxq"
	"github.com/netramp/netramp/tcp/internal/sendbuf"
)

const (
	waiterReadable  = waiter.ReadableEvents
	waiterWritable  = waiter.WritableEvents
	waiterHUpIfDone = waiter.EventRdHUp
	allEvents       = waiter.EventHUp | waiter.EventErr | waiter.ReadableEvents | waiter.WritableEvents
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

// negotiate applies the peer's SYN options: each of window scale,
// timestamps and SACK is used only if both ends offered it.
func (e *endpoint) negotiate(so *header.TCPSynOptions, weOffered bool) {
	o := &e.p.opts
	e.wsOK = so.WS >= 0 && !o.NoWindowScale && !e.cookie
	if e.wsOK {
		e.sndWS = uint8(so.WS)
		e.rcvWS = e.p.rcvScale()
	} else {
		e.sndWS, e.rcvWS = 0, 0
	}
	e.tsOK = so.TS && !o.NoTimestamps && !e.cookie
	e.sackOK = so.SACKPermitted && !o.NoSACK && !e.cookie
	mss := int(so.MSS)
	if m := e.ourMSS(); mss > m {
		mss = m
	}
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
	e.maxSegs = o.SendBufferMax/max(e.smss, 1) + 64
	e.q = rtxq.New(e.maxSegs)
	c, err := cc.New(cc.Config{SMSS: e.smss, InitialWindow: o.InitialWindow, Arm: o.Arm, Pacing: o.Pacing, Counters: e.p.st.cc})
	if err != nil {
		c, _ = cc.New(cc.Config{SMSS: e.smss, Arm: o.Arm, Counters: e.p.st.cc})
	}
	e.ctl = c
	if o.Pacing {
		e.pace = pacer.New()
	}
	if !e.wsOK && e.rcvBuf > 0xffff {
		e.rcvBuf = 0xffff
	}
	e.ooo = reasm.New(e.rcvBuf + 1<<e.rcvWS)
	max := o.ReceiveBufferMax
	if !e.wsOK {
		max = 0xffff
	}
	e.tuner = autotune.New(e.rcvBuf, max)
	e.rcvRing = make([]byte, e.rcvBuf+1<<e.rcvWS)
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

// listener holds a listening endpoint's queues.
type listener struct {
	backlog  int
	accept   []*endpoint
	synQueue int                    // children in SYN-RECEIVED
	children map[*endpoint]struct{} // every child not yet accepted (half-open or queued)
}

// maxSynQueue bounds half-open children; beyond it SYNs are answered with
// cookies (RFC 4987 §3.6).
func (l *listener) maxSynQueue() int { return max(l.backlog, 8) }

// Listen implements tcpip.Endpoint.
func (e *endpoint) Listen(backlog int) tcpip.Error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.state == StateListen {
		if backlog > 0 {
			e.lst.backlog = backlog
		}
		return nil
	}
	if e.state != StateBound {
		return &tcpip.ErrInvalidEndpointState{}
	}
	if backlog <= 0 {
		backlog = 1
	}
	if backlog > 4096 {
		backlog = 4096
	}
	if err := e.p.s.RegisterTransportEndpoint(e.netProtos, ProtocolNumber, e.id, e, ports.Flags{}, e.bindNIC); err != nil {
		return err
	}
	e.registered = true
	e.lst = &listener{backlog: backlog, children: make(map[*endpoint]struct{})}
	e.state = StateListen
	return nil
}

// Accept implements tcpip.Endpoint.
func (e *endpoint) Accept(peerAddr *tcpip.FullAddress) (tcpip.Endpoint, *waiter.Queue, tcpip.Error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.state != StateListen {
		return nil, nil, &tcpip.ErrInvalidEndpointState{}
	}
	if len(e.lst.accept) == 0 {
		return nil, nil, &tcpip.ErrWouldBlock{}
	}
	c := e.lst.accept[0]
	copy(e.lst.accept, e.lst.accept[1:])
	e.lst.accept[len(e.lst.accept)-1] = nil
	e.lst.accept = e.lst.accept[:len(e.lst.accept)-1]
	delete(e.lst.children, c)
	if peerAddr != nil {
		*peerAddr = tcpip.FullAddress{Addr: c.id.RemoteAddress, Port: c.id.RemotePort, NIC: c.nicID}
	}
	return c, c.wq, nil
}

// handleListen is RFC 9293 §3.10.7.2 (LISTEN), with the SYN queue, the
// accept queue and SYN cookies.
func (e *endpoint) handleListen(id stack.TransportEndpointID, pkt *stack.PacketBuffer, s *segment) {
	l := e.lst
	now := e.now()
	switch {
	case s.has(header.TCPFlagRst):
		return
	case s.has(header.TCPFlagAck) && !s.has(header.TCPFlagSyn):
		// Only a SYN cookie's ACK is acceptable here (RFC 4987 §3.6).
		mss, ok := e.p.jar.Check(tupleOf(id), s.seq-1, s.ack-1, now)
		if !ok {
			if out, r := e.p.buildRST(id, pkt, s); out != nil {
				e.after = append(e.after, func() { e.p.sendBuilt(r, out, true) })
			}
			return
		}
		if len(l.accept) >= l.backlog {
			e.p.st.dropAcceptFull.Inc()
			return
		}
		c := e.newChild(id, pkt, s, &header.TCPSynOptions{MSS: mss, WS: -1}, true)
		if c == nil {
			return
		}
		e.p.st.cookiesOK.Inc()
		c.mu.Lock()
		c.established(now)
		c.sndWnd = uint64(s.wnd)
		c.maxSndWnd = c.sndWnd
		c.sndWL1, c.sndWL2 = 1, 1
		l.accept = append(l.accept, c)
		l.children[c] = struct{}{}
		e.notify |= waiterReadable
		c.handleSegment(s) // its data, if any
		c.handOff = false
		c.mu.Unlock()
		e.after = append(e.after, c.flushLater)
		return
	case !s.has(header.TCPFlagSyn):
		return
	}
	if len(l.accept) >= l.backlog {
		e.p.st.dropAcceptFull.Inc()
		return
	}
	so := header.ParseSynOptions(s.opts, false)
	if l.synQueue >= l.maxSynQueue() {
		e.sendCookie(id, pkt, s, &so, now)
		return
	}
	c := e.newChild(id, pkt, s, &so, false)
	if c == nil {
		return
	}
	l.synQueue++
	l.children[c] = struct{}{}
	c.mu.Lock()
	c.sendSYN()
	c.mu.Unlock()
	e.after = append(e.after, c.flushLater)
}

// flushLater writes a child's outbox once the listener's lock is released:
// with a pipe link or local delivery the peer answers from inside the write,
// and that answer may need the listener.
func (e *endpoint) flushLater() {
	e.mu.Lock()
	e.unlock()
}

// sendCookie answers a SYN statelessly with a SYN-ACK whose sequence number
// is a cookie (RFC 4987 §3.6). Only the MSS survives, so the cookie SYN-ACK
// offers no window scale, timestamps or SACK.
func (e *endpoint) sendCookie(id stack.TransportEndpointID, pkt *stack.PacketBuffer, s *segment, so *header.TCPSynOptions, now time.Duration) {
	net := pkt.Network()
	r, err := e.p.s.FindRoute(pkt.NICID, net.DestinationAddress(), net.SourceAddress(), pkt.NetworkProtocolNumber, false)
	if err != nil {
		return
	}
	mss := so.MSS
	if m := uint16(min(int(r.MTU())-header.TCPMinimumSize, 0xffff)); mss > m {
		mss = m
	}
	cookie := e.p.jar.Make(tupleOf(id), s.seq, mss, now)
	var ob [8]byte
	n := header.EncodeMSSOption(uint32(int(r.MTU())-header.TCPMinimumSize), ob[:])
	out := e.p.buildPacket(r, id.LocalPort, id.RemotePort, cookie, s.seq+1, header.TCPFlagSyn|header.TCPFlagAck, 0xffff, ob[:n], nil, nil)
	e.after = append(e.after, func() {
		if e.p.write(r, out) == nil {
			e.p.st.cookiesSent.Inc()
		}
		out.DecRef()
		r.Release()
	})
}

// newChild makes the endpoint of a passive open and registers its 4-tuple.
func (e *endpoint) newChild(id stack.TransportEndpointID, pkt *stack.PacketBuffer, s *segment, so *header.TCPSynOptions, cookie bool) *endpoint {
	c := e.p.newEndpoint(e.netProto, &waiter.Queue{})
	c.id = id
	c.netProtos = []tcpip.NetworkProtocolNumber{pkt.NetworkProtocolNumber}
	c.nicID = pkt.NICID
	c.cookie = cookie
	c.nodelay = e.nodelay
	c.ops.SetDelayOption(!e.nodelay)
	c.ops.SetKeepAlive(e.ops.GetKeepAlive())
	c.kaIdle, c.kaIntvl, c.kaCount = e.kaIdle, e.kaIntvl, e.kaCount
	r, err := e.p.s.FindRoute(pkt.NICID, id.LocalAddress, id.RemoteAddress, pkt.NetworkProtocolNumber, false)
	if err != nil {
		return nil
	}
	c.route = r
	c.preConn()
	now := e.now()
	if cookie {
		c.irs = s.seq - 1
		c.iss = s.ack - 1
		c.sndUna, c.sndNxt, c.sndMax = 1, 1, 1
	} else {
		c.irs = s.seq
		c.iss = e.p.isn.ISN(tupleOf(id), now)
		c.sndUna, c.sndNxt, c.sndMax = 0, 1, 1
	}
	c.rcvNxt = 1
	c.tsOffset = e.p.tsOffsetFor(tupleOf(id))
	c.negotiate(so, false)
	if c.tsOK {
		c.tsRecent = so.TSVal
		c.tsRecentT = now
		c.tsRecentSet = true
	}
	c.initConn()
	c.parent = e
	c.state = StateSynRcvd
	c.lastSend = now
	if err := e.p.s.RegisterTransportEndpoint(c.netProtos, ProtocolNumber, id, c, ports.Flags{}, e.bindNIC); err != nil {
		r.Release()
		return nil
	}
	c.registered = true
	return c
}

// giveToListener moves an established passive child to its listener's accept
// queue; it runs with no endpoint lock held.
func (e *endpoint) giveToListener(l *endpoint) {
	l.mu.Lock()
	if l.state != StateListen {
		l.mu.Unlock()
		e.mu.Lock()
		e.resetLocked(&tcpip.ErrConnectionAborted{})
		e.unlock()
		return
	}
	l.lst.synQueue--
	l.lst.accept = append(l.lst.accept, e)
	l.notify |= waiterReadable
	l.unlock()
}

// Read implements tcpip.Endpoint.
func (e *endpoint) Read(w io.Writer, opts tcpip.ReadOptions) (tcpip.ReadResult, tcpip.Error) {
	e.mu.Lock()
	switch e.state {
	case StateInitial, StateBound, StateListen:
		e.mu.Unlock()
		return tcpip.ReadResult{}, &tcpip.ErrNotConnected{}
	case StateSynSent, StateSynRcvd:
		e.mu.Unlock()
		return tcpip.ReadResult{}, &tcpip.ErrWouldBlock{}
	}
	if e.rcvLen == 0 {
		var err tcpip.Error = &tcpip.ErrWouldBlock{}
		switch {
		case e.finRcvd || e.rdShut:
			err = &tcpip.ErrClosedForReceive{}
		case e.state == StateClosed && e.hardErr != nil:
			err = e.hardErr
		case e.state == StateClosed:
			err = &tcpip.ErrClosedForReceive{}
		}
		e.mu.Unlock()
		return tcpip.ReadResult{}, err
	}
	n := 0
	for n < e.rcvLen {
		at := (e.rcvHead + n) % len(e.rcvRing)
		chunk := e.rcvRing[at:min(len(e.rcvRing), at+e.rcvLen-n)]
		k, werr := w.Write(chunk)
		n += k
		if werr != nil || k < len(chunk) {
			break
		}
	}
	if n == 0 {
		e.mu.Unlock()
		return tcpip.ReadResult{}, &tcpip.ErrBadBuffer{}
	}
	if !opts.Peek {
		e.consumed(n)
	}
	e.unlock()
	return tcpip.ReadResult{Count: n, Total: n}, nil
}

// consumed removes n read bytes, lets autotuning grow the buffer, and sends
// a window update when the window has opened enough to matter.
func (e *endpoint) consumed(n int) {
	e.rcvHead = (e.rcvHead + n) % len(e.rcvRing)
	e.rcvLen -= n
	if e.rcvLen == 0 {
		e.rcvHead = 0
	}
	if !e.state.synchronized() {
		return
	}
	if nb, changed := e.tuner.OnRead(e.now(), n, e.rttForTuning()); changed && nb > e.rcvBuf {
		e.growRcv(nb)
	}
	old := e.rcvAdv - e.rcvNxt
	free := uint64(max(e.rcvBuf-e.rcvLen, 0))
	if maxW := uint64(0xffff) << e.rcvWS; free > maxW {
		free = maxW
	}
	if !e.finRcvd && free >= 2*old && free-old >= uint64(e.smss) {
		e.sendAck()
	}
}

// growRcv enlarges the receive buffer (autotuning never shrinks it, so the
// window never has to shrink) and the out-of-order store with it.
func (e *endpoint) growRcv(nb int) {
	ring := make([]byte, nb+1<<e.rcvWS)
	k := 0
	for k < e.rcvLen {
		at := (e.rcvHead + k) % len(e.rcvRing)
		k += copy(ring[k:e.rcvLen], e.rcvRing[at:min(len(e.rcvRing), at+e.rcvLen-k)])
	}
	e.rcvRing = ring
	e.rcvHead = 0
	e.rcvBuf = nb
	e.ooo.SetLimit(nb + 1<<e.rcvWS)
	// One range per hole: the range bound must follow the window too.
	e.ooo.SetMaxRanges(reasm.DefaultMaxRanges(nb + 1<<e.rcvWS))
}

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
		linger := e.ops.GetLinger()
		if e.rcvLen > 0 || linger.Enabled && linger.Timeout == 0 {
			e.resetLocked(&tcpip.ErrConnectionAborted{})
			break
		}
		e.shutdownWriteLocked()
		if linger.Enabled {
			e.tLinger.arm(linger.Timeout)
		}
	default:
		e.rdShut = true
	}
	e.unlock()
}

// closeListenerLocked stops listening and resets every child not accepted.
func (e *endpoint) closeListenerLocked() {
	if e.lst == nil {
		return
	}
	var kids []*endpoint
	for c := range e.lst.children {
		kids = append(kids, c)
	}
	// Map order is random; reset in creation order so runs repeat.
	sort.Slice(kids, func(i, j int) bool { return kids[i].serial < kids[j].serial })
	e.lst.accept = nil
	e.lst.children = map[*endpoint]struct{}{}
	e.closeLocked(nil)
	e.after = append(e.after, func() {
		for _, c := range kids {
			c.Abort()
		}
	})
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
// released, waiters are told, and a half-open child leaves its listener.
func (e *endpoint) closeLocked(err tcpip.Error) {
	if e.state == StateClosed {
		return
	}
	prev := e.state
	e.state = StateClosed
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
	if parent := e.parent; parent != nil && prev == StateSynRcvd && !e.handOff {
		e.parent = nil
		e.after = append(e.after, func() {
			parent.mu.Lock()
			if parent.lst != nil {
				if _, ok := parent.lst.children[e]; ok {
					delete(parent.lst.children, e)
					parent.lst.synQueue--
				}
			}
			parent.mu.Unlock()
		})
	}
	e.notify |= allEvents
}

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
		return e.rcvLen, nil
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
