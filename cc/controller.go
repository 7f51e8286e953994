// Package cc is netramp's congestion control policy: CUBIC (RFC 9438) in
// congestion avoidance, HyStart++ (RFC 9406) in the initial slow start, RFC
// 5681 slow start after any loss, and the limited gate that decides whether an
// ACK may grow the window at all.
//
// The package is pure: no I/O, no goroutines, no clock reads. Sizes are bytes;
// time is a time.Duration since an arbitrary origin, passed in with each event.
// A Controller belongs to one connection and is not safe for concurrent use.
//
// The composition, one concept a file:
//   - limited.go: the gate (when may an ACK grow cwnd), including the
//     half-window card rule, a stated departure from RFC 9438 §5.8;
//   - hystart.go: HyStart++ rounds, CSS and its exit (RFC 9406 §4.2, §4.3);
//   - reno.go: RFC 5681 §3.1 slow start after a loss or an RTO;
//   - cubic.go: CUBIC's window (RFC 9438 §4.2–§4.10);
//   - controller.go: the events and the counters. Loss recovery itself (its
//     state, recovery point, PRR and undo evidence) is the sender's; cc
//     learns of it by events: OnCongestion, OnRTO, OnRecoveryEnd, OnSpurious.
package cc

import (
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/netramp/netramp/counters"
)

// Arm selects the growth policy; the A/B bench compares them.
type Arm int

const (
	// ArmD is the default (the zero Arm): arm B's ACK clock, unpaced initial
	// window and card rule, with HyStart++'s L = infinity and the departures
	// that keep it from overshooting the queue (hystart.go: a stretch ACK
	// counted as the samples it stands for, the second-rise exit). Slow
	// start grows by every segment an ACK delivers, as the kernel does on
	// stretch ACKs; what goes past the ACK clock is paced (ClockPacing).
	ArmD Arm = iota
	// ArmB keeps the seed's rules: HyStart++ with L = 8 (or unlimited when
	// pacing) in the initial slow start, the half-window card rule, and what
	// goes past its ACK clock paced (ClockPacing). The metal rows and the
	// t14 model were measured with it.
	ArmB
	// ArmA is the bench's baseline: RFC 5681 growth min(N, SMSS) in every slow
	// start and the old card rule (limited only with less than one SMSS of room).
	ArmA
)

func (a Arm) String() string {
	switch a {
	case ArmD:
		return "D"
	case ArmB:
		return "B"
	case ArmA:
		return "A"
	}
	return fmt.Sprintf("Arm(%d)", int(a))
}

// StopReason is what ended a send opportunity; the gate reads it.
type StopReason int

const (
	// StopApp: the application had no more data.
	StopApp StopReason = iota
	// StopPeerWindow: the peer's advertised window was full.
	StopPeerWindow
	// StopCwnd: the congestion window was full.
	StopCwnd
	// StopCard: the card's TX credit ran out.
	StopCard
)

func (r StopReason) String() string {
	switch r {
	case StopApp:
		return "app"
	case StopPeerWindow:
		return "peer-window"
	case StopCwnd:
		return "cwnd"
	case StopCard:
		return "card"
	}
	return fmt.Sprintf("StopReason(%d)", int(r))
}

// InfiniteSsthresh is the initial ssthresh, RFC 5681 §3.1's "arbitrarily
// high"; the controller never does arithmetic on it.
const InfiniteSsthresh = math.MaxInt

// maxWindow bounds cwnd and every size the controller takes in, so no event
// sequence can overflow: 1 GiB is the largest window TCP can advertise
// (RFC 7323 §2.3).
const maxWindow = 1 << 30

// maxSMSS is the largest segment the MSS option can announce (RFC 9293 §3.7.1).
const maxSMSS = 65535

// maxInitialWindow bounds Config.InitialWindow so SMSS·IW stays in range.
const maxInitialWindow = 1 << 12

// ErrConfig is wrapped by every error New returns; the message names the field.
var ErrConfig = errors.New("cc: bad config")

// Config configures one Controller.
type Config struct {
	SMSS          int // sender maximum segment size, bytes
	InitialWindow int // segments; 0 = 10 (RFC 6928)
	Arm           Arm
	// Pacing says the sender paces (arm P) at PacingRate.
	Pacing bool
	// NoFastConvergence turns off RFC 9438 §4.7, which is on by default.
	NoFastConvergence bool
	// Counters may be nil; so may any of its fields.
	Counters *Counters
}

// Counters explains a ramp: which ACKs could grow cwnd, by how much, and what
// HyStart++ and loss recovery did. Every field may be nil.
type Counters struct {
	CSS             *counters.Counter // tcp.hystart.css
	CSSEntryRounds  *counters.Counter // tcp.hystart.css.entry-rounds
	Resumed         *counters.Counter // tcp.hystart.resumed
	Exits           *counters.Counter // tcp.hystart.exits
	ExitCwndBytes   *counters.Counter // tcp.hystart.exit.cwnd.bytes
	AcksCwndLimited *counters.Counter // tcp.acks.cwnd-limited
	AcksNotLimited  *counters.Counter // tcp.acks.not-limited
	AcksInRecovery  *counters.Counter // tcp.acks.in-recovery
	CwndGrownBytes  *counters.Counter // tcp.cwnd.grown.bytes
	CwndMaxBytes    *counters.Counter // tcp.cwnd.max.bytes
	Reductions      *counters.Counter // tcp.cc.reductions
	RepeatLosses    *counters.Counter // tcp.cc.repeat-losses
	Undos           *counters.Counter // tcp.cc.undos
	RTOResets       *counters.Counter // tcp.cc.rto-resets
	RenoFriendly    *counters.Counter // tcp.cc.reno-friendly.acks
	IdleRestarts    *counters.Counter // tcp.cc.idle-restarts
}

// NewCounters registers the controller's counters in r, each with its
// one-line doc. Connections of one stack share them.
func NewCounters(r *counters.Registry) *Counters {
	if r == nil {
		return &Counters{}
	}
	return &Counters{
		CSS:             r.MustRegister("tcp.hystart.css", "times HyStart++ entered conservative slow start (RFC 9406 §4.2)"),
		CSSEntryRounds:  r.MustRegister("tcp.hystart.css.entry-rounds", "HyStart++ rounds in which CSS was entered at least once"),
		Resumed:         r.MustRegister("tcp.hystart.resumed", "times CSS found its RTT rise spurious and resumed slow start"),
		Exits:           r.MustRegister("tcp.hystart.exits", "times HyStart++ ended slow start after its CSS rounds"),
		ExitCwndBytes:   r.MustRegister("tcp.hystart.exit.cwnd.bytes", "sum of cwnd in bytes at HyStart++ exits"),
		AcksCwndLimited: r.MustRegister("tcp.acks.cwnd-limited", "ACKs that found the sender window-limited, so could grow cwnd"),
		AcksNotLimited:  r.MustRegister("tcp.acks.not-limited", "ACKs that found the sender application-, peer- or card-limited, so grew nothing"),
		AcksInRecovery:  r.MustRegister("tcp.acks.in-recovery", "ACKs that arrived during fast recovery, where cwnd does not grow"),
		CwndGrownBytes:  r.MustRegister("tcp.cwnd.grown.bytes", "bytes by which ACKs grew cwnd"),
		CwndMaxBytes:    r.MustRegister("tcp.cwnd.max.bytes", "largest cwnd in bytes any connection reached"),
		Reductions:      r.MustRegister("tcp.cc.reductions", "congestion events that reduced cwnd by beta (RFC 9438 §4.6)"),
		RepeatLosses:    r.MustRegister("tcp.cc.repeat-losses", "losses inside an ongoing recovery, which reduce nothing"),
		Undos:           r.MustRegister("tcp.cc.undos", "spurious congestion events undone (RFC 9438 §4.9)"),
		RTOResets:       r.MustRegister("tcp.cc.rto-resets", "retransmission timeouts that reset cwnd to one segment (RFC 9438 §4.8)"),
		RenoFriendly:    r.MustRegister("tcp.cc.reno-friendly.acks", "congestion-avoidance ACKs that set cwnd from the Reno estimate (RFC 9438 §4.3)"),
		IdleRestarts:    r.MustRegister("tcp.cc.idle-restarts", "restarts after idle that cut cwnd to the restart window (RFC 5681 §4.1)"),
	}
}

// Ack is one acknowledgment as the controller sees it.
type Ack struct {
	Now            time.Duration
	Acked          int    // bytes newly delivered (cumulative + newly SACKed)
	SndUna, SndNxt uint64 // stream offsets after the ACK
	RTT            time.Duration
	SRTT           time.Duration
	InFlight       int
}

// State is a copy of the controller's variables, for tests and traces.
// Durations of 0 mean "none yet"; sizes are bytes.
type State struct {
	Cwnd, Ssthresh, CwndPrior int
	SlowStart                 bool // cwnd < ssthresh
	InitialSlowStart          bool // ssthresh is still InfiniteSsthresh
	FastRecovery              bool // a loss reduced cwnd and its recovery has not ended
	RTOEpisode                bool // an RTO reset cwnd and its recovery has not ended

	// HyStart++ (RFC 9406).
	HyStartActive       bool
	CSS                 bool
	CSSRounds           int
	CSSBaseline         time.Duration
	LastRoundMinRTT     time.Duration
	CurrentRoundMinRTT  time.Duration
	RoundSamples        int
	WindowEnd           uint64
	HyStartEnteredRound bool

	// CUBIC (RFC 9438), windows in bytes, K in seconds.
	EpochValid bool
	EpochStart time.Duration
	K          float64
	WMax       float64
	CwndEpoch  float64
	WEst       float64
	Alpha      float64 // §4.3's α_cubic for the next ACK
	AfterRTO   bool

	// The gate.
	LastStop      StopReason
	StopInFlight  int
	Limited       bool
	GrownLastAck  int
	UndoAvailable bool
}

// Controller is one connection's congestion controller.
type Controller struct {
	smss     int
	iw       int // bytes
	arm      Arm
	pacing   bool
	fc       bool
	counters Counters

	cwnd      int
	ssthresh  int
	cwndPrior int

	gate gate
	hs   hystart
	cub  cubic

	// fastRecovery and rtoEpisode are set by OnCongestion and OnRTO and
	// cleared by OnRecoveryEnd and OnSpurious: the sender decides when a
	// recovery ends.
	fastRecovery bool
	rtoEpisode   bool
	sndNxt       uint64
	grownLast    int

	undo    *snapshot
	maxSeen int
}

// snapshot is what a congestion event saves so RFC 9438 §4.9 can restore it.
type snapshot struct {
	cwnd, ssthresh, cwndPrior int
	hs                        hystart
	cub                       cubic
}

// New returns a controller in its initial slow start with cwnd = IW.
func New(cfg Config) (*Controller, error) {
	if cfg.SMSS <= 0 {
		return nil, fmt.Errorf("%w: SMSS %d must be positive", ErrConfig, cfg.SMSS)
	}
	if cfg.SMSS > maxSMSS {
		return nil, fmt.Errorf("%w: SMSS %d exceeds %d", ErrConfig, cfg.SMSS, maxSMSS)
	}
	if cfg.InitialWindow < 0 {
		return nil, fmt.Errorf("%w: InitialWindow %d must not be negative", ErrConfig, cfg.InitialWindow)
	}
	if cfg.InitialWindow > maxInitialWindow {
		return nil, fmt.Errorf("%w: InitialWindow %d exceeds %d segments", ErrConfig, cfg.InitialWindow, maxInitialWindow)
	}
	if cfg.Arm != ArmA && cfg.Arm != ArmB && cfg.Arm != ArmD {
		return nil, fmt.Errorf("%w: Arm %d is none of ArmD, ArmB, ArmA", ErrConfig, int(cfg.Arm))
	}
	iw := cfg.InitialWindow
	if iw == 0 {
		iw = 10
	}
	c := &Controller{
		smss:     cfg.SMSS,
		iw:       iw * cfg.SMSS,
		arm:      cfg.Arm,
		pacing:   cfg.Pacing,
		fc:       !cfg.NoFastConvergence,
		ssthresh: InfiniteSsthresh,
	}
	if cfg.Counters != nil {
		c.counters = *cfg.Counters
	}
	c.cwnd = c.iw
	c.gate = newGate(cfg.Arm, cfg.SMSS)
	// control:cc-default-arm-l-eight
	c.hs = newHystart(cfg.Arm != ArmA, cfg.Pacing || cfg.Arm == ArmD)
	c.cub = newCubic(cfg.SMSS, c.fc)
	c.noteMax()
	return c, nil
}

// Cwnd returns the congestion window in bytes.
func (c *Controller) Cwnd() int { return c.cwnd }

// Ssthresh returns the slow-start threshold in bytes (InfiniteSsthresh at first).
func (c *Controller) Ssthresh() int { return c.ssthresh }

// InSlowStart reports cwnd < ssthresh (RFC 5681 §3.1).
func (c *Controller) InSlowStart() bool { return c.cwnd < c.ssthresh }

// InRecovery reports whether a congestion event's recovery is under way.
func (c *Controller) InRecovery() bool { return c.fastRecovery || c.rtoEpisode }

// PacingRate returns the rate, in bytes per second, at which a pacing
// sender (Config.Pacing, arm P) spreads its segments now; 0 means send as
// the ACKs clock it, as arms A and B do.
//
// The rate paces the growth as well as the sending (RFC 9406 §4.3): the
// window plus what the phase grows it by a round, over a round trip: 2·cwnd
// in slow start, 1.25·cwnd in CSS (which grows a quarter as fast), 1.2·cwnd
// in congestion avoidance. Slow start and CSS divide by the path's minimum
// RTT, because their RTT samples carry the peer's ACK hold (up to 20 ms on
// the t14 path), which would hold the flight back below what the window
// allows; congestion avoidance divides by srtt, which includes the standing
// queue, so the rate stays near the delivery rate. Without an RTT it is 0.
func (c *Controller) PacingRate(srtt, minRTT time.Duration) float64 {
	if !c.pacing {
		return 0
	}
	rtt, f := srtt, 1.2
	switch {
	case c.hs.active && c.hs.css && c.ssthresh == InfiniteSsthresh:
		rtt, f = minRTT, 1+1.0/hsCSSGrowthDiv
	case c.InSlowStart():
		rtt, f = minRTT, 2
	}
	if rtt <= 0 {
		return 0
	}
	return f * float64(c.cwnd) / rtt.Seconds()
}

// ClockPacing returns how an ACK-clocked arm B or D sender (not Pacing) spreads
// what its ACK clock did not release: what each ACK delivered leaves at
// once, as the ACK clock releases it, and so may a burst of up to burst
// bytes more (the initial window, which RFC 6928 lets a sender put into the
// path at once); the rest (slow start's growth, or the room a window update
// or the end of a recovery opened) leaves at rate bytes per second. In slow
// start that is cwnd/min_rtt, one round's growth (at most a window, as slow
// start doubles it) over one round trip. After it, it is what tops the ACK
// clock (the flight over srtt, or over min_rtt without an SRTT) up to
// cwnd/min_rtt, and at least an initial window per min_rtt for CUBIC's
// growth. rate 0 means unpaced: arm A, a Pacing sender (PacingRate paces
// all it sends), or no RTT yet.
//
// Why: unpaced, each slow-start ACK sends what it delivered plus as much
// again, so a round's flight leaves as trains at twice the bottleneck rate,
// each building a queue of half the train. A queue under about a fifth of
// the flight overflows that way long before the flight fills the path, and
// before any RTT rise HyStart++ could see (a 0.1 BDP queue holds less delay
// than RttThresh), so slow start ended by loss at a fraction of the BDP and
// CUBIC's epoch started from there: issue 10 defect 5 (200 Mbit/s, 80 ms,
// 0.1 BDP), utilization over 30 s 59.9% for B against A's 68.3%. Spread,
// the growth fills the gaps between the trains instead. After the exit,
// the same pacer spreads the burst a recovery's last cumulative ACK opens
// when the peer's window held the sender back during the recovery, which
// overflowed the queue a second time (100 Mbit/s, 40 ms, 0.2 BDP). That
// room is topped up, not paced at cwnd/min_rtt on top of the clock: when
// the peer's window held a recovery short, it ended with the pipe far under
// ssthresh (200 Mbit/s, 40 ms, 0.2 BDP: 761 KB against about 1 MB), and
// clock plus cwnd/min_rtt sent the room at twice the bottleneck rate for
// 15 ms, a second loss and a second reduction.
//
// RFC 9406 §4.3 recommends pacing a HyStart++ sender; this paces only what
// the ACK clock did not release, which sends nothing sooner than unpaced B
// would. In arm B L = 8 still bounds the growth per ACK; in arm D, L =
// infinity, so a stretch ACK's growth is as large as its delivery, and it is
// this pacer that spreads it (hsL). The card rule is the gate's as before,
// and a stretch ACK still releases its delivered segments at once (the t14
// ramp).
func (c *Controller) ClockPacing(minRTT, srtt time.Duration, inFlight int) (rate float64, burst int) {
	// control:hosttests-shallow-arm-b-unpaced
	if c.pacing || c.arm == ArmA || minRTT <= 0 {
		return 0, c.iw
	}
	if c.InSlowStart() {
		return float64(c.cwnd) / minRTT.Seconds(), c.iw
	}
	// control:cc-clock-pacing-on-top-of-the-clock
	clock := float64(inFlight) / max(srtt, minRTT).Seconds()
	return max(float64(c.cwnd)/minRTT.Seconds()-clock, float64(c.iw)/minRTT.Seconds()), c.iw
}

// OnSendStop records how the last send opportunity ended and the bytes in
// flight then; the next ACKs may grow cwnd only if the gate says the window
// was in use (limited.go).
func (c *Controller) OnSendStop(reason StopReason, inFlight int) {
	c.gate.onStop(reason, clampSize(inFlight), c.cwnd)
}

// OnSend records that data was sent up to sndNxt, for HyStart++'s rounds.
func (c *Controller) OnSend(now time.Duration, sndNxt uint64) {
	if sndNxt > c.sndNxt {
		c.sndNxt = sndNxt
	}
}

// OnAck processes one ACK: it grows cwnd if the gate allows, in the phase's
// way, and feeds HyStart++ its RTT sample and round boundary.
func (c *Controller) OnAck(a Ack) {
	acked := clampSize(a.Acked)
	if a.SndNxt > c.sndNxt {
		c.sndNxt = a.SndNxt
	}
	c.grownLast = 0
	limited := c.gate.limited()

	if c.fastRecovery {
		// cwnd holds at the reduced value until recovery ends (RFC 9438 §4.6;
		// the recovery algorithm, not growth, governs sending meanwhile).
		if acked > 0 {
			c.counters.AcksInRecovery.Inc()
		}
		return
	}
	if acked > 0 {
		if limited {
			c.counters.AcksCwndLimited.Inc()
		} else {
			c.counters.AcksNotLimited.Inc()
		}
	}

	before := c.cwnd
	switch {
	case c.hs.active && c.ssthresh == InfiniteSsthresh:
		c.hystartAck(a, acked, limited)
	case c.cwnd < c.ssthresh:
		if limited {
			// control:cc-l-after-loss
			c.cwnd = renoSlowStart(c.cwnd, c.ssthresh, acked, c.smss)
		}
	default:
		rtt := a.SRTT
		if rtt <= 0 {
			rtt = a.RTT
		}
		if c.cub.onAck(a.Now, acked, &c.cwnd, c.cwndPrior, rtt, limited) {
			c.counters.RenoFriendly.Inc()
		}
	}
	if c.cwnd > maxWindow {
		c.cwnd = maxWindow
	}
	if c.cwnd > before {
		c.grownLast = c.cwnd - before
		c.counters.CwndGrownBytes.Add(uint64(c.grownLast))
		c.noteMax()
	}
}

// hystartAck is one ACK of the initial slow start under HyStart++: growth
// first, then the RTT sample, then the round boundary (RFC 9406 §4.2's order).
func (c *Controller) hystartAck(a Ack, acked int, limited bool) {
	c.hs.startRoundIfNone(c.sndNxt)
	if limited {
		c.cwnd += min(c.hs.growth(acked, c.smss), maxWindow-c.cwnd)
	}
	ev := c.hs.onRTT(a.RTT, acked, c.smss)
	if ev.entered {
		c.counters.CSS.Inc()
	}
	if ev.firstInRound {
		c.counters.CSSEntryRounds.Inc()
	}
	if ev.resumed {
		c.counters.Resumed.Inc()
	}
	if ev.exit || c.hs.onCumAck(a.SndUna, c.sndNxt) {
		c.exitSlowStart(a.Now)
	}
}

// exitSlowStart ends HyStart++ after its CSS rounds, or once a paced
// sender's CSS sees the queue keep growing (hystart.onRTT): ssthresh = cwnd, and
// CUBIC starts with cwnd_prior = W_max = cwnd and K = 0 (RFC 9406 §4.2,
// RFC 9438 §4.10).
func (c *Controller) exitSlowStart(now time.Duration) {
	c.ssthresh = c.cwnd
	// control:cc-prior-not-set-at-exit
	c.cwndPrior = c.cwnd
	c.cub.handOff(now, c.cwnd)
	c.counters.Exits.Inc()
	c.counters.ExitCwndBytes.Add(uint64(c.cwnd))
}

// OnCongestion reduces the window for a loss detected by ACKs, once per
// recovery (RFC 9438 §4.6, §4.7): ssthresh = max(β·flight, 2·SMSS) and cwnd
// the same. A loss inside an ongoing recovery or RTO episode reduces nothing.
func (c *Controller) OnCongestion(now time.Duration, inFlight int) {
	// control:cc-double-reduction
	if c.fastRecovery || c.rtoEpisode {
		c.counters.RepeatLosses.Inc()
		return
	}
	c.save()
	flight := clampSize(inFlight)
	c.cwndPrior = c.cwnd
	c.cub.onReduction(c.cwnd)
	// control:cc-reduce-from-cwnd
	c.ssthresh = reducedWindow(flight, c.smss)
	// cwnd = max(ssthresh, 2·SMSS) (§4.6), but a reduction never raises cwnd
	// above max(cwnd, 2·SMSS) when the flight exceeded cwnd.
	c.cwnd = min(c.ssthresh, max(c.cwnd, 2*c.smss))
	c.hs.stop()
	c.fastRecovery = true
	c.counters.Reductions.Inc()
}

// OnRecoveryEnd ends the recovery of the last congestion event or RTO, as
// the sender's recovery decides (tcp/internal/recovery); the next ACK in
// congestion avoidance starts CUBIC's epoch.
func (c *Controller) OnRecoveryEnd(now time.Duration) {
	c.fastRecovery = false
	c.rtoEpisode = false
}

// OnRTO handles a retransmission timeout (RFC 9438 §4.8): ssthresh from the
// flight as in §4.6, cwnd to the loss window of one SMSS, RFC 5681 slow start
// to ssthresh, then congestion avoidance with K = 0 and W_max = W_est = cwnd.
// ssthresh is held on a repeated timeout (RFC 5681 §3.1) and on a timeout
// inside a fast recovery, whose loss has already reduced it once.
func (c *Controller) OnRTO(now time.Duration, inFlight int) {
	if !c.fastRecovery && !c.rtoEpisode {
		c.save()
		flight := clampSize(inFlight)
		c.cwndPrior = c.cwnd
		c.cub.onReduction(c.cwnd)
		c.ssthresh = reducedWindow(flight, c.smss)
		c.counters.Reductions.Inc()
	}
	c.hs.stop()
	c.cwnd = c.smss
	c.cub.onRTO()
	c.fastRecovery = false
	c.rtoEpisode = true
	c.counters.RTOResets.Inc()
}

// OnSpurious undoes the last congestion event once it is known spurious
// (RFC 9438 §4.9), restoring every variable saved at the event, but only if
// cwnd is still below cwnd_prior: a window that has grown back keeps its state.
func (c *Controller) OnSpurious(now time.Duration) {
	// control:cc-undo-always
	if c.undo == nil || c.cwnd >= c.cwndPrior {
		return
	}
	s := c.undo
	c.undo = nil
	c.cwnd, c.ssthresh, c.cwndPrior = s.cwnd, s.ssthresh, s.cwndPrior
	c.hs = s.hs
	c.cub = s.cub
	c.fastRecovery = false
	c.rtoEpisode = false
	c.counters.Undos.Inc()
}

// OnIdleRestart applies RFC 5681 §4.1 after an idle period longer than the
// RTO: cwnd falls to the restart window min(IW, cwnd), and the idle time is
// not counted in CUBIC's t (RFC 9438 §5.8).
func (c *Controller) OnIdleRestart(now time.Duration) {
	c.cub.excludeUntil(now)
	if c.cwnd > c.iw {
		c.cwnd = c.iw
		c.cub.epochValid = false
		c.counters.IdleRestarts.Inc()
	}
}

// State returns a copy of the controller's variables.
func (c *Controller) State() State {
	s := State{
		Cwnd:             c.cwnd,
		Ssthresh:         c.ssthresh,
		CwndPrior:        c.cwndPrior,
		SlowStart:        c.InSlowStart(),
		InitialSlowStart: c.ssthresh == InfiniteSsthresh,
		FastRecovery:     c.fastRecovery,
		RTOEpisode:       c.rtoEpisode,

		HyStartActive:       c.hs.active && c.ssthresh == InfiniteSsthresh,
		CSS:                 c.hs.css,
		CSSRounds:           c.hs.cssRounds,
		CSSBaseline:         finite(c.hs.cssBaseline),
		LastRoundMinRTT:     finite(c.hs.lastRoundMin),
		CurrentRoundMinRTT:  finite(c.hs.currentRoundMin),
		RoundSamples:        c.hs.samples,
		WindowEnd:           c.hs.windowEnd,
		HyStartEnteredRound: c.hs.enteredThisRound,

		EpochValid: c.cub.epochValid,
		EpochStart: c.cub.epochStart,
		K:          c.cub.k,
		WMax:       c.cub.wMax,
		CwndEpoch:  c.cub.cwndEpoch,
		WEst:       c.cub.wEst,
		Alpha:      c.cub.alpha(c.cwndPrior),
		AfterRTO:   c.cub.afterRTO,

		LastStop:      c.gate.stop,
		StopInFlight:  c.gate.inFlight,
		Limited:       c.gate.limited(),
		GrownLastAck:  c.grownLast,
		UndoAvailable: c.undo != nil,
	}
	return s
}

func (c *Controller) save() {
	c.undo = &snapshot{cwnd: c.cwnd, ssthresh: c.ssthresh, cwndPrior: c.cwndPrior, hs: c.hs, cub: c.cub}
}

func (c *Controller) noteMax() {
	if c.cwnd > c.maxSeen {
		c.maxSeen = c.cwnd
		c.counters.CwndMaxBytes.Max(uint64(c.cwnd))
	}
}

// reducedWindow is RFC 9438 §4.6's multiplicative decrease from the flight,
// with its floor: max(β·flight, 2·SMSS).
func reducedWindow(flight, smss int) int {
	w := flight * betaNum / betaDen // exact; flight ≤ maxWindow cannot overflow
	// control:cc-no-ssthresh-floor
	if w < 2*smss {
		w = 2 * smss
	}
	return w
}

// clampSize maps a caller's size into [0, maxWindow], so nonsense never
// panics or overflows.
func clampSize(n int) int {
	if n < 0 {
		return 0
	}
	if n > maxWindow {
		return maxWindow
	}
	return n
}
