// Segmentation offload: the segments of one send opportunity that leave
// together go down as one packet the link splits (TSO/GSO).

package tcp

import (
	"bytes"
	"time"

	"gvisor.dev/gvisor/pkg/tcpip/header"
	"gvisor.dev/gvisor/pkg/tcpip/stack"
)

// The sender keeps every per-segment rule when the link segments for it: each
// MSS-sized segment is decided, pushed on the retransmission queue, counted,
// paced and timed exactly as without offload, and only the packet that
// carries it changes, but for two stated departures that keep a packet from
// being cut short: the pacer's burst at rates no timer can space (gsoBurst)
// and a write's tail held for the next write (corkTail). Consecutive new
// segments of one opportunity with the same headers but for the sequence
// number (ACK, window, options: the timestamp is the opportunity's, SACK
// blocks only change between inbound segments) form a run, written as one
// packet of up to the link's GSO size whose GSO options tell the link to cut
// it at the segment size; a full segment after a full one takes the run's
// headers as they are instead of building the same again (runExtend). What
// the link puts on the wire is what the sender would have sent segment by
// segment, except that PSH is set on the run's last segment only, as a NIC's
// TSO leaves it (RFC 9293 §3.9.1 lets a sender set PSH as it sees fit), and
// that the IPv4 ID counts up per segment, which a datagram with DF need not
// make unique (RFC 6864 §4.1). Retransmissions,
// loss probe resends, segments without data and segments that may be
// fragmented (pmtu.go) always go alone. Without GSO on the route nothing here
// runs: runJoin declines, deferOutput defers nothing and gsoBurst changes
// nothing; corkTail holds a write's tail short of one segment instead of one
// GSO packet.

// gsoRun is the run being built: new data [start, end) of sequence offsets
// (a FIN takes the last), segs segments of mss payload bytes but the last,
// which has last.
type gsoRun struct {
	start, end uint64
	fin        bool
	segs       int
	mss, last  int
	payload    int
	ack        uint32
	wnd        uint16
	opts       [40]byte
	optLen     int
	// reuse says that a full segment may join without its headers being
	// built (runExtend): the run's first segment carried no D-SACK, and its
	// headers were built at now with RCV.NXT at rcvNxt.
	reuse  bool
	now    time.Duration
	rcvNxt uint64
	// extended is the payload runExtend added, counted in tcp.sent.bytes
	// once, when the run leaves (flushRun), not a segment at a time.
	extended int
}

// hostGSO is the GSO a route's link offers, with the payload one packet may
// carry: its IP header and a TCP header of any options must fit in the
// link's size and in the 16-bit length fields. A route that loops packets
// back to this stack gets none: its receiver would see the packet whole.
func hostGSO(r *stack.Route) (stack.GSO, int) {
	if !r.HasHostGSOCapability() || r.GSOMaxSize() == 0 || r.Loop()&stack.PacketLoop != 0 {
		return stack.GSO{}, 0
	}
	g := stack.GSO{NeedsCsum: true, CsumOffset: header.TCPChecksumOffset, MaxSize: r.GSOMaxSize()}
	switch r.NetProto() {
	case header.IPv4ProtocolNumber:
		g.Type, g.L3HdrLen = stack.GSOTCPv4, header.IPv4MinimumSize
	case header.IPv6ProtocolNumber:
		g.Type, g.L3HdrLen = stack.GSOTCPv6, header.IPv6MinimumSize
	default:
		return stack.GSO{}, 0
	}
	room := int(min(g.MaxSize, 0xffff)) - int(g.L3HdrLen) - header.TCPHeaderMaximumSize
	if room <= 0 {
		return stack.GSO{}, 0
	}
	return g, room
}

// runJoin adds the new segment [start, end) of n payload bytes, built with
// ack, wnd and opts, to the run, first writing out the run it cannot join;
// false means the segment must be built alone. noDF is the segment's
// mayFragment.
func (e *endpoint) runJoin(start, end uint64, fin bool, n int, ack uint32, wnd uint16, opts []byte, noDF bool, now time.Duration) bool {
	pa := e.pathOf()
	// control:tcp-gso-never-used
	if pa.gso.Type == stack.GSONone || n == 0 || noDF || n > pa.gsoBytes {
		return false
	}
	r := &e.run
	if r.segs > 0 && (start != r.end || r.fin || r.last != r.mss || n > r.mss || r.payload+n > pa.gsoBytes ||
		ack != r.ack || wnd != r.wnd || !bytes.Equal(opts, r.opts[:r.optLen])) {
		e.flushRun()
	}
	if r.segs == 0 {
		r.start, r.mss, r.ack, r.wnd = start, n, ack, wnd
		r.optLen = copy(r.opts[:], opts)
		r.reuse, r.now, r.rcvNxt = e.dsack == nil, now, e.rcvNxt
	}
	r.end, r.fin, r.last = end, fin, n
	r.payload += n
	r.segs++
	return true
}

// runExtend adds the new full segment [start, end) of n payload bytes to
// the run under way without building its headers, which would equal the
// run's: the segment after a full one of the same size, in the same
// opportunity (the same clock reading, and e.mu held throughout, so RCV.NXT,
// TS.Recent, the receive queue, the advertised edge and the SACK blocks are
// as they were), once the run's first segment has carried no D-SACK (the
// one field that segment's ACK clears). It keeps the per-segment rules of
// the loop around it (windows, pacing, the retransmission queue): only the
// building of a header the run already has is skipped. False means the
// segment is built as before (sendData).
func (e *endpoint) runExtend(start, end uint64, fin bool, n int, now time.Duration) bool {
	r := &e.run
	// control:tcp-gso-headers-per-segment
	if r.segs == 0 || !r.reuse || r.now != now || r.rcvNxt != e.rcvNxt {
		return false
	}
	if start != r.end || r.fin || n != r.mss || r.last != r.mss || r.payload+n > e.pathOf().gsoBytes {
		return false
	}
	r.end, r.fin, r.last = end, fin, n
	r.payload += n
	r.extended += n
	r.segs++
	return true
}

// flushRun builds the run's packet and puts it in the outbox: a GSO packet,
// or a plain segment when the run has one.
func (e *endpoint) flushRun() {
	r := e.run
	if r.segs == 0 {
		return
	}
	e.run = gsoRun{}
	// control:tcp-gso-extended-bytes-uncounted
	e.p.st.sentBytes.Add(uint64(r.extended))
	flags := header.TCPFlagAck
	if r.fin {
		flags |= header.TCPFlagFin | e.pushFlag(r.end-1)
	} else {
		flags |= e.pushFlag(r.end)
	}
	pa := e.pathOf()
	var g stack.GSO
	if r.segs > 1 {
		g = pa.gso
		g.MSS = uint16(r.mss)
		e.p.st.gsoPackets.Inc()
		e.p.st.gsoSegments.Add(uint64(r.segs))
		e.outExtra += r.segs - 1
	}
	payload := e.sbuf.Clone(r.start-1, r.payload) // shares the queue's bytes: no copy
	pkt := e.p.buildGSO(pa, e.id.LocalPort, e.id.RemotePort, wire(e.iss, r.start), r.ack, flags, r.wnd, r.opts[:r.optLen], payload, g)
	e.outbox = append(e.outbox, outSeg{pkt: pkt, start: r.start, end: r.end, newData: true, payload: r.payload,
		priorNxt: r.start, segs: r.segs})
}

// deferOutput reports whether an inbound segment's send opportunity is left
// to the goroutine writing the outbox, which runs it once its write
// returns: on a link that segments, ACKs that arrive during one write (a
// synchronous link delivers the peer's answers from inside it) then open
// one opportunity, whose segments leave as one run, instead of one
// opportunity of a segment or two each. The windows, pacing and Nagle judge
// that opportunity as they would have judged the first of them.
func (e *endpoint) deferOutput() bool {
	if !e.flushing || e.pathOf().gso.Type == stack.GSONone {
		return false
	}
	e.outputLater = true
	return true
}

// paceGrain is the shortest wait the pacer is asked to keep on a route
// with GSO: what the pacing rate sends in it may leave as one burst.
const paceGrain = 10 * time.Microsecond

// gsoBurst is the pacer's burst, burst bytes, on this route at rate bytes
// per second: on a route with GSO, at least what the rate sends in
// paceGrain, up to one GSO packet (with its segments' headers).
//
// Departure from the rule above that every segment is paced as without
// offload. A GSO packet leaves the NIC as a back-to-back train of frames
// however the pacer spaced the segments it holds, so a burst shorter than
// the packet spaces nothing: it only cuts the packet short and sends the rest
// after a wait of nanoseconds (osbench cpu over a TSO link: the clock-paced
// burst of ten segments at 88 GB/s ended each opportunity on a 20 ns wait,
// and GSO packets held nine segments instead of 45). It is safe: it changes
// nothing below a pacing rate of about 1.5 GB/s (ten segments in 10 µs),
// so no path the pacer's bursts were tuned on; above it the burst is at most
// 10 µs of the pacing rate, far less than Linux allows (tcp_tso_autosize
// sizes a TSO packet at 1 ms of the pacing rate).
func (e *endpoint) gsoBurst(rate float64, burst int) int {
	pa := e.pathOf()
	// control:tcp-gso-pacing-burst-segments
	if pa.gsoBytes == 0 || rate <= 0 {
		return burst
	}
	grain := rate * paceGrain.Seconds()
	return max(burst, int(min(grain, float64(e.paceBytes(pa.gsoBytes)))))
}

// corkTail reports whether the new data left, avail bytes, which the peer's
// window (wndRoom bytes) would take whole, waits for the application's next
// write instead of leaving short of one full packet: on a route with GSO,
// the full smss-byte segments one GSO packet holds; without, one smss-byte
// segment. It notes the hold for endWrite.
//
// Departure from the rule above that only the packet changes with offload,
// and from sending what Nagle (RFC 9293 §3.7.4) lets go: like Linux's
// autocorking (tcp_should_autocork: a write's last, partial packet waits
// while earlier packets of the socket are still in the host's queues), data
// short of a full packet waits while the application is in Write and a packet
// of ours is ahead of it: a full run being built, or the outbox being
// written, during which a synchronous link hands back the ACK of everything
// sent. Without it, each 64 KB write (45 segments and 376 bytes) left as a
// GSO packet and a runt, which Nagle held only until that ACK, inside the
// same write: two packets and two ACKs a write where one and one carry it
// (osbench cpu over TSO and GRO). On a route without GSO the runt was the
// same, a 46th segment and its ACK a write (the receiver ACKs a short segment
// at once): osbench cpu -tso off at one core, 15 of 765 packets per MB at MTU
// 1500 and 15 of 141 at 9000 were runts, 10.9 and 9.3 per MB the ACKs for
// them (with the tail corked and the 64 KB ACK cap, coalesce.go: 719 and 126
// packets per MB, gVisor's 726 and 125). It is safe: the application's next
// write sends the tail with its own data, a FIN or TCP_NODELAY is never held,
// a window- or cwnd-limited send is never held, and when the write that held
// it returns the pacing timer is set to fire at once (endWrite), so the tail
// leaves as soon as the clock runs it if no write comes. Where the link only
// queues a write (nic/wire's virtual time) no ACK comes back inside it, so
// Nagle holds the tail behind the data in flight as before and nothing
// changes.
func (e *endpoint) corkTail(avail, wndRoom, smss uint64) bool {
	// control:tcp-gso-tail-never-corked
	if !e.inWrite || e.nodelay || e.finQueued || e.probe || avail > wndRoom || smss == 0 {
		return false
	}
	pa := e.pathOf()
	r := &e.run
	if r.segs > 0 && r.payload+int(smss) <= pa.gsoBytes {
		return false // the run under way is completed first
	}
	if !e.flushing && r.segs == 0 && len(e.outbox) == 0 {
		return false // nothing of ours ahead: a lone write leaves at once
	}
	full := smss // one segment on a route without GSO
	// control:tcp-tail-corked-only-on-gso
	if pa.gsoBytes > 0 {
		full = uint64(pa.gsoBytes) / smss * smss
	}
	if avail >= full {
		return false
	}
	e.tailCorked = true
	return true
}

// endWrite ends the application's Write once its flush is done, and sets
// the pacing timer to fire at once if corkTail held data for a next write
// that may not come.
func (e *endpoint) endWrite() {
	e.inWrite = false
	if e.tailCorked {
		e.tailCorked = false
		e.tPace.arm(0)
	}
}
