// Passive open: the listener, its SYN queue, SYN cookies, and the accept
// queue.

package tcp

import (
	"time"

	"gvisor.dev/gvisor/pkg/tcpip"
	"gvisor.dev/gvisor/pkg/tcpip/header"
	"gvisor.dev/gvisor/pkg/tcpip/ports"
	"gvisor.dev/gvisor/pkg/tcpip/stack"
	"gvisor.dev/gvisor/pkg/waiter"

	"github.com/netramp/netramp/tcp/internal/syncookie"
)

// listener holds a listening endpoint's queues.
type listener struct {
	backlog int
	accept  acceptQueue // established, not yet accepted
	syn     synQueue    // half-open (synqueue.go)
}

// acceptQueue is the established connections not yet accepted, oldest
// first. Accept takes the oldest without moving the others: shifting the
// slice down by one, as it did, moved every waiting connection on each
// Accept, a walk of up to the backlog (4096) per connection accepted. The
// taken slots are reclaimed when as many are taken as wait, so each waiting
// connection is moved at most once per Accept that made room for it.
type acceptQueue struct {
	q    []*endpoint
	head int // q[head:] wait
}

func (a *acceptQueue) len() int { return len(a.q) - a.head }

func (a *acceptQueue) push(c *endpoint) { a.q = append(a.q, c) }

// pop takes the oldest; the queue is not empty.
func (a *acceptQueue) pop() *endpoint {
	c := a.q[a.head]
	a.q[a.head] = nil
	// control:tcp-accept-queue-shifts
	a.head++
	switch n := a.len(); {
	case n == 0:
		a.q, a.head = a.q[:0], 0
	case a.head >= n:
		copy(a.q, a.q[a.head:])
		clear(a.q[n:])
		a.q, a.head = a.q[:n], 0
	}
	return c
}

// take empties the queue and returns what waited, oldest first.
func (a *acceptQueue) take() []*endpoint {
	w := a.q[a.head:]
	*a = acceptQueue{}
	return w
}

// maxSynQueue bounds half-open connections; beyond it SYNs are answered
// with cookies (RFC 4987 §3.6).
func (l *listener) maxSynQueue() int { return max(l.backlog, 8) }

// acceptFull reports, and counts, a handshake that finds no room in the
// accept queue.
func (e *endpoint) acceptFull() bool {
	if e.lst.accept.len() < e.lst.backlog {
		return false
	}
	e.p.st.dropAcceptFull.Inc()
	return true
}

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
	e.lst = &listener{backlog: backlog, syn: synQueue{byID: make(map[stack.TransportEndpointID]*request)}}
	e.lst.syn.t = timer{e: e, fn: (*endpoint).onSynAckTimer}
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
	if e.lst.accept.len() == 0 {
		return nil, nil, &tcpip.ErrWouldBlock{}
	}
	c := e.lst.accept.pop()
	if peerAddr != nil {
		*peerAddr = tcpip.FullAddress{Addr: c.id.RemoteAddress, Port: c.id.RemotePort, NIC: c.nicID}
	}
	return c, c.wq, nil
}

// handleListen is RFC 9293 §3.10.7.2 (LISTEN), with the SYN queue, the
// accept queue and SYN cookies; a segment of a half-open connection goes to
// its request (synReceived).
func (e *endpoint) handleListen(id stack.TransportEndpointID, pkt *stack.PacketBuffer, s *segment) {
	l := e.lst
	now := e.now()
	if r := l.syn.byID[id]; r != nil {
		e.synReceived(r, id, pkt, s, now)
		return
	}
	// control:tcp-listener-no-child-lookup
	if !s.has(header.TCPFlagSyn) && e.toChild(id, pkt, s) {
		return
	}
	switch {
	case s.has(header.TCPFlagRst):
		return
	// control:tcp-listener-synack-opens
	case s.has(header.TCPFlagAck) && s.has(header.TCPFlagSyn):
		// Any ACK is bad in LISTEN, a SYN-ACK included: RST <SEQ=SEG.ACK>,
		// and no request (RFC 9293 §3.10.7.2, second check).
		e.p.st.dropState.Inc()
		e.resetLater(id, pkt, s)
		return
	case s.has(header.TCPFlagAck) && !s.has(header.TCPFlagSyn):
		// Only a SYN cookie's ACK is acceptable here (RFC 4987 §3.6). The
		// cookie is checked against SEG.SEQ-1 as the peer's ISN, so only the
		// first segment after the SYN completes the handshake: its ACK, or
		// data at ISN+1 in place of a lost ACK. A later segment cannot
		// validate a cookie, as §3.6's design implies: no state is kept to
		// learn the ISN from, so it gets the RST below.
		mss, co, ok := e.p.jar.Check(tupleOf(id), s.seq-1, s.ack-1, now)
		if !ok {
			e.resetLater(id, pkt, s)
			return
		}
		if e.acceptFull() {
			return
		}
		so := e.p.cookieSynOptions(id, s, mss, co, now)
		if e.establish(id, pkt, s, s.ack-1, s.seq-1, &so, now) {
			e.p.st.cookiesOK.Inc()
		}
		return
	case !s.has(header.TCPFlagSyn):
		return
	}
	if e.acceptFull() {
		return
	}
	so := e.p.agree(header.ParseSynOptions(s.opts, false))
	if l.syn.len() >= l.maxSynQueue() {
		// control:hosttests-flood-no-syn-cookies
		// control:tcp-no-syn-cookies
		e.sendCookie(id, pkt, s, so, now)
		return
	}
	r := &request{id: id, nic: pkt.NICID, netProto: pkt.NetworkProtocolNumber,
		iss: e.p.isn.ISN(tupleOf(id), now), irs: s.seq, so: so, synAt: now}
	// control:tcp-half-open-is-an-endpoint-2
	l.syn.add(r, now)
	e.answer(r, header.TCPFlagSyn|header.TCPFlagAck, now)
}

// toChild hands s to the connection now registered for id, if there is one,
// and reports whether it did. Such an s was given to the listener by the
// demuxer just before the handshake's last ACK, on another goroutine,
// removed the request and registered the child (establish): s is the
// child's, RFC 9293 §3.10.7.4 would have the child take it, and a RST from
// here would kill a good connection. Like Linux, the listener looks the
// segment up again. Only a segment that finds no request pays for the
// lookup, never an established connection's. A SYN is left to the listener:
// HandlePacket sends a new incarnation's SYN here from a TIME-WAIT endpoint
// that may still be registered, and handing it back would loop.
func (e *endpoint) toChild(id stack.TransportEndpointID, pkt *stack.PacketBuffer, s *segment) bool {
	c, ok := e.p.s.FindTransportEndpoint(pkt.NetworkProtocolNumber, ProtocolNumber, id, pkt.NICID).(*endpoint)
	if !ok || c == e {
		return false
	}
	c.mu.Lock() // after the listener's, as in establish
	if c.state == StateListen {
		c.mu.Unlock()
		return false
	}
	c.segmentArrives(pkt, s)
	c.mu.Unlock()
	e.after = append(e.after, c.flushLater)
	return true
}

// resetLater queues the RST of RFC 9293 §3.10.7.2 for s, sent once the
// listener's lock is released.
func (e *endpoint) resetLater(id stack.TransportEndpointID, pkt *stack.PacketBuffer, s *segment) {
	if out, r := e.p.buildRST(id, pkt, s); out != nil {
		e.after = append(e.after, func() { e.p.sendBuilt(r, out, e.p.st.rstSent) })
	}
}

// flushLater writes a child's outbox once the listener's lock is released:
// with a pipe link or local delivery the peer answers from inside the write,
// and that answer may need the listener.
func (e *endpoint) flushLater() {
	e.mu.Lock()
	e.unlock()
}

// sendCookie answers a SYN statelessly with a SYN-ACK whose sequence number
// is a cookie (RFC 4987 §3.6), agreeing to what a request would. The cookie
// keeps the peer's MSS, SACK-permitted and window scale, the scale rounded
// down (syncookie.WSTable); when the SYN offers timestamps, the TSval keeps
// the exact scale too (syncookie.StampTS). The child takes the smaller of
// the peer's MSS and ours, as a request's does (negotiate).
func (e *endpoint) sendCookie(id stack.TransportEndpointID, pkt *stack.PacketBuffer, s *segment, so header.TCPSynOptions, now time.Duration) {
	co := syncookie.Options{WS: so.WS, SACK: so.SACKPermitted}
	// control:tcp-cookie-no-options-without-timestamps
	cookie := e.p.jar.Make(tupleOf(id), s.seq, so.MSS, co, now)
	tsVal := e.p.tsAt(id, now)
	if so.TS {
		tsVal = syncookie.StampTS(tsVal, co)
	}
	e.sendStateless(id, pkt.NICID, pkt.NetworkProtocolNumber, cookie, s.seq+1, header.TCPFlagSyn|header.TCPFlagAck, &so, tsVal, e.p.st.cookiesSent)
}

// synWindow is the window of a passive open's SYN-ACK, never scaled (RFC
// 7323 §2.2): what the child's first receive buffer holds.
func (p *protocol) synWindow() uint16 {
	return uint16(min(initialReceiveBuffer, p.opts.ReceiveBufferMax, 0xffff))
}

// agree reduces a SYN's options to what we agree to: each of window scale,
// timestamps and SACK only if our options allow it.
func (p *protocol) agree(so header.TCPSynOptions) header.TCPSynOptions {
	if p.opts.NoWindowScale {
		so.WS = -1
	}
	so.TS = so.TS && !p.opts.NoTimestamps
	so.SACKPermitted = so.SACKPermitted && !p.opts.NoSACK
	return so
}

// cookieSynOptions rebuilds the SYN's options from a valid cookie's ACK: the
// cookie's MSS, SACK-permitted and window scale, and, when the ACK has
// timestamps, those and the exact scale the TSecr carries.
func (p *protocol) cookieSynOptions(id stack.TransportEndpointID, s *segment, mss uint16, co syncookie.Options, now time.Duration) header.TCPSynOptions {
	so := header.TCPSynOptions{MSS: mss, WS: co.WS, SACKPermitted: co.SACK}
	opts := header.ParseTCPOptions(s.opts)
	if !opts.TS || p.opts.NoTimestamps { // control:cookie-options
		return so
	}
	echo, ok := syncookie.OptionsFromEcho(opts.TSEcr, p.tsAt(id, now))
	if !ok {
		return so
	}
	so.TS, so.TSVal, so.TSEcr = true, opts.TSVal, opts.TSEcr
	so.WS, so.SACKPermitted = echo.WS, echo.SACK
	return so
}

// establish makes the endpoint of a passive open whose last ACK s has
// arrived, ESTABLISHED, and queues it for Accept; s's data, if any, is the
// child's. iss and irs are the initial sequence numbers, so the SYN's
// agreed options, and synAt when TS.Recent (so.TSVal) was seen.
func (e *endpoint) establish(id stack.TransportEndpointID, pkt *stack.PacketBuffer, s *segment, iss, irs uint32, so *header.TCPSynOptions, synAt time.Duration) bool {
	r, err := e.p.s.FindRoute(pkt.NICID, id.LocalAddress, id.RemoteAddress, pkt.NetworkProtocolNumber, false)
	if err != nil {
		return false
	}
	now := e.now()
	c := e.p.newEndpoint(e.netProto, &waiter.Queue{})
	c.ops.SetDelayOption(!e.nodelay) // these take c's lock
	c.ops.SetKeepAlive(e.ops.GetKeepAlive())
	c.mu.Lock() // registered, it may be found at once
	c.id = id
	c.rxSum = knownPseudoSum(pseudoSum(id.LocalAddress, id.RemoteAddress))
	c.netProtos = []tcpip.NetworkProtocolNumber{pkt.NetworkProtocolNumber}
	c.nicID = pkt.NICID
	c.route = r
	if err := e.p.s.RegisterTransportEndpoint(c.netProtos, ProtocolNumber, id, c, ports.Flags{}, e.bindNIC); err != nil {
		c.mu.Unlock()
		r.Release()
		return false
	}
	c.registered = true
	c.opened = true
	e.p.st.connsOpened.Inc()
	c.nodelay = e.nodelay
	c.kaIdle, c.kaIntvl, c.kaCount = e.kaIdle, e.kaIntvl, e.kaCount
	c.preConn()
	c.iss, c.irs = iss, irs
	c.sndUna, c.sndNxt, c.sndMax = 1, 1, 1
	c.rcvNxt = 1
	c.rcvAdv = c.rcvNxt + uint64(e.p.synWindow()) // what the SYN-ACK offered
	c.rcvPromise = c.rcvAdv
	c.lastAckSent = c.rcvNxt // the SYN-ACK's
	c.tsOffset = e.p.tsOffsetFor(tupleOf(id))
	c.negotiate(so, false)
	if c.tsOK {
		c.tsRecent, c.tsRecentT, c.tsRecentSet = so.TSVal, synAt, true
	}
	c.initConn()
	c.lastSend = now
	c.established(now)
	c.sndWnd = uint64(s.wnd) << c.sndWS
	c.maxSndWnd = c.sndWnd
	c.sndWL1, c.sndWL2 = 1, 1
	e.lst.accept.push(c)
	e.notify |= waiterReadable
	// control:tcp-establish-drops-data
	c.handleSegment(s) // its data, if any
	c.mu.Unlock()
	e.after = append(e.after, c.flushLater)
	return true
}

// closeListenerLocked stops listening: every connection not accepted is
// reset, established or half-open.
func (e *endpoint) closeListenerLocked() {
	if e.lst == nil {
		return
	}
	kids := e.lst.accept.take()
	q := &e.lst.syn
	now := e.now()
	for _, r := range q.order {
		e.answer(r, header.TCPFlagRst|header.TCPFlagAck, now)
	}
	q.order, q.byID = nil, map[stack.TransportEndpointID]*request{}
	q.t.stop()
	e.closeLocked(nil)
	e.after = append(e.after, func() {
		for _, c := range kids {
			c.Abort()
		}
	})
}
