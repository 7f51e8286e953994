// Data receive: in-order and out-of-order data, the application's reads, and
// the receive window offered to the peer.

package tcp

import (
	"io"
	"time"

	"gvisor.dev/gvisor/pkg/buffer"
	"gvisor.dev/gvisor/pkg/tcpip"
	"gvisor.dev/gvisor/pkg/tcpip/header"

	"github.com/netramp/netramp/tcp/internal/reasm"
)

// receive takes the in-window part of a segment's data, where it lies in
// the packet, and its FIN.
func (e *endpoint) receive(segOff uint64, data span, fin bool, now time.Duration) {
	if e.rdShut && e.userClosed {
		// Data for a closed socket has no reader: RFC 9293 §3.10.4 (CLOSE
		// with data pending) is answered by a reset.
		if data.n > 0 {
			e.resetLocked(&tcpip.ErrConnectionAborted{})
			return
		}
	}
	dataOff, data, fin := e.trimToWindow(segOff, data, fin)
	if fin {
		e.finPending = true
		e.finOff = dataOff + uint64(data.n)
	}
	switch {
	case data.n == 0:
	case dataOff == e.rcvNxt:
		e.receiveInOrder(data)
	default:
		e.storeOutOfOrder(dataOff, data)
		e.owe(ackOutOfOrder) // out of order: ACK at once with SACK (RFC 5681 §4.2)
	}
	if e.finPending && e.finOff == e.rcvNxt {
		e.takeFin()
	}
	if e.ackCount >= e.p.opts.StretchAck || e.p.opts.DelayedAck < 0 {
		// An aggregate may pass the count: what it passes by stays
		// counted, as segments arriving one by one would have left it.
		e.ackCount %= e.p.opts.StretchAck
		e.owe(ackEverySecond)
	}
}

// segmentsIn is how many segments n in-order bytes stand for: one per
// full-sized segment begun, so an aggregate a receiver's GRO (or a link's
// receive offload) built of several counts as those several toward the
// every-second-segment ACK (RFC 5681 §4.2) and is ACKed at once, as its
// segments would have been, never left to the delayed-ACK timer. A full
// segment is taken to be SMSS: both ends derive it from the smaller of the
// two announced MSS less the same options, so it is the peer's full segment
// too. Where the peer's segments are smaller (its route's MTU), an aggregate
// counts as fewer than it was cut from, but still as two or more whenever it
// holds more than SMSS, so it is ACKed at once all the same: like Linux's
// GRO receiver (one ACK per aggregate of more than one MSS) rather than RFC
// 5681's count of segments, which an aggregate no longer shows; the sender
// meets the same stretch ACK it meets under ACK coalescing
// (wholeSegmentCredit).
func (e *endpoint) segmentsIn(n int) int {
	// control:tcp-aggregate-counts-as-one
	return max((n+e.smss-1)/max(e.smss, 1), 1)
}

// trimToWindow cuts what lies below RCV.NXT (a duplicate, reported as
// D-SACK, RFC 2883) and beyond the offered edge (with the FIN it carried).
func (e *endpoint) trimToWindow(segOff uint64, data span, fin bool) (uint64, span, bool) {
	dataOff := segOff
	if data.n > 0 && dataOff < e.rcvNxt {
		cut := e.rcvNxt - dataOff
		if e.sackOK {
			e.dsack = &reasm.Range{Start: dataOff, End: e.rcvNxt}
		}
		e.owe(ackDuplicate)
		data = data.cut(int(min(cut, uint64(data.n))), data.n)
		dataOff = e.rcvNxt
	}
	if end := dataOff + uint64(data.n); end > e.rcvAdv {
		keep := uint64(0)
		if e.rcvAdv > dataOff {
			keep = e.rcvAdv - dataOff
		}
		data = data.cut(0, int(keep))
		fin = false
	}
	return dataOff, data, fin
}

// storeOutOfOrder copies data, the bytes at dataOff, into the out-of-order
// store, view by view (one Insert per view joins into one range), counting
// what it refuses.
func (e *endpoint) storeOutOfOrder(dataOff uint64, data span) {
	at, stored, full := dataOff, 0, false
	data.each(func(_ *buffer.View, _ int, b []byte) {
		if full {
			return
		}
		k, err := e.ooo.Insert(at, b)
		stored += k
		at += uint64(len(b))
		full = err != nil || k < len(b)
	})
	if full {
		e.p.st.dropOOOFull.Add(uint64(data.n - stored))
	}
}

// receiveInOrder queues data at RCV.NXT, pulls in what the out-of-order
// store now joins, and counts it toward the next ACK.
func (e *endpoint) receiveInOrder(data span) {
	if free := e.rcvRoom(); data.n > free {
		// Cannot happen while the window is honoured (the queue
		// holds the whole advertised window); keep what fits and
		// let the rest be retransmitted rather than lose it.
		e.p.st.dropOOOFull.Add(uint64(data.n - free))
		data = data.cut(0, free)
	}
	hadHoles := !e.ooo.Empty()
	e.keepRcv(data)
	e.rcvNxt += uint64(data.n)
	if hadHoles {
		e.rcvNxt = e.ooo.Take(e.rcvNxt, e.appendRcv)
		e.owe(ackHoleFilled) // a hole filled: ACK at once (RFC 5681 §4.2)
	}
	// The every-second-segment count runs over the segments as they come,
	// not since the last ACK: an ACK sent out of turn (a short segment's, a
	// window update, data) leaves it where it was, so a flight's ACKs still
	// fall on every second segment and a flight of even length is ACKed to
	// its end at once. Restarting the count there shifted every later pair
	// by one and left each flight's last segment to the delayed-ACK timer:
	// osbench's hello did so in the first flight, an autotuning window
	// update in later ones, and at 100 ms a round's last ACK came 40 ms late.
	segs := e.segmentsIn(data.n)
	e.rxAggregate = segs > 1
	e.ackPending += segs
	// control:tcp-ack-count-restarts-out-of-turn
	e.ackCount += segs
	if data.n < e.smss && data.n < e.ourMSS()-40 {
		// Short segments are not delayed past the peer's Nagle.
		e.owe(ackShort)
	}
	e.notify |= waiterReadable
}

// takeFin consumes the peer's FIN once every byte before it is in
// (RFC 9293 §3.10.7.4, eighth step).
func (e *endpoint) takeFin() {
	e.finPending = false
	e.finRcvd = true
	e.rcvNxt++
	e.owe(ackFin)
	e.notify |= waiterReadable | waiterHUpIfDone
	switch e.state {
	case StateEstablished:
		e.state = StateCloseWait
	case StateFinWait1:
		e.state = StateClosing
	case StateFinWait2:
		e.enterTimeWait()
	}
}

// measureRcvRTT keeps the receiver's round-trip estimate for autotuning:
// from the timestamp echo when timestamps are on (RFC 7323 §4.1), else the
// time one advertised window takes to arrive.
func (e *endpoint) measureRcvRTT(opts *header.TCPOptions, now time.Duration) {
	if e.tsOK && opts.TS && opts.TSEcr != 0 {
		if ms := int32(e.tsAt(now) - opts.TSEcr); ms >= 0 && ms < 600000 {
			e.rcvRTT.OnTimestampSample(time.Duration(ms)*time.Millisecond + time.Millisecond/2)
		}
		return
	}
	e.rcvRTT.OnData(now, e.rcvNxt, e.rcvAdv)
}

// rttForTuning is the round trip autotuning measures reads over.
func (e *endpoint) rttForTuning() time.Duration {
	if e.est.HasSample() {
		return e.est.SRTT()
	}
	return e.rcvRTT.RTT() // control:rcv-rtt
}

// rcvRoom is what the receive queue may still take: the buffer and its spare
// for the rounding of the scaled window (rcvSpare).
func (e *endpoint) rcvRoom() int { return max(e.rcvBuf+e.rcvSpare(e.rcvBuf)-e.rcvq.Len(), 0) }

// appendRcv copies in-order bytes into the receive queue.
func (e *endpoint) appendRcv(p []byte) {
	if free := e.rcvRoom(); len(p) > free {
		// Cannot happen while the window is honoured; refuse rather
		// than grow past the buffer.
		e.p.st.dropOOOFull.Add(uint64(len(p) - free))
		p = p[:free]
	}
	e.rcvq.Append(p)
}

// keepRcv queues in-order bytes (at most rcvRoom) by keeping a clone of each
// link view that holds them: no byte is copied, however many views an
// aggregate spans. The queue copies rather than keeps once its views would
// pin more than twice the room plus two chunks (rcvbuf's truesize bound).
func (e *endpoint) keepRcv(data span) {
	// control:rcv-aggregate-staged
	limit := 2*(e.rcvBuf+e.rcvSpare(e.rcvBuf)) + 2*buffer.MaxChunkSize
	data.each(func(v *buffer.View, off int, b []byte) {
		c := v.Clone()
		c.TrimFront(off)
		// control:soak-corrupt-byte
		c.CapLength(len(b))
		// control:rcv-pulled-up
		e.rcvq.AppendView(c, limit)
	})
}

// unreadable is why a read finds nothing to take, nil when the receive
// queue holds bytes. e.mu is held.
func (e *endpoint) unreadable() tcpip.Error {
	switch e.state {
	case StateInitial, StateBound, StateListen:
		return &tcpip.ErrNotConnected{}
	case StateSynSent, StateSynRcvd:
		return &tcpip.ErrWouldBlock{}
	}
	if e.rcvq.Len() > 0 {
		return nil
	}
	switch {
	case e.finRcvd || e.rdShut:
		return &tcpip.ErrClosedForReceive{}
	case e.state == StateClosed && e.hardErr != nil:
		return e.hardErr
	case e.state == StateClosed:
		return &tcpip.ErrClosedForReceive{}
	}
	return &tcpip.ErrWouldBlock{}
}

// ReadViews takes up to max bytes of in-order data off the receive queue as
// the queue's own views, appended to dst: nothing is copied, and the caller
// owns the views (it releases each). The bytes count as read once taken:
// the window opens as after Read. It fails as Read does when there is
// nothing to take.
func (e *endpoint) ReadViews(dst []*buffer.View, max int) ([]*buffer.View, int, tcpip.Error) {
	if max <= 0 {
		return dst, 0, nil
	}
	e.mu.Lock()
	if err := e.unreadable(); err != nil {
		e.mu.Unlock()
		return dst, 0, err
	}
	dst, n := e.rcvq.TakeTo(dst, max)
	e.afterRead(n)
	e.unlock()
	return dst, n, nil
}

// Read implements tcpip.Endpoint.
func (e *endpoint) Read(w io.Writer, opts tcpip.ReadOptions) (tcpip.ReadResult, tcpip.Error) {
	e.mu.Lock()
	if err := e.unreadable(); err != nil {
		e.mu.Unlock()
		return tcpip.ReadResult{}, err
	}
	n, _ := e.rcvq.CopyTo(w)
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
// a window update when the window has opened enough to matter: it at least
// doubles the window the peer last saw and opens it by updateStep.
func (e *endpoint) consumed(n int) {
	e.rcvq.Consume(n)
	e.afterRead(n)
}

// afterRead is what n bytes leaving the receive queue for the application
// set off: autotuning and the window update.
func (e *endpoint) afterRead(n int) {
	if !e.state.synchronized() {
		return
	}
	// A clock read per read was 1.7% of the CPU of a bulk receive at MTU
	// 9000 (osbench cpu, 8 KB reads); once the buffer is at its cap the
	// tuner has nothing left to decide.
	if !e.tuner.Done() {
		if nb, changed := e.tuner.OnRead(e.now(), n, e.rttForTuning()); changed && nb > e.rcvBuf {
			e.growRcv(nb)
		}
	}
	old := e.rcvAdv - e.rcvNxt
	free := uint64(max(e.rcvBuf-e.rcvq.Len(), 0))
	if maxW := uint64(0xffff) << e.rcvWS; free > maxW {
		free = maxW
	}
	if !e.finRcvd && free >= 2*old && free-old >= e.updateStep() {
		e.sendAck(ackWindow)
	}
}

// updateStep is how far a read must open the window before the opening is
// worth an ACK of its own: two full segments, or a sixteenth of the buffer if
// that is more, and at most half the buffer. Stricter than receiver SWS
// avoidance's min(RCV.BUFF/2, MSS) (RFC 9293 §3.8.6.2.2), which still sets
// how far every ACK moves the edge: this only sends fewer updates alone. At
// one MSS a reader that kept the window shut sent an update for every MSS or
// so it read, each releasing about one segment (osbench cpu, MTU 9000, 8 KB
// reads: one per 16 KB, a quarter of the receiver's ACKs); at two segments,
// one for each 8 KB read, each releasing one small GSO packet (osbench cpu
// over TSO and GRO: 49 updates per MB, a buffer of 6 MiB left shut by a
// reader that had all but 8 KB of it still to read). A sixteenth is Linux's
// rule (__tcp_select_window offers no window under a sixteenth of the space
// once the buffer is half full). A smaller opening is not lost to the
// sender: the next ACK, or the answer to its zero-window probe, offers it,
// and the reader, which left the window shut, still has fifteen sixteenths
// of the buffer to read while the update's data arrives.
func (e *endpoint) updateStep() uint64 {
	// control:tcp-window-update-per-mss
	// control:tcp-window-update-per-read
	return uint64(min(max(2*e.smss, e.rcvBuf/16), e.rcvBuf/2))
}

// growRcv enlarges the receive buffer (autotuning never shrinks it, so the
// window never has to shrink) and the out-of-order store with it. Both are
// bounds, not allocations: the queues take memory as bytes arrive and give
// it back as they are read.
func (e *endpoint) growRcv(nb int) {
	e.rcvBuf = nb
	e.ooo.SetLimit(nb + e.rcvSpare(nb))
	// One range per hole: the range bound must follow the window too.
	e.ooo.SetMaxRanges(reasm.DefaultMaxRanges(nb + e.rcvSpare(nb))) // control:ooo-ranges-grow
}

// rcvSpare is what the receive queue and the out-of-order store hold beyond
// a buffer of buf bytes: the rounding of rcvWindow. With a scale, one unit,
// and a sixteenth of the buffer for the creep that keeping the edge still
// costs while the reader lags (at most one unit per ACK that moves RCV.NXT).
func (e *endpoint) rcvSpare(buf int) int {
	if e.rcvWS == 0 {
		return 1
	}
	return 1<<e.rcvWS + buf/16
}

// rcvWindow returns the window field to send and moves the advertised right
// edge, which never moves left (RFC 9293 §3.8.6, SHLD-14) and moves right
// only by at least min(buffer/2, MSS) (receiver SWS avoidance, §3.8.6.2.2).
func (e *endpoint) rcvWindow() uint16 {
	free := e.rcvBuf - e.rcvq.Len()
	if free < 0 {
		free = 0
	}
	maxWnd := 0xffff << e.rcvWS
	if free > maxWnd {
		free = maxWnd
	}
	right := e.rcvNxt + uint64(free)
	step := uint64(e.rcvBuf / 2)
	if m := uint64(e.ourMSS()); m < step {
		step = m
	}
	if right > e.rcvPromise && (right-e.rcvPromise >= step || e.rcvPromise <= e.rcvNxt+step) {
		e.rcvPromise = right
	}
	if e.rcvPromise < e.rcvNxt {
		e.rcvPromise = e.rcvNxt
	}
	return e.scaleWindow(max(e.rcvPromise, e.rcvAdv)) // control:edge-never-left
}

// scaleWindow offers the first edge at or past target that the scaled field
// can express. That edge is RCV.NXT plus whole units, so as RCV.NXT moves by
// other amounts it creeps past the promise by under a unit per ACK; the
// queue's spare holds the creep (rcvSpare).
func (e *endpoint) scaleWindow(target uint64) uint16 {
	unit := uint64(1) << e.rcvWS
	scaled := (target - e.rcvNxt + unit - 1) >> e.rcvWS
	// Departure from SHLD-14, counted: once the spare is spent (a reader that
	// left the buffer full under a coarse scale) the edge falls back by under
	// a unit rather than promise bytes the queue cannot hold; the peer sends
	// nothing it would have to retransmit, and RFC 7323 §2.4 expects senders
	// to meet such retreats.
	room := e.rcvNxt + uint64(e.rcvRoom())
	if e.ooo != nil && e.rcvNxt+scaled<<e.rcvWS > room {
		scaled = (room - e.rcvNxt) >> e.rcvWS
		e.p.st.rcvEdgeRetreats.Inc()
	}
	if scaled > 0xffff {
		scaled = 0xffff
	}
	if edge := e.rcvNxt + scaled<<e.rcvWS; edge > e.rcvAdv {
		e.rcvAdv = edge
	}
	return uint16(scaled)
}
