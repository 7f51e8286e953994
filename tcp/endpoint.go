package tcp

import (
	"sync"
	"time"

	"gvisor.dev/gvisor/pkg/tcpip"
	"gvisor.dev/gvisor/pkg/tcpip/header"
	"gvisor.dev/gvisor/pkg/tcpip/ports"
	"gvisor.dev/gvisor/pkg/tcpip/stack"
	"gvisor.dev/gvisor/pkg/waiter"

	"github.com/netramp/netramp/cc"
	"github.com/netramp/netramp/nic"
	"github.com/netramp/netramp/tcp/internal/autotune"
	"github.com/netramp/netramp/tcp/internal/pacer"
	"github.com/netramp/netramp/tcp/internal/rcvbuf"
	"github.com/netramp/netramp/tcp/internal/reasm"
	"github.com/netramp/netramp/tcp/internal/recovery"
	"github.com/netramp/netramp/tcp/internal/rtt"
	"github.com/netramp/netramp/tcp/internal/rtxq"
	"github.com/netramp/netramp/tcp/internal/sendbuf"
)

// State is an endpoint's RFC 9293 §3.3.2 state, as returned by State().
type State uint32

// The states of RFC 9293 §3.3.2, plus Initial and Bound before a connection.
const (
	StateInitial State = iota
	StateBound
	StateListen
	StateSynSent
	StateSynRcvd
	StateEstablished
	StateFinWait1
	StateFinWait2
	StateClosing
	StateTimeWait
	StateCloseWait
	StateLastAck
	StateClosed
)

var stateNames = [...]string{"INITIAL", "BOUND", "LISTEN", "SYN-SENT", "SYN-RECEIVED", "ESTABLISHED",
	"FIN-WAIT-1", "FIN-WAIT-2", "CLOSING", "TIME-WAIT", "CLOSE-WAIT", "LAST-ACK", "CLOSED"}

func (s State) String() string {
	if int(s) < len(stateNames) {
		return stateNames[s]
	}
	return "?"
}

// synchronized reports whether the handshake has completed (RFC 9293 §3.5).
func (s State) synchronized() bool { return s >= StateEstablished && s < StateClosed }

// outSeg is a segment built under the endpoint's lock and written after it
// is released.
type outSeg struct {
	pkt      *stack.PacketBuffer
	start    uint64 // sequence offsets this segment covers (data and FIN)
	end      uint64
	newData  bool // first transmission: rolled back if the link refuses it
	rtx      bool // a retransmission
	payload  int
	isRst    bool
	priorNxt uint64   // SND.NXT before this segment was built
	prev     rtxq.Seg // a resend's segment as it was before Retransmitted
	noDF     bool     // sent without DF (pmtu.go)
	segs     int      // the segments of a GSO packet (gso.go); 0 for one
}

// endpoint is one TCP socket: a listener, or one side of a connection.
type endpoint struct {
	p        *protocol
	wq       *waiter.Queue
	netProto tcpip.NetworkProtocolNumber
	ops      tcpip.SocketOptions
	tcpip.DefaultSocketOptionsHandler

	mu    sync.Mutex
	state State
	id    stack.TransportEndpointID
	// effective network protocols of the registration and reservation
	netProtos    []tcpip.NetworkProtocolNumber
	bindNIC      tcpip.NICID
	portReserved bool
	resv         ports.Reservation
	registered   bool
	route        *stack.Route
	routePath    path // what segments read from route (pathOf)
	// rxSum is the pseudo-header sum of the segments the demuxer gives a
	// connected endpoint, set before it is registered with its four-tuple
	// and never after (so HandlePacket reads it without the lock); 0 for
	// a listener, which sums each segment's addresses where they lie.
	rxSum        rxPseudoSum
	nicID        tcpip.NICID
	credit       nic.Credit
	cancelCredit func()
	lastErr      tcpip.Error
	hardErr      tcpip.Error // the error that closed the connection, reported by Read/Write
	userClosed   bool
	opened       bool         // counted in tcp.conns.opened: closeLocked counts it closed
	after        []func()     // work for after the lock is released
	releaseRoute *stack.Route // released after the outbox is written
	noDF         bool         // a Packet Too Big went below the floor: no segment carries DF (pmtu.go)

	// outbox and notifications, flushed after unlocking
	outbox   []outSeg
	spare    []outSeg
	flushing bool
	notify   waiter.EventMask

	// segmentation offload (gso.go)
	run         gsoRun // new segments that leave together as one packet
	outExtra    int    // frames the outbox's GSO packets carry beyond one each
	outputLater bool   // an ACK came during a write: the writer runs its opportunity
	inWrite     bool   // the application's Write is sending or its flush runs (corkTail)
	tailCorked  bool   // corkTail held new data back for the next write
	// headersBuilt counts the data segments whose headers sendData built,
	// not those runExtend added to a run, and paceRates arm B's pacing-rate
	// computations (paceWait): tests read them.
	headersBuilt uint64
	paceRates    uint64

	lst *listener // a listener's queues

	// negotiated options
	mss         int // the peer's MSS (RFC 9293 §3.7.1), payload bytes per segment before options
	smss        int // payload per segment after our fixed options
	sndWS       uint8
	rcvWS       uint8
	wsOK        bool
	tsOK        bool
	sackOK      bool
	tsOffset    uint32
	tsRecent    uint32 // TS.Recent (RFC 7323 §4.3)
	tsRecentT   time.Duration
	tsRecentSet bool
	lastAckSent uint64 // Last.ACK.sent (RFC 7323 §4.3)

	// send side
	iss         uint32
	sndUna      uint64
	sndNxt      uint64
	sndMax      uint64 // highest SND.NXT ever (retransmission rewinds SND.NXT only by RTO)
	sndWnd      uint64 // the peer's window in bytes
	sndWL1      uint64 // receive offset of the segment that last updated the window
	sndWL2      uint64
	maxSndWnd   uint64
	sbuf        *sendbuf.Buffer
	finQueued   bool // the user shut down writing: a FIN follows the data
	q           *rtxq.Queue
	maxSegs     int
	ctl         *cc.Controller
	est         *rtt.Estimator
	pace        *pacer.Pacer       // arm P: paces every segment; arm B: what the ACK clock did not release
	clockPaced  bool               // arms B and D: ACKs credit the pacer (cc.ClockPacing)
	rec         *recovery.Recovery // loss recovery: state, point, PRR, undo, RTO attempts
	synRetries  int
	lastSend    time.Duration
	nodelay     bool
	cork        bool
	sackScratch []rtxq.Range
	sackIn      [4]header.SACKBlock // the inbound segment's SACK blocks (parseOptions)

	// receive side
	irs        uint32
	rcvNxt     uint64
	rcvAdv     uint64       // right edge advertised on the wire (never moves left: RFC 9293 §3.8.6.2.1)
	rcvPromise uint64       // the edge before scaling rounds it up
	rcvBuf     int          // current receive buffer (autotuned)
	rcvq       rcvbuf.Queue // in-order bytes not yet read
	// control:tcp-receive-buffer-at-handshake-2
	ooo         *reasm.Store
	tuner       *autotune.Tuner
	rcvRTT      autotune.RcvRTT // receiver-side RTT estimate, for autotuning
	finRcvd     bool            // the peer's FIN has been consumed (in order)
	finOff      uint64
	finPending  bool // a FIN arrived out of order at finOff
	rdShut      bool
	wrShut      bool
	ackPending  int       // full segments received since the last ACK
	ackCount    int       // segments toward the next every-second-segment ACK (receiveInOrder)
	ackNow      ackReason // an ACK owed at once, and why (ackreason.go)
	ackHeld     bool      // an every-second ACK held for the flush under way (coalesce.go)
	burstHeld   bool      // an every-second ACK held for the end of a link's burst (coalesce.go)
	rxBurst     *burst    // the burst state of the NIC the segment in hand came from (burst.go)
	rxAggregate bool      // the segment in hand brought more than one full segment in order (coalesce.go)
	burstOn     *burst    // the burst list this endpoint is on, and that list's generation
	burstGen    uint64
	delackArmed bool
	sackBlocks  []reasm.Range
	dsack       *reasm.Range

	// keepalive
	kaIdle, kaIntvl time.Duration
	kaCount         int
	kaProbes        int
	lastRecv        time.Duration
	userTimeout     time.Duration

	invalidAcks ackLimit // ACKs sent for unacceptable segments (ratelimit.go)

	tRtx, tReo, tDelack, tKeep, tPersist, tWait, tPace, tLinger timer
	clkAt                                                       time.Duration // protocol time onClock runs by (timer.go); 0 = not set
	tqAt                                                        time.Duration // the protocol's timer queue's key for e; 0 = not queued (guarded by its lock)
	tqIndex                                                     int           // e's index in that queue (guarded by its lock)
	persistBackoff                                              int
	persistProbes                                               int // zero-window probes since the peer last answered
	pacingWait                                                  bool
	tlpArmed                                                    bool
	probe                                                       bool // a loss probe waits for its opportunity (RFC 8985 §7.3)
	swsOverride                                                 bool // the persist timer lets a window-limited runt go (RFC 9293 §3.8.6.2.1)
	ackGap                                                      ackGaps
}

func (p *protocol) newEndpoint(netProto tcpip.NetworkProtocolNumber, wq *waiter.Queue) *endpoint {
	e := &endpoint{p: p, wq: wq, netProto: netProto, state: StateInitial}
	e.ops.InitHandler(e, p.s, tcpip.GetStackSendBufferLimits, tcpip.GetStackReceiveBufferLimits)
	e.ops.SetSendBufferSize(int64(p.opts.SendBufferMax), false)
	e.ops.SetReceiveBufferSize(int64(p.opts.ReceiveBufferMax), false)
	e.kaIdle = 2 * time.Hour
	e.kaIntvl = 75 * time.Second
	e.kaCount = 9
	e.nodelay = false
	e.ops.SetDelayOption(true) // Nagle on (RFC 9293 §3.7.4) until TCP_NODELAY
	e.initTimers()
	return e
}

// pathOf is what segments read from e.route, read again only when the
// route changes.
func (e *endpoint) pathOf() *path {
	if e.routePath.r != e.route {
		e.routePath = path{}
		if e.route != nil {
			e.routePath = pathOf(e.route)
		}
	}
	return &e.routePath
}

// now is the protocol clock's monotonic time since the protocol started.
func (e *endpoint) now() time.Duration { return e.p.now() }

// unlock releases e.mu after writing the outbox and, last, notifying waiters.
// It must be the only way the lock is released on paths that build segments.
func (e *endpoint) unlock() {
	if !e.flushing {
		e.flushing = true
		for {
			if e.outputLater {
				e.outputLater = false
				e.output()
			}
			if len(e.outbox) == 0 && e.ackHeld {
				e.sendHeldAck() // the backlog has drained: one ACK for it
			}
			if len(e.outbox) == 0 {
				break
			}
			batch := e.outbox
			e.outbox = e.spare[:0]
			e.outExtra = 0
			pa := *e.pathOf()
			e.mu.Unlock()
			// control:tcp-no-tx-batch
			tx := openTx(e.p.txBatchFor(pa.r)) // the segments of this opportunity go out together
			refusedAt := -1
			for i := range batch {
				if refusedAt >= 0 {
					batch[i].pkt.DecRef()
					continue
				}
				tx.stamp(batch[i].pkt)
				err := e.p.write(&pa, batch[i].pkt, !batch[i].noDF)
				batch[i].pkt.DecRef()
				if _, ok := err.(*tcpip.ErrNoBufferSpace); ok {
					refusedAt = i
				}
			}
			tx.close() // no return between open and here
			e.mu.Lock()
			if refusedAt >= 0 {
				e.refused(batch[refusedAt:])
			}
			for i := range batch {
				batch[i] = outSeg{}
			}
			e.spare = batch[:0]
		}
		e.flushing = false
		if e.inWrite {
			e.endWrite()
		}
	}
	ev := e.notify
	e.notify = 0
	after := e.after
	e.after = nil
	rr := e.releaseRoute
	e.releaseRoute = nil
	e.mu.Unlock()
	if rr != nil {
		rr.Release()
	}
	for _, f := range after {
		f()
	}
	if ev != 0 {
		e.wq.Notify(ev)
	}
}

// Readiness implements tcpip.Endpoint.
func (e *endpoint) Readiness(mask waiter.EventMask) waiter.EventMask {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.readinessLocked() & mask
}

func (e *endpoint) readinessLocked() waiter.EventMask {
	var r waiter.EventMask
	switch e.state {
	case StateInitial, StateBound:
		r |= waiter.EventHUp
	case StateListen:
		if e.lst != nil && e.lst.accept.len() > 0 {
			r |= waiter.ReadableEvents
		}
	case StateClosed:
		r |= waiter.EventHUp | waiter.ReadableEvents | waiter.WritableEvents
		if e.hardErr != nil {
			r |= waiter.EventErr
		}
	case StateSynSent, StateSynRcvd:
	default:
		if e.rcvq.Len() > 0 || e.finRcvd || e.rdShut {
			r |= waiter.ReadableEvents
		}
		if e.wrShut || e.writeSpace() {
			r |= waiter.WritableEvents
		}
	}
	return r
}
