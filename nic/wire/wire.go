// Package wire is an emulated network path between two gVisor link
// endpoints: per direction a TX ring with credit, a bottleneck with a
// drop-tail queue, propagation delay, jitter, loss (random and in bursts),
// duplication, corruption, blackouts and ACK aggregation; and, at the
// receiving end, optionally its card's poll and GRO (gro.go, poll.go).
//
// A frame written to an endpoint takes a TX ring slot, is serialised by the
// card (which frees the slot), passes the ACK aggregator, enters the
// bottleneck's drop-tail queue, is serialised at the bottleneck rate, meets
// blackout, loss, burst loss, corruption and duplication in that order, and
// arrives after the propagation delay plus jitter: it is then handed to the
// far stack, or, with Dir.GRO, waits on the far card for its next poll.
//
// Everything the wire does happens in callbacks of the tcpip.Clock it is
// given. With a *vclock.Clock a run is deterministic: the same Config and Seed
// give the same frame trace (TraceHash). With tcpip.NewStdClock() the same
// wire runs in real time; callbacks then come from timer goroutines, so the
// wire locks its state and calls into the stacks only with no lock held.
package wire

import (
	"container/heap"
	"crypto/sha256"
	"encoding/binary"
	"hash"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"gvisor.dev/gvisor/pkg/buffer"
	"gvisor.dev/gvisor/pkg/tcpip"
	"gvisor.dev/gvisor/pkg/tcpip/header"
	"gvisor.dev/gvisor/pkg/tcpip/stack"
)

// Side names an end of the wire.
type Side int

const (
	SideA Side = iota
	SideB
)

func (s Side) String() string {
	if s == SideA {
		return "A"
	}
	return "B"
}

// Wire is a path between two endpoints, A and B.
type Wire struct {
	clk   tcpip.Clock
	start tcpip.MonotonicTime
	mtu   uint32

	mu       sync.Mutex
	dirs     [2]*direction // a2b, b2a
	eps      [2]*Endpoint
	events   eventHeap
	seq      uint64
	timer    tcpip.Timer
	armed    bool
	armAt    time.Duration
	inFire   bool // fire is running its loop: it arms the timer once at the end
	trace    hash.Hash
	traceHdr [14]byte
	hook     func(TraceEvent)
	pcaps    [2]*pcapWriter

	// The out queue: deliveries and credit waiters in the order the events
	// produced them, run by one goroutine at a time (runOutLocked).
	outq     []work
	outHead  int
	draining bool

	rt      *releaser // nil in virtual time
	freeEvs []*event  // recycled events
	bufs    [][]byte  // recycled frame buffers of MTU capacity

	// Real time (ingress.go): frame buffers, and the releaser's scratch
	// for the frames it takes from an ingress queue.
	rtBufs    sync.Pool
	inScratch []rxFrame
}

// New builds a wire on clk. It returns an error wrapping ErrBadConfig,
// naming the field, if cfg is invalid.
func New(clk tcpip.Clock, cfg Config) (*Wire, error) {
	if clk == nil {
		return nil, errorf("clock is nil")
	}
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	mtu := cfg.MTU
	if mtu == 0 {
		mtu = DefaultMTU
	}
	w := &Wire{clk: clk, start: clk.NowMonotonic(), mtu: mtu}
	if !cfg.NoTraceHash {
		w.trace = sha256.New()
	}
	rtt := cfg.AtoB.Delay + cfg.BtoA.Delay
	for i, d := range []Dir{cfg.AtoB, cfg.BtoA} {
		w.dirs[i] = newDirection(w, i, d, rtt, mtu, uint64(cfg.Seed))
	}
	w.eps[0] = &Endpoint{w: w, side: SideA, out: w.dirs[0], mtu: mtu}
	w.eps[1] = &Endpoint{w: w, side: SideB, out: w.dirs[1], mtu: mtu}
	w.dirs[0].to, w.dirs[1].to = w.eps[1], w.eps[0]
	w.dirs[0].reverse, w.dirs[1].reverse = w.dirs[1], w.dirs[0]
	return w, nil
}

// Close stops the wire: pending events are discarded (frames in flight are
// lost, uncounted), the timer is stopped and both endpoints refuse writes.
// In real time a callback already running may still deliver its frames.
func (w *Wire) Close() {
	for _, ep := range w.eps {
		ep.Close()
	}
	w.mu.Lock()
	w.events = nil
	w.outq, w.outHead = nil, 0
	if w.timer != nil {
		w.timer.Stop()
	}
	if w.rt != nil {
		w.rt.close()
	}
	w.armed = false
	for _, d := range w.dirs {
		d.held = nil
		d.waiters = nil
		d.rxRing, d.pollArmed = nil, false
	}
	w.mu.Unlock()
}

// A returns the endpoint at side A; frames it writes travel AtoB.
func (w *Wire) A() *Endpoint { return w.eps[0] }

// B returns the endpoint at side B; frames it writes travel BtoA.
func (w *Wire) B() *Endpoint { return w.eps[1] }

// Stats returns both directions' counts.
func (w *Wire) Stats() (aToB, bToA DirStats) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, d := range w.dirs {
		d.stats.Lateness = d.late.summary()
		if w.rt != nil {
			d.stats.Lateness.SchedFIFO = w.rt.fifo
			d.stats.Lateness.Spins = w.rt.spins
			d.stats.Lateness.Batches = w.rt.batches
			d.stats.Lateness.Yields = w.rt.yields
		}
	}
	return w.dirs[0].stats, w.dirs[1].stats
}

// now is the wire time: how long since New, on the wire's clock.
func (w *Wire) now() time.Duration {
	return w.clk.NowMonotonic().Sub(w.start)
}

// event is one thing the wire does at a given time.
type event struct {
	at    time.Duration
	seq   uint64
	kind  eventKind
	dir   *direction
	frame []byte
	gen   uint64 // hold generation for evHoldExpire
}

type eventKind uint8

const (
	evCardDone   eventKind = iota // the card has serialised a frame: free its slot, admit it to the path
	evSlotFree                    // free a slot (a card with no line rate)
	evDeliver                     // the frame reaches the far endpoint
	evHoldExpire                  // held ACKs have waited AckAggHold
	evNotify                      // run credit waiters registered with nothing in the ring
	evGapCheck                    // the data direction may have been idle for AckAggGap
	evPoll                        // the receiving card polls (GRO.Poll)
)

type eventHeap []*event

func (h eventHeap) Len() int { return len(h) }
func (h eventHeap) Less(i, j int) bool {
	if h[i].at != h[j].at {
		return h[i].at < h[j].at
	}
	return h[i].seq < h[j].seq
}
func (h eventHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *eventHeap) Push(x any)   { *h = append(*h, x.(*event)) }
func (h *eventHeap) Pop() any {
	old := *h
	n := len(old)
	e := old[n-1]
	old[n-1] = nil
	*h = old[:n-1]
	return e
}

// eventLocked returns a recycled event set to the given fields: the
// per-frame path allocates no event.
func (w *Wire) eventLocked(at time.Duration, kind eventKind, d *direction, frame []byte) *event {
	var ev *event
	if n := len(w.freeEvs); n > 0 {
		ev = w.freeEvs[n-1]
		w.freeEvs = w.freeEvs[:n-1]
	} else {
		ev = new(event)
	}
	*ev = event{at: at, kind: kind, dir: d, frame: frame}
	return ev
}

// getBufLocked returns a buffer of length n, recycled when n fits the MTU.
func (w *Wire) getBufLocked(n int) []byte {
	if w.rt != nil {
		return w.rtBuf(n)
	}
	if k := len(w.bufs); k > 0 && n <= int(w.mtu) {
		b := w.bufs[k-1]
		w.bufs = w.bufs[:k-1]
		return b[:n]
	}
	return make([]byte, n, max(n, int(w.mtu)))
}

// putBufLocked recycles a frame the wire is done with (delivered or
// dropped); nothing may hold it afterwards.
func (w *Wire) putBufLocked(b []byte) {
	if w.rt != nil {
		w.rtPut(b)
		return
	}
	if cap(b) >= int(w.mtu) && len(w.bufs) < 1<<13 {
		w.bufs = append(w.bufs, b[:0])
	}
}

// pushLocked queues ev and makes sure the clock will call fire by its time.
func (w *Wire) pushLocked(ev *event, now time.Duration) {
	ev.seq = w.seq
	w.seq++
	heap.Push(&w.events, ev)
	if !w.inFire && (!w.armed || ev.at < w.armAt) {
		w.armLocked(ev.at, now)
	}
}

func (w *Wire) armLocked(at, now time.Duration) {
	if w.rt != nil {
		w.armed, w.armAt = true, at
		w.rt.poke()
		return
	}
	d := at - now
	if d < 0 {
		d = 0
	}
	if w.timer == nil {
		w.timer = w.clk.AfterFunc(d, w.fire)
	} else {
		w.timer.Stop()
		w.timer.Reset(d)
	}
	w.armed, w.armAt = true, at
}

// fire runs every event due, queues the deliveries and credit waiters they
// produce, and runs that queue with no lock held.
func (w *Wire) fire() {
	w.mu.Lock()
	w.armed, w.inFire = false, true
	if w.rt != nil {
		w.rt.batches++
	}
	now := w.now()
	var waiters []func()
	for len(w.events) > 0 && w.events[0].at <= now {
		ev := heap.Pop(&w.events).(*event)
		d := ev.dir
		switch ev.kind {
		case evCardDone:
			if d.cfg.TxRing > 0 {
				d.slotFreedLocked()
				waiters = d.takeWaitersLocked(waiters)
			}
			d.admitLocked(ev.frame, ev.at)
		case evSlotFree:
			d.slotFreedLocked()
			waiters = d.takeWaitersLocked(waiters)
		case evNotify:
			waiters = d.takeWaitersLocked(waiters)
		case evHoldExpire:
			if ev.gen == d.holdGen && len(d.held) > 0 {
				d.releaseLocked(ev.at)
			}
		case evGapCheck:
			d.gapCheckLocked(ev.at)
		case evDeliver:
			if d.cfg.GRO.Poll > 0 {
				d.arriveLocked(ev.frame, ev.at)
				break
			}
			w.outq = append(w.outq, work{dir: d, frame: ev.frame, at: ev.at})
		case evPoll:
			if p := d.pollLocked(ev.at); len(p) > 0 {
				w.outq = append(w.outq, work{dir: d, poll: p, at: ev.at})
			}
		}
		*ev = event{}
		w.freeEvs = append(w.freeEvs, ev)
	}
	for _, f := range waiters {
		w.outq = append(w.outq, work{f: f})
	}
	w.inFire = false
	if len(w.events) > 0 {
		w.armLocked(w.events[0].at, now)
	}
	w.runOutLocked()
}

// work is a delivery (dir set, of one frame or of a poll's frames) or a
// credit waiter (f set), run outside the lock.
type work struct {
	dir   *direction
	frame []byte
	poll  [][]byte
	at    time.Duration
	f     func()
}

// runOutLocked runs the out queue in order, releasing the lock around each
// call into a stack. In real time two timer callbacks can overlap: the one
// already draining delivers what the other queued, so frames are never handed
// over out of order; a callback that drives the clock from inside a delivery
// only queues. It returns with the lock released.
func (w *Wire) runOutLocked() {
	if w.draining {
		w.mu.Unlock()
		return
	}
	w.draining = true
	for w.outHead < len(w.outq) {
		it := w.outq[w.outHead]
		w.outq[w.outHead] = work{}
		w.outHead++
		if it.f != nil {
			w.mu.Unlock()
			it.f()
			w.mu.Lock()
			continue
		}
		if it.poll != nil {
			w.deliverPollLocked(it)
			continue
		}
		w.deliverLocked(it)
	}
	w.outq, w.outHead = w.outq[:0], 0
	w.draining = false
	w.mu.Unlock()
}

// deliverLocked hands one frame to its endpoint's stack, unlocking around the
// call, and counts data segments for ACK aggregation in the reverse
// direction.
func (w *Wire) deliverLocked(it work) {
	d := it.dir
	disp, sink := d.to.receivers()
	if disp == nil && sink == nil {
		d.stats.DropDetached++
		d.ctr.add(&d.ctr.dropDetached, 1)
		w.traceLocked(it.at, d, TraceDropDetached, it.frame)
		w.putBufLocked(it.frame)
		return
	}
	if w.rt != nil {
		d.late.record(w.now() - it.at)
	}
	d.stats.DeliveredFrames++
	d.stats.DeliveredBytes += uint64(len(it.frame))
	d.ctr.add(&d.ctr.deliveredFrames, 1)
	d.ctr.add(&d.ctr.deliveredBytes, uint64(len(it.frame)))
	w.traceLocked(it.at, d, TraceDeliver, it.frame)
	w.pcapLocked(d.to.side, it.frame)
	// The burst a data segment belongs to is under way before the peer
	// answers it: an ACK it triggers must not pass as after an idle gap.
	// Read before the frame is queued: from then on the input goroutine
	// owns it, and recycles it once delivered.
	isData := false
	r := d.reverse
	// control:wire-rt-frame-read-after-handover
	if r.cfg.AckAggSegments > 0 {
		isData = classify(it.frame).data
	}
	// Real time: the endpoint's input goroutine takes it from here, to its
	// stack or its sink.
	// control:wire-stack-input-on-releaser
	queued := d.to.rx != nil
	if queued && !d.to.rx.put(it.frame, w.now()) {
		d.stats.DropInput++
		d.ctr.add(&d.ctr.dropInput, 1)
		w.putBufLocked(it.frame)
		return
	}
	if isData {
		r.dataDelivered(it.at)
	}
	if queued {
		d.countDataLocked(isData)
		return
	}
	w.mu.Unlock()

	if sink != nil {
		sink.DeliverFrame(it.frame)
	} else {
		dispatch(disp, it.frame)
	}

	w.mu.Lock()
	d.countDataLocked(isData)
	w.putBufLocked(it.frame)
}

// dispatch hands one IP packet to a stack.
func dispatch(disp stack.NetworkDispatcher, frame []byte) {
	pkt := stack.NewPacketBuffer(stack.PacketBufferOptions{Payload: buffer.MakeWithData(frame)})
	disp.DeliverNetworkPacket(networkProtocol(frame), pkt)
	pkt.DecRef()
}

// countDataLocked counts a data segment delivered this way towards the
// reverse direction's ACK aggregation, releasing its held ACKs once enough
// have passed.
func (d *direction) countDataLocked(isData bool) {
	if r := d.reverse; r.cfg.AckAggSegments > 0 && isData {
		r.dataSeen++
		// control:wire-ackagg-count
		if r.dataSeen >= r.cfg.AckAggSegments {
			r.dataSeen = 0
			if len(r.held) > 0 {
				r.releaseLocked(d.w.now())
			}
		}
	}
}

func networkProtocol(b []byte) tcpip.NetworkProtocolNumber {
	if len(b) > 0 && b[0]>>4 == 6 {
		return header.IPv6ProtocolNumber
	}
	return header.IPv4ProtocolNumber
}

// frameClass is what the ACK aggregator needs to know about a frame.
type frameClass struct {
	pureAck bool // TCP, no payload, none of SYN, FIN, RST
	data    bool // TCP with payload
}

// classify parses an IP packet's TCP header with gVisor's header views.
// Anything it cannot parse (fragments, extension headers, short packets) is
// neither a pure ACK nor data.
func classify(b []byte) frameClass {
	var seg []byte
	switch {
	case len(b) >= header.IPv4MinimumSize && b[0]>>4 == 4:
		ip := header.IPv4(b)
		hl, tl := int(ip.HeaderLength()), int(ip.TotalLength())
		if ip.Protocol() != uint8(header.TCPProtocolNumber) || ip.More() || ip.FragmentOffset() != 0 ||
			hl < header.IPv4MinimumSize || tl < hl || tl > len(b) {
			return frameClass{}
		}
		seg = b[hl:tl]
	case len(b) >= header.IPv6MinimumSize && b[0]>>4 == 6:
		ip := header.IPv6(b)
		pl := int(ip.PayloadLength())
		if ip.NextHeader() != uint8(header.TCPProtocolNumber) || header.IPv6MinimumSize+pl > len(b) {
			return frameClass{}
		}
		seg = b[header.IPv6MinimumSize : header.IPv6MinimumSize+pl]
	default:
		return frameClass{}
	}
	if len(seg) < header.TCPMinimumSize {
		return frameClass{}
	}
	t := header.TCP(seg)
	off := int(t.DataOffset())
	if off < header.TCPMinimumSize || off > len(seg) {
		return frameClass{}
	}
	if len(seg) > off {
		return frameClass{data: true}
	}
	fl := t.Flags()
	if fl&(header.TCPFlagSyn|header.TCPFlagFin|header.TCPFlagRst) != 0 || fl&header.TCPFlagAck == 0 {
		return frameClass{}
	}
	return frameClass{pureAck: true}
}

// direction is one way through the wire.
type direction struct {
	w       *Wire
	idx     int
	cfg     Dir
	rng     *rand.Rand
	to      *Endpoint
	reverse *direction

	queueBytes, queueFrames int // effective bounds, 0 = none
	cardRate                int64

	// TX ring and card.
	ringSize  int // cfg.TxRing, fixed for the wire's life
	ringUsed  int
	waiters   []*waiter
	in        *ingress // real time: frames and waiters from other threads
	slotFreed bool     // real time: a slot freed since the waiters were last run
	cardBusy  time.Duration
	cardRem   int64

	// Bottleneck.
	linkBusy    time.Duration
	linkRem     int64
	queue       []queued // frames admitted and not yet serialised, FIFO
	qHead       int
	qBytes      int
	lastArrival time.Duration
	geBad       bool

	// ACK aggregation.
	held     [][]byte
	flowKeys []flowKey // scratch for coalesce
	holdGen  uint64
	dataSeen int
	lastData time.Duration // when the other direction last delivered data (AckAggGap)
	sawData  bool
	gapArmed bool // an evGapCheck is pending

	// The receiving card's poll (GRO): frames arrived and not yet polled.
	rxRing    [][]byte
	pollArmed bool
	groBufs   [][]byte // aggregate buffers for reuse
	groOut    []groPacket

	// Jitter held for a period (JitterPeriod).
	jitVal time.Duration
	jitEnd time.Duration

	stats DirStats
	ctr   dirCounters
	late  latHist // real time: how late each frame was handed over
}

type queued struct {
	dep  time.Duration
	size int
}

type waiter struct {
	f    func()
	done atomic.Bool // run or cancelled
}

func newDirection(w *Wire, idx int, cfg Dir, rtt time.Duration, mtu uint32, seed uint64) *direction {
	d := &direction{
		w:   w,
		idx: idx,
		cfg: cfg,
		// One PCG stream per direction, so one direction's draws never
		// shift the other's.
		// control:wire-seed
		rng:         rand.New(rand.NewPCG(seed, 0x9e3779b97f4a7c15+uint64(idx))),
		queueBytes:  cfg.QueueBytes,
		queueFrames: cfg.QueueFrames,
		cardRate:    cfg.LineRateBps,
		ringSize:    cfg.TxRing,
	}
	d.cfg.Blackouts = append([]Window(nil), cfg.Blackouts...)
	if cfg.Burst != nil {
		b := *cfg.Burst
		d.cfg.Burst = &b
	}
	if d.queueBytes == 0 && d.queueFrames == 0 && cfg.RateBps > 0 {
		d.queueBytes = defaultQueueBytes(cfg.RateBps, rtt, mtu)
	}
	if d.cardRate == 0 && cfg.TxRing > 0 {
		d.cardRate = cfg.RateBps
	}
	return d
}

func (d *direction) name() string {
	if d.idx == 0 {
		return "a2b"
	}
	return "b2a"
}

// serialise returns how long size bytes of IP packet take on a line of rate
// bits/s, carrying the sub-nanosecond remainder in *rem across back-to-back
// frames so that a long train holds the rate exactly.
func serialise(size int, rate int64, rem *int64) time.Duration {
	// control:wire-rate
	num := int64(size+EthernetOverhead)*8*int64(time.Second) + *rem
	*rem = num % rate
	return time.Duration(num / rate)
}

// write takes one frame from the sending endpoint. It returns false if the
// ring is full (the frame is refused and counted).
func (d *direction) writeLocked(frame []byte, now time.Duration) bool {
	w := d.w
	// control:wire-ring-credit
	if d.cfg.TxRing > 0 && d.ringUsed >= d.cfg.TxRing {
		d.refuseLocked(now, frame)
		return false
	}
	d.stats.SentFrames++
	d.stats.SentBytes += uint64(len(frame))
	d.ctr.add(&d.ctr.sentFrames, 1)
	d.ctr.add(&d.ctr.sentBytes, uint64(len(frame)))
	w.traceLocked(now, d, TraceSend, frame)
	w.pcapLocked(Side(d.idx), frame)

	if d.cardRate > 0 {
		start := d.cardBusy
		if start < now {
			start, d.cardRem = now, 0
		}
		d.cardBusy = start + serialise(len(frame), d.cardRate, &d.cardRem)
		if d.cfg.TxRing > 0 {
			d.ringUsed++
		}
		w.pushLocked(w.eventLocked(d.cardBusy, evCardDone, d, frame), now)
		return true
	}
	if d.cfg.TxRing > 0 {
		// A card with no line rate of its own still holds the slot until
		// the clock next runs, so a burst larger than the ring is refused.
		d.ringUsed++
		w.pushLocked(w.eventLocked(now, evSlotFree, d, nil), now)
	}
	d.admitLocked(frame, now)
	return true
}

// refuseLocked counts a frame a full TX ring refused.
func (d *direction) refuseLocked(now time.Duration, frame []byte) {
	d.stats.DropRing++
	d.ctr.add(&d.ctr.dropRing, 1)
	d.w.traceLocked(now, d, TraceRefuse, frame)
}

// refuseAllLocked counts pkts as refused by a full TX ring, each traced.
func (d *direction) refuseAllLocked(now time.Duration, pkts []*stack.PacketBuffer) {
	for _, p := range pkts {
		f := d.w.flattenLocked(p)
		d.refuseLocked(now, f)
		d.w.putBufLocked(f)
	}
}

// oversizeLocked counts a frame over the MTU.
func (d *direction) oversizeLocked() {
	d.stats.DropOversize++
	d.ctr.add(&d.ctr.dropOversize, 1)
}

// admitLocked moves a frame the card has sent into the path at time t:
// through the ACK aggregator, then the bottleneck.
func (d *direction) admitLocked(frame []byte, t time.Duration) {
	if d.cfg.AckAggSegments > 0 {
		if classify(frame).pureAck && !d.otherIdle(t) {
			d.held = append(d.held, frame)
			d.stats.AcksHeld++
			d.ctr.add(&d.ctr.acksHeld, 1)
			if len(d.held) == 1 && d.cfg.AckAggHold > 0 {
				d.holdGen++
				ev := d.w.eventLocked(t+d.cfg.AckAggHold, evHoldExpire, d, nil)
				ev.gen = d.holdGen
				d.w.pushLocked(ev, t)
			}
			return
		}
		if len(d.held) > 0 {
			d.releaseLocked(t)
		}
	}
	d.bottleneckLocked(frame, t)
}

// otherIdle reports whether, under AckAggGap, the other direction has
// delivered no data segment for AckAggGap by t: an ACK then passes at once
// (behind any still held), since the burst it answers has ended.
func (d *direction) otherIdle(t time.Duration) bool {
	// control:hosttests-t14-model-no-ack-gap-1
	return d.cfg.AckAggGap > 0 && (!d.sawData || t-d.lastData >= d.cfg.AckAggGap)
}

// dataDelivered notes a data segment delivered in the other direction at t
// and makes sure a gap check is pending: one at a time, re-armed from the
// latest delivery, so a long train costs one event per AckAggGap, not one
// per segment.
func (d *direction) dataDelivered(t time.Duration) {
	if d.cfg.AckAggGap == 0 {
		return
	}
	d.lastData, d.sawData = t, true
	if !d.gapArmed {
		d.gapArmed = true
		d.w.pushLocked(d.w.eventLocked(t+d.cfg.AckAggGap, evGapCheck, d, nil), t)
	}
}

// gapCheckLocked releases the held ACKs if the other direction has been idle
// for AckAggGap at t, else checks again AckAggGap after its latest delivery.
func (d *direction) gapCheckLocked(t time.Duration) {
	if at := d.lastData + d.cfg.AckAggGap; at > t {
		d.w.pushLocked(d.w.eventLocked(at, evGapCheck, d, nil), t)
		return
	}
	d.gapArmed = false
	// control:hosttests-t14-model-no-ack-gap-2
	if len(d.held) > 0 {
		d.releaseLocked(t)
	}
}

// jitterLocked draws the extra delay of a frame leaving the bottleneck at
// dep: per frame, or once per JitterPeriod.
func (d *direction) jitterLocked(dep time.Duration) time.Duration {
	p := d.cfg.JitterPeriod
	// control:hosttests-t14-model-jitter-per-frame
	if p == 0 {
		return time.Duration(d.rng.Int64N(int64(d.cfg.Jitter)))
	}
	if dep >= d.jitEnd {
		d.jitVal = time.Duration(d.rng.Int64N(int64(d.cfg.Jitter)))
		d.jitEnd = dep - dep%p + p
	}
	return d.jitVal
}

// releaseLocked sends every held ACK into the bottleneck, in order.
func (d *direction) releaseLocked(t time.Duration) {
	held := d.held
	d.held = nil
	d.holdGen++
	d.dataSeen = 0
	d.stats.AckReleases++
	d.ctr.add(&d.ctr.ackReleases, 1)
	if d.cfg.AckAggCoalesce {
		before := len(held)
		held, d.flowKeys = coalesce(held, d.flowKeys, d.w.putBufLocked)
		n := uint64(before - len(held))
		d.stats.AcksCoalesced += n
		d.ctr.add(&d.ctr.acksCoalesced, n)
	}
	for _, f := range held {
		d.bottleneckLocked(f, t)
	}
}

// flowKey identifies a TCP flow by its addresses and ports; ok is false for
// a frame whose flow cannot be read.
type flowKey struct {
	addrs  [32]byte
	ports  uint32
	family byte
	ok     bool
}

func flowOf(f []byte) flowKey {
	var k flowKey
	switch {
	case len(f) >= header.IPv4MinimumSize && f[0]>>4 == 4:
		hl := int(header.IPv4(f).HeaderLength())
		if hl < header.IPv4MinimumSize || len(f) < hl+4 {
			return k
		}
		copy(k.addrs[:], f[12:20])
		k.ports = binary.BigEndian.Uint32(f[hl:])
		k.family = 4
	case len(f) >= header.IPv6MinimumSize+4 && f[0]>>4 == 6:
		copy(k.addrs[:], f[8:40])
		k.ports = binary.BigEndian.Uint32(f[header.IPv6MinimumSize:])
		k.family = 6
	default:
		return k
	}
	k.ok = true
	return k
}

// coalesce keeps, in order, only the last ACK of each flow in held: a
// cumulative ACK supersedes the earlier ones of its connection. Frames whose
// flow cannot be read are all kept. keys is scratch space, returned for
// reuse; a group is a few dozen ACKs, so the pairwise scan allocates nothing
// and costs less than a map. drop is given each superseded frame.
func coalesce(held [][]byte, keys []flowKey, drop func([]byte)) ([][]byte, []flowKey) {
	keys = keys[:0]
	for _, f := range held {
		keys = append(keys, flowOf(f))
	}
	out := held[:0]
	for i, f := range held {
		superseded := false
		if keys[i].ok {
			for j := i + 1; j < len(held); j++ {
				// control:wire-ack-coalesce-keeps-all
				if keys[j] == keys[i] {
					superseded = true
					break
				}
			}
		}
		if superseded {
			drop(f)
		} else {
			out = append(out, f)
		}
	}
	return out, keys
}

func (d *direction) inBlackout(t time.Duration) bool {
	for _, b := range d.cfg.Blackouts {
		if t >= b.Start && t < b.End {
			return true
		}
	}
	return false
}

// bottleneckLocked queues a frame arriving at the bottleneck at time t (drop
// tail), works out when its last bit leaves, then applies the path's
// impairments and schedules its arrival at the far end.
func (d *direction) bottleneckLocked(frame []byte, t time.Duration) {
	w := d.w
	if m := d.cfg.PathMTU; m > 0 && len(frame) > m {
		d.tooBigLocked(frame, t)
		return
	}
	for d.qHead < len(d.queue) && d.queue[d.qHead].dep <= t {
		d.qBytes -= d.queue[d.qHead].size
		d.qHead++
	}
	if d.qHead > 1024 && d.qHead*2 > len(d.queue) {
		d.queue = append(d.queue[:0], d.queue[d.qHead:]...)
		d.qHead = 0
	}
	size := len(frame) + EthernetOverhead
	frames := len(d.queue) - d.qHead
	if (d.queueBytes > 0 && d.qBytes+size > d.queueBytes) || (d.queueFrames > 0 && frames+1 > d.queueFrames) {
		d.stats.DropQueue++
		d.ctr.add(&d.ctr.dropQueue, 1)
		w.traceLocked(t, d, TraceDropQueue, frame)
		w.putBufLocked(frame)
		return
	}
	dep := t
	if d.cfg.RateBps > 0 {
		start := d.linkBusy
		if start < t {
			start, d.linkRem = t, 0
		}
		dep = start + serialise(len(frame), d.cfg.RateBps, &d.linkRem)
		d.linkBusy = dep
		d.queue = append(d.queue, queued{dep: dep, size: size})
		d.qBytes += size
		frames++
		if uint64(d.qBytes) > d.stats.QueueHighBytes {
			d.stats.QueueHighBytes = uint64(d.qBytes)
			d.ctr.max(&d.ctr.queueHighBytes, uint64(d.qBytes))
		}
		if uint64(frames) > d.stats.QueueHighFrames {
			d.stats.QueueHighFrames = uint64(frames)
			d.ctr.max(&d.ctr.queueHighFrames, uint64(frames))
		}
	}

	// Impairments, each drawn from this direction's generator in a fixed
	// order and only when configured, so a run is reproducible.
	if d.inBlackout(dep) {
		d.stats.DropBlackout++
		d.ctr.add(&d.ctr.dropBlackout, 1)
		w.traceLocked(t, d, TraceDropBlackout, frame)
		w.putBufLocked(frame)
		return
	}
	if d.cfg.Loss > 0 && d.rng.Float64() < d.cfg.Loss {
		d.stats.DropLoss++
		d.ctr.add(&d.ctr.dropLoss, 1)
		w.traceLocked(t, d, TraceDropLoss, frame)
		w.putBufLocked(frame)
		return
	}
	if g := d.cfg.Burst; g != nil {
		p := g.LossInGood
		if d.geBad {
			p = g.LossInBad
		}
		lost := p > 0 && d.rng.Float64() < p
		if d.geBad {
			d.geBad = !(d.rng.Float64() < g.BadToGood)
		} else {
			d.geBad = d.rng.Float64() < g.GoodToBad
		}
		if lost {
			d.stats.DropBurst++
			d.ctr.add(&d.ctr.dropBurst, 1)
			w.traceLocked(t, d, TraceDropBurst, frame)
			w.putBufLocked(frame)
			return
		}
	}
	if d.cfg.Corrupt > 0 && d.rng.Float64() < d.cfg.Corrupt {
		c := d.corrupt(frame)
		w.putBufLocked(frame)
		frame = c
		d.stats.Corrupted++
		d.ctr.add(&d.ctr.corrupted, 1)
	}
	dup := d.cfg.Duplicate > 0 && d.rng.Float64() < d.cfg.Duplicate
	arr := dep + d.cfg.Delay
	if d.cfg.Jitter > 0 {
		arr += d.jitterLocked(dep)
	}
	if !d.cfg.Reorder && arr < d.lastArrival { // control:jitter-keeps-order
		arr = d.lastArrival
	}
	if arr > d.lastArrival {
		d.lastArrival = arr
	}
	w.pushLocked(w.eventLocked(arr, evDeliver, d, frame), t)
	if dup {
		d.stats.Duplicated++
		d.ctr.add(&d.ctr.duplicated, 1)
		c := w.getBufLocked(len(frame))
		copy(c, frame)
		w.pushLocked(w.eventLocked(arr, evDeliver, d, c), t)
	}
}

// corrupt returns a copy of frame with one byte inverted past the IP header
// (inside it for a packet with nothing beyond it, never the version byte), so
// the TCP, UDP or IP checksum catches it: a single changed byte always
// changes a ones'-complement sum (RFC 1071).
func (d *direction) corrupt(frame []byte) []byte {
	c := d.w.getBufLocked(len(frame))
	copy(c, frame)
	lo := 1
	if len(c) > 0 {
		switch c[0] >> 4 {
		case 4:
			lo = int(c[0]&0xf) * 4
		case 6:
			lo = header.IPv6MinimumSize
		}
	}
	if lo >= len(c) || lo < 1 {
		lo = 1
	}
	if lo >= len(c) {
		return c
	}
	i := lo + d.rng.IntN(len(c)-lo)
	c[i] ^= 0xff
	return c
}

func (d *direction) takeWaitersLocked(dst []func()) []func() {
	for _, wt := range d.waiters {
		// control:wire-ring-cancel
		if wt.done.CompareAndSwap(false, true) {
			dst = append(dst, wt.f)
		}
	}
	d.waiters = d.waiters[:0]
	return dst
}

// TraceKind is what happened to a frame.
type TraceKind uint8

const (
	TraceSend         TraceKind = iota + 1 // accepted from the sending stack
	TraceRefuse                            // refused: TX ring full
	TraceDropQueue                         // dropped: bottleneck queue full
	TraceDropLoss                          // dropped: random loss
	TraceDropBurst                         // dropped: burst loss
	TraceDropBlackout                      // dropped: path down
	TraceDeliver                           // handed to the far stack (as delivered, possibly corrupted)
	TraceDropDetached                      // dropped: far endpoint has no dispatcher
	TraceDropTooBig                        // dropped: larger than the path MTU (PathMTU)
)

// TraceEvent is one record of the frame trace.
type TraceEvent struct {
	At    time.Duration // wire time
	Dir   string        // "a2b" or "b2a"
	Kind  TraceKind
	Frame []byte // must not be modified or kept
}

// SetTrace installs f to see every trace record, under the wire's lock: f
// must not call the wire or a stack.
func (w *Wire) SetTrace(f func(TraceEvent)) {
	w.mu.Lock()
	w.hook = f
	w.mu.Unlock()
}

// TraceHash returns the SHA-256 of the trace so far: per record its time,
// direction, kind, length and frame bytes. A send record carries no bytes:
// each frame's bytes enter at its one final record (delivered, as delivered,
// or dropped), which halves the hashing on the per-frame path. Two
// virtual-time runs of one Config and Seed with the same traffic give the
// same hash. With Config.NoTraceHash it is all zeros.
func (w *Wire) TraceHash() [32]byte {
	w.mu.Lock()
	defer w.mu.Unlock()
	var out [32]byte
	if w.trace != nil {
		copy(out[:], w.trace.Sum(nil))
	}
	return out
}

func (w *Wire) traceLocked(t time.Duration, d *direction, k TraceKind, frame []byte) {
	if w.trace != nil {
		hdr := w.traceHdr[:] // a field, not a local: a local would escape to the heap per frame
		binary.BigEndian.PutUint64(hdr[0:], uint64(t))
		hdr[8] = byte(d.idx)
		hdr[9] = byte(k)
		binary.BigEndian.PutUint32(hdr[10:], uint32(len(frame)))
		w.trace.Write(hdr)
		if k != TraceSend {
			w.trace.Write(frame)
		}
	}
	if w.hook != nil {
		w.hook(TraceEvent{At: t, Dir: d.name(), Kind: k, Frame: frame})
	}
}
