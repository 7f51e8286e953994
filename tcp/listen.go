// Passive open: the listener, its SYN queue, SYN cookies, and the accept
// queue.

package tcp

import (
	"sort"
	"time"

	"gvisor.dev/gvisor/pkg/buffer"
	"gvisor.dev/gvisor/pkg/tcpip"
	"gvisor.dev/gvisor/pkg/tcpip/header"
	"gvisor.dev/gvisor/pkg/tcpip/ports"
	"gvisor.dev/gvisor/pkg/tcpip/stack"
	"gvisor.dev/gvisor/pkg/waiter"

	"github.com/netramp/netramp/tcp/internal/syncookie"
)

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
	// control:tcp-listener-synack-opens
	case s.has(header.TCPFlagAck) && s.has(header.TCPFlagSyn):
		// Any ACK is bad in LISTEN, a SYN-ACK included: RST <SEQ=SEG.ACK>,
		// and no child (RFC 9293 §3.10.7.2, second check).
		e.p.st.dropState.Inc()
		if out, r := e.p.buildRST(id, pkt, s); out != nil {
			e.after = append(e.after, func() { e.p.sendBuilt(r, out, true) })
		}
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
		so := e.p.cookieSynOptions(id, s, mss, now)
		c := e.newChild(id, pkt, s, &so, true)
		if c == nil {
			return
		}
		e.p.st.cookiesOK.Inc()
		c.mu.Lock()
		c.established(now)
		c.sndWnd = uint64(s.wnd) << c.sndWS
		c.rcvAdv = c.rcvNxt + uint64(e.p.cookieWindow()) // what the SYN-ACK offered
		c.rcvPromise = c.rcvAdv
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
		// control:hosttests-flood-no-syn-cookies
		// control:tcp-no-syn-cookies
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
// is a cookie (RFC 4987 §3.6). When the SYN offers timestamps, the SYN-ACK
// agrees to window scale and SACK as well and keeps the peer's choices in its
// TSval (syncookie.StampTS); without them only the MSS survives.
func (e *endpoint) sendCookie(id stack.TransportEndpointID, pkt *stack.PacketBuffer, s *segment, so *header.TCPSynOptions, now time.Duration) {
	net := pkt.Network()
	r, err := e.p.s.FindRoute(pkt.NICID, net.DestinationAddress(), net.SourceAddress(), pkt.NetworkProtocolNumber, false)
	if err != nil {
		return
	}
	ourMSS := int(r.MTU()) - header.TCPMinimumSize
	mss := so.MSS
	if m := uint16(min(ourMSS, 0xffff)); mss > m {
		mss = m
	}
	cookie := e.p.jar.Make(tupleOf(id), s.seq, mss, now)
	var ob [40]byte
	opts := e.p.cookieOptions(ob[:], id, so, ourMSS, now)
	pa := pathOf(r)
	out := e.p.buildPacket(&pa, id.LocalPort, id.RemotePort, cookie, s.seq+1, header.TCPFlagSyn|header.TCPFlagAck, e.p.cookieWindow(), opts, buffer.Buffer{})
	e.after = append(e.after, func() {
		if e.p.write(&pa, out, true) == nil {
			e.p.st.cookiesSent.Inc()
		}
		out.DecRef()
		r.Release()
	})
}

// cookieWindow is a cookie SYN-ACK's window, never scaled (RFC 7323 §2.2):
// what the child's first receive buffer holds.
func (p *protocol) cookieWindow() uint16 {
	return uint16(min(initialReceiveBuffer, p.opts.ReceiveBufferMax, 0xffff))
}

// cookieOptions encodes a cookie SYN-ACK's options: the MSS, and with
// timestamps the window scale and SACK-permitted the SYN offered.
func (p *protocol) cookieOptions(dst []byte, id stack.TransportEndpointID, so *header.TCPSynOptions, ourMSS int, now time.Duration) []byte {
	b := dst[:40]
	n := header.EncodeMSSOption(uint32(ourMSS), b)
	if !so.TS || p.opts.NoTimestamps {
		return b[:n]
	}
	co := syncookie.Options{WS: -1, SACK: so.SACKPermitted && !p.opts.NoSACK}
	if so.WS >= 0 && !p.opts.NoWindowScale {
		co.WS = so.WS
		n += header.EncodeNOP(b[n:])
		n += header.EncodeWSOption(int(p.rcvScale()), b[n:])
	}
	if co.SACK {
		n += header.EncodeSACKPermittedOption(b[n:])
	} else {
		n += header.EncodeNOP(b[n:])
		n += header.EncodeNOP(b[n:])
	}
	n += header.EncodeTSOption(syncookie.StampTS(p.tsAt(id, now), co), so.TSVal, b[n:])
	return b[:n]
}

// cookieSynOptions rebuilds the SYN's options from a valid cookie's ACK: the
// cookie's MSS, and what the TSecr carries when the ACK has timestamps.
func (p *protocol) cookieSynOptions(id stack.TransportEndpointID, s *segment, mss uint16, now time.Duration) header.TCPSynOptions {
	so := header.TCPSynOptions{MSS: mss, WS: -1}
	opts := header.ParseTCPOptions(s.opts)
	if !opts.TS || p.opts.NoTimestamps { // control:cookie-options
		return so
	}
	co, ok := syncookie.OptionsFromEcho(opts.TSEcr, p.tsAt(id, now))
	if !ok {
		return so
	}
	so.TS, so.TSVal, so.TSEcr = true, opts.TSVal, opts.TSEcr
	so.WS, so.SACKPermitted = co.WS, co.SACK
	return so
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
