// The SYN queue: a listener's half-open connections, each a small record
// rather than an endpoint. A record holds what its SYN-ACK, its answers and
// the handshake's last ACK need; the endpoint is made only when that ACK
// arrives (listen.go), so a half-open connection costs a few hundred bytes
// and a flood fills a bounded table, then gets cookies.

package tcp

import (
	"container/heap"
	"time"

	"gvisor.dev/gvisor/pkg/buffer"
	"gvisor.dev/gvisor/pkg/tcpip"
	"gvisor.dev/gvisor/pkg/tcpip/header"
	"gvisor.dev/gvisor/pkg/tcpip/stack"

	"github.com/netramp/netramp/counters"
	"github.com/netramp/netramp/tcp/internal/rtt"
)

// request is one connection in SYN-RECEIVED: its SYN came, our SYN-ACK went.
// RCV.NXT is irs+1 and SND.NXT iss+1 until the handshake completes.
type request struct {
	id       stack.TransportEndpointID
	nic      tcpip.NICID
	netProto tcpip.NetworkProtocolNumber
	iss, irs uint32
	so       header.TCPSynOptions // the options both ends agreed to (agree); TSVal is TS.Recent
	synAt    time.Duration        // when the SYN came, TS.Recent's age
	due      time.Duration        // when the SYN-ACK is sent again
	retries  int                  // SYN-ACKs sent again so far
	acks     ackLimit             // ACKs sent for unacceptable segments (ratelimit.go)
	at       int                  // index in synQueue.order
	// control:tcp-half-open-is-an-endpoint-1
}

// synQueue is a listener's requests by 4-tuple, and by when each SYN-ACK is
// due again (one timer for all of them).
type synQueue struct {
	byID  map[stack.TransportEndpointID]*request
	order requestHeap
	t     timer
}

func (q *synQueue) len() int { return len(q.order) }

// add queues a request whose first SYN-ACK has just gone.
func (q *synQueue) add(r *request, now time.Duration) {
	r.due = now + rtt.DefaultInitialRTO
	q.byID[r.id] = r
	heap.Push(&q.order, r)
	q.rearm(now)
}

func (q *synQueue) remove(r *request) {
	delete(q.byID, r.id)
	heap.Remove(&q.order, r.at)
}

// rearm points the timer at the soonest retransmission. A request removed
// meanwhile only makes it fire early and find nothing due.
func (q *synQueue) rearm(now time.Duration) {
	if q.len() == 0 {
		q.t.stop()
	} else if d := q.order[0].due; q.t.deadline != d {
		q.t.arm(d - now)
	}
}

// onSynAckTimer sends again each SYN-ACK that is due, with the backoff of RFC
// 6298 §5.5 from the initial RTO (no RTT is known yet), and drops a request
// whose last SYN-ACK went unanswered: maxSynRetries, as for our SYN.
func (e *endpoint) onSynAckTimer() {
	q := &e.lst.syn
	now := e.now()
	for q.len() > 0 && q.order[0].due <= now {
		r := q.order[0]
		if r.retries >= maxSynRetries {
			q.remove(r)
			e.p.st.dropSynTimeout.Inc()
			continue
		}
		r.retries++
		r.due = now + rtt.DefaultInitialRTO<<r.retries
		heap.Fix(&q.order, 0)
		e.p.st.synAckRetransmits.Inc()
		e.answer(r, header.TCPFlagSyn|header.TCPFlagAck, now)
	}
	q.rearm(now)
}

// synReceived is RFC 9293 §3.10.7.4 for a request, in the RFC's order:
// sequence (PAWS first, by the endpoint's rule: pawsOld), RST, SYN, ACK. The
// ACK of our SYN completes the handshake and makes the endpoint.
func (e *endpoint) synReceived(r *request, id stack.TransportEndpointID, pkt *stack.PacketBuffer, s *segment, now time.Duration) {
	q := &e.lst.syn
	opts := header.ParseTCPOptions(s.opts)
	off := uint64(s.seq - r.irs) // RCV.NXT is offset 1
	// The right edge is the SYN-ACK's window past RCV.NXT.
	// control:tcp-request-paws-no-reorder-tolerance
	reorderable := s.data.n > 0 && off < 1+uint64(e.p.synWindow())
	paws := r.so.TS && opts.TS && !s.has(header.TCPFlagRst) && pawsOld(r.so.TSVal, opts.TSVal, reorderable)
	if paws || !acceptable(off, uint64(s.logicalLen()), 1, uint64(e.p.synWindow())) {
		if paws {
			e.p.st.dropPAWS.Inc()
		} else {
			e.p.st.dropBadSeq.Inc()
		}
		switch {
		case s.has(header.TCPFlagRst):
		case off == 0 && s.flags&(header.TCPFlagSyn|header.TCPFlagAck) == header.TCPFlagSyn:
			// The SYN again: its SYN-ACK was lost, so it is repeated.
			if e.p.mayAnswer(&r.acks, false, now) {
				e.answer(r, header.TCPFlagSyn|header.TCPFlagAck, now)
			}
		case e.p.mayAnswer(&r.acks, false, now):
			e.answer(r, header.TCPFlagAck, now)
		}
		return
	}
	switch {
	case s.has(header.TCPFlagRst) && off == 1:
		e.p.st.rstRecv.Inc()
		q.remove(r)
	case s.has(header.TCPFlagRst) || s.has(header.TCPFlagSyn):
		// An in-window RST not at RCV.NXT, or any SYN: a challenge ACK
		// (RFC 5961 §3.2, §4.2).
		if e.p.mayAnswer(&r.acks, true, now) {
			e.answer(r, header.TCPFlagAck, now)
		}
	case !s.has(header.TCPFlagAck):
		e.p.st.dropState.Inc()
	case s.ack != r.iss+1:
		e.resetLater(id, pkt, s)
	case e.acceptFull():
		// The request stays: the peer's next segment, or our next SYN-ACK's
		// answer, completes it once Accept has made room.
	default:
		q.remove(r)
		e.establish(id, pkt, s, r.iss, r.irs, &r.so, r.synAt)
	}
}

// answer sends a request's SYN-ACK, ACK or RST|ACK.
func (e *endpoint) answer(r *request, flags header.TCPFlags, now time.Duration) {
	seq := r.iss + 1
	if flags&header.TCPFlagSyn != 0 {
		seq = r.iss
	}
	var ok *counters.Counter
	if flags&header.TCPFlagRst != 0 {
		ok = e.p.st.rstSent
	}
	e.sendStateless(r.id, r.nic, r.netProto, seq, r.irs+1, flags, &r.so, e.p.tsAt(r.id, now), ok)
}

// sendStateless queues a segment of a connection that has no endpoint (a
// request, or a cookie's SYN-ACK) for after the listener's lock. A SYN-ACK
// carries the options so agrees to and the unscaled window the child will
// have; an ACK carries the window scaled and so's timestamps. ok counts it
// once written.
func (e *endpoint) sendStateless(id stack.TransportEndpointID, nic tcpip.NICID, netProto tcpip.NetworkProtocolNumber, seq, ack uint32, flags header.TCPFlags, so *header.TCPSynOptions, tsVal uint32, ok *counters.Counter) {
	rt, err := e.p.s.FindRoute(nic, id.LocalAddress, id.RemoteAddress, netProto, false)
	if err != nil {
		return
	}
	var ob [40]byte
	var opts []byte
	wnd := e.p.synWindow()
	ws := -1
	if so.WS >= 0 {
		ws = int(e.p.rcvScale())
	}
	switch {
	case flags&header.TCPFlagRst != 0:
		wnd = 0
	case flags&header.TCPFlagSyn != 0:
		opts = encodeSynOptions(ob[:], routeMSS(rt), ws, so.SACKPermitted, so.TS, tsVal, so.TSVal)
	default:
		wnd >>= max(ws, 0)
		if so.TS {
			n := header.EncodeNOP(ob[:])
			n += header.EncodeNOP(ob[n:])
			n += header.EncodeTSOption(tsVal, so.TSVal, ob[n:])
			opts = ob[:n]
		}
	}
	pa := pathOf(rt)
	out := e.p.buildPacket(&pa, id.LocalPort, id.RemotePort, seq, ack, flags, wnd, opts, buffer.Buffer{})
	e.after = append(e.after, func() { e.p.sendBuilt(rt, out, ok) })
}

// requestHeap orders requests by when their SYN-ACK is due (container/heap).
type requestHeap []*request

func (h requestHeap) Len() int           { return len(h) }
func (h requestHeap) Less(i, j int) bool { return h[i].due < h[j].due }
func (h requestHeap) Swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].at, h[j].at = i, j
}

func (h *requestHeap) Push(x any) {
	r := x.(*request)
	r.at = len(*h)
	*h = append(*h, r)
}

func (h *requestHeap) Pop() any {
	old := *h
	r := old[len(old)-1]
	old[len(old)-1] = nil
	*h = old[:len(old)-1]
	return r
}
