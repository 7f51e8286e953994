package wire

import (
	"runtime"
	"sync"
	"time"

	"gvisor.dev/gvisor/pkg/tcpip"
)

// Real-time release: the wire's events run on one dedicated goroutine locked
// to its OS thread. While an event is armed it sleeps precisely (nanosleep
// with 1 ns timer slack on Linux) in naps of at most rtNapMax, checking for
// an earlier event between naps, until the spin window before the deadline,
// spins the rest, and then runs every event due in one batch; idle, it naps
// the same way. It never waits on a Go timer or a channel: on a loaded 2-core
// host those wake milliseconds late (a parked goroutine runs only when an
// ordinary thread hands it a P), which would swamp a 10 ms RTT. The naps
// keep the thread's P, so a wake-up never queues for one; the price is a
// wake-up every rtNapMax for the wire's life.
//
// Two measured causes of late hand-overs shape the rest (osbench -suite
// parity on the 2-core VM, per frame: when the releasing thread called fire
// against the event's time, and how each nap overran):
//   - A nap overruns by about 50 µs at the median and by 0.25 ms or more
//     for 1 in 100 naps, with the thread switched out once (the sleep) and
//     never preempted: the host's timer wake-up, which no setting in this
//     process shortens. A spin window of rtSpin absorbs the common overrun;
//     rtSpinBudget bounds the spinning so the thread never nears the
//     kernel's real-time throttling (95% of each second), which would stop
//     it for 50 ms. The rare overruns of milliseconds remain.
//   - The Go scheduler preempts a goroutine that has not yielded for 10 ms.
//     A preempted locked goroutine resumes only after two other threads
//     have been woken in turn to hand its P back: 0.1 ms at best, and
//     milliseconds on a busy host, at whatever moment it struck. The thread
//     yields by itself every rtYieldEvery instead, and only when the next
//     event is at least rtYieldGap away, so the hand-back falls in a gap.
//
// A third cause, the largest, was a lock: the thread waited for the wire's
// lock while an ordinary thread it had preempted held it. No other thread
// takes that lock on a frame's way any more (ingress.go, input.go).
const (
	rtSpin       = 150 * time.Microsecond // spun, not slept, before each deadline
	rtSpinShort  = 20 * time.Microsecond  // the spin once rtSpinBudget is spent
	rtNapMax     = 100 * time.Microsecond // longest precise sleep between checks for an earlier event
	rtYieldEvery = 4 * time.Millisecond   // well inside the Go scheduler's 10 ms slice
	rtYieldGap   = 500 * time.Microsecond // the least time to the next event for a yield
)

// rtSpinBudget is the share of each rtSpinWindow the releasing thread may
// spin; past it, it spins only rtSpinShort until the window ends.
const (
	rtSpinWindow = 20 * time.Millisecond
	rtSpinBudget = rtSpinWindow * 6 / 10
)

// releaser is a real-time wire's releasing thread.
type releaser struct {
	wake  chan struct{} // an event earlier than the one waited for was armed
	stop  chan struct{}
	done  chan struct{}
	fifo  bool // set by the thread itself before its first event
	spins uint64
	// credits runs the TX credit waiters (ingress.go).
	credits creditRunner
	// batches counts the times the thread ran the events due (fire).
	batches uint64
	yields  uint64

	// Owned by the thread alone.
	lastYield time.Duration
	budget    spinBudget
}

// spinBudget is the releasing thread's spinning over the current
// rtSpinWindow.
type spinBudget struct {
	start, spun time.Duration
}

// window returns how long to spin before a deadline at now: rtSpin while
// the budget lasts, else rtSpinShort.
func (b *spinBudget) window(now time.Duration) time.Duration {
	if now-b.start >= rtSpinWindow {
		b.start, b.spun = now, 0
	}
	// control:wire-spin-unbudgeted
	if b.spun >= rtSpinBudget {
		return rtSpinShort
	}
	return rtSpin
}

// add counts a spin of d.
func (b *spinBudget) add(d time.Duration) { b.spun += d }

// NewRealTime builds a wire whose events run on the wall clock, released by
// a dedicated thread (see releaser), so that frames from the Linux kernel
// (through a TUN device, Endpoint.WriteFrame and AttachSink) and from stacks
// in this process cross the same Config, presets, queue defaults and ACK
// aggregation as in virtual time. Stats report each direction's lateness:
// how late each frame was handed over against its schedule; InputLag, how
// long the receivers then took (input.go). Close stops the thread.
func NewRealTime(cfg Config) (*Wire, error) {
	if cfg.AtoB.GRO.Poll > 0 || cfg.BtoA.GRO.Poll > 0 {
		return nil, errorf("GRO is modelled in virtual time only")
	}
	w, err := New(tcpip.NewStdClock(), cfg)
	if err != nil {
		return nil, err
	}
	w.rt = &releaser{wake: make(chan struct{}, 1), stop: make(chan struct{}), done: make(chan struct{})}
	w.rt.credits.wake = make(chan struct{}, 1)
	holdP()
	for _, d := range w.dirs {
		d.in = &ingress{}
	}
	for _, e := range w.eps {
		e.rx = &rxQueue{wake: make(chan struct{}, 1)}
		go w.input(e)
	}
	go w.rt.credits.run(w.rt.stop)
	started := make(chan struct{})
	go w.release(started)
	// The first frames must not wait for the thread to be scheduled.
	<-started
	return w, nil
}

// Lateness is both directions' lateness as one histogram: how late the wire
// handed frames over, whichever way they went. A bench row is as good as
// this is punctual. In virtual time Frames is 0.
func (w *Wire) Lateness() Lateness {
	w.mu.Lock()
	defer w.mu.Unlock()
	var h latHist
	for _, d := range w.dirs {
		h.merge(&d.late)
	}
	l := h.summary()
	if w.rt != nil {
		l.SchedFIFO, l.Spins, l.Batches, l.Yields = w.rt.fifo, w.rt.spins, w.rt.batches, w.rt.yields
	}
	return l
}

// RealTime reports whether the wire runs on its real-time releaser.
func (w *Wire) RealTime() bool { return w.rt != nil }

func (r *releaser) poke() {
	select {
	case r.wake <- struct{}{}:
	default:
	}
}

func (r *releaser) close() {
	select {
	case <-r.stop:
	default:
		close(r.stop)
		releaseP()
	}
}

// extraPs counts the live releasing threads, each of which keeps a P for
// its wire's life (its naps never give it up). GOMAXPROCS is raised by one
// for each, so the rest of the program (the stacks, the TUN bridges) keeps
// the Ps it had: on 2 cores, a P held by the releaser would otherwise leave
// every other goroutine one.
var extraPs struct {
	sync.Mutex
	n int
}

func holdP() {
	extraPs.Lock()
	extraPs.n++
	runtime.GOMAXPROCS(runtime.GOMAXPROCS(0) + 1)
	extraPs.Unlock()
}

func releaseP() {
	extraPs.Lock()
	extraPs.n--
	runtime.GOMAXPROCS(max(runtime.GOMAXPROCS(0)-1, 1))
	extraPs.Unlock()
}

// release is the releasing thread: wait for the armed time, run fire.
func (w *Wire) release(started chan<- struct{}) {
	r := w.rt
	defer close(r.done)
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	fifo := setupReleaser()
	w.mu.Lock()
	r.fifo = fifo
	w.mu.Unlock()
	close(started)
	for {
		w.mu.Lock()
		w.takeIngressLocked()
		armed, at := w.armed, w.armAt
		w.mu.Unlock()
		if !armed {
			// Idle, it naps too: a thread parked on a channel would need an
			// ordinary thread to hand it a P when a frame arrives, and on a
			// loaded host those run milliseconds late.
			select {
			case <-r.stop:
				return
			default:
				if now := w.now(); r.yieldDue(now) {
					w.yield(now)
				} else {
					preciseSleep(rtNapMax)
				}
				continue
			}
		}
		switch w.waitUntil(at) {
		case waitStop:
			return
		case waitRearmed:
			continue
		}
		w.fire()
	}
}

// yieldDue reports whether the thread should yield to the Go scheduler at
// now, before the scheduler preempts it.
func (r *releaser) yieldDue(now time.Duration) bool {
	return now-r.lastYield >= rtYieldEvery
}

// yield gives the goroutine's time slice back to the Go scheduler, which
// resumes it on its own thread.
func (w *Wire) yield(now time.Duration) {
	r := w.rt
	r.lastYield = now
	runtime.Gosched()
	w.mu.Lock()
	r.yields++
	w.mu.Unlock()
}

type waitResult uint8

const (
	waitDue waitResult = iota
	waitRearmed
	waitStop
)

// waitUntil waits for wire time at: in precise naps while it is far,
// spinning for the last rtSpin. An earlier event armed meanwhile ends the
// wait (waitRearmed) so the caller re-reads it.
func (w *Wire) waitUntil(at time.Duration) waitResult {
	r := w.rt
	for {
		select {
		case <-r.stop:
			return waitStop
		case <-r.wake:
			return waitRearmed
		default:
		}
		now := w.now()
		d := at - now
		spin := r.budget.window(now)
		switch {
		case d <= 0:
			return waitDue
		case d >= rtYieldGap && r.yieldDue(now):
			w.yield(now)
		case d > spin:
			preciseSleep(min(d-spin, rtNapMax))
		default:
			w.mu.Lock()
			r.spins++
			w.mu.Unlock()
			for w.now() < at {
			}
			r.budget.add(w.now() - now)
			return waitDue
		}
	}
}
