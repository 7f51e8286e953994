package wire

import (
	"runtime"
	"time"

	"gvisor.dev/gvisor/pkg/tcpip"
)

// Real-time release: the wire's events run on one dedicated goroutine locked
// to its OS thread. While an event is armed it sleeps precisely (nanosleep
// with 1 ns timer slack on Linux) in naps of at most rtNapMax, checking for
// an earlier event between naps, until rtSpin before the deadline, spins the
// rest, and then runs every event due in one batch; idle, it naps the same
// way. It never waits on a Go timer or a channel: on a loaded 2-core host
// those wake milliseconds late (a parked goroutine runs only when an
// ordinary thread hands it a P), which would swamp a 10 ms RTT. The naps
// keep the thread's P, so a wake-up never queues for one; the price is a
// wake-up every rtNapMax for the wire's life.
const (
	rtSpin   = 20 * time.Microsecond  // spun, not slept, before each deadline
	rtNapMax = 100 * time.Microsecond // longest precise sleep between checks for an earlier event
)

// releaser is a real-time wire's releasing thread.
type releaser struct {
	wake  chan struct{} // an event earlier than the one waited for was armed
	stop  chan struct{}
	done  chan struct{}
	fifo  bool // set by the thread itself before its first event
	spins uint64
	// batches counts the times the thread ran the events due (fire).
	batches uint64
}

// NewRealTime builds a wire whose events run on the wall clock, released by
// a dedicated thread (see releaser), so that frames from the Linux kernel
// (through a TUN device, Endpoint.WriteFrame and AttachSink) and from stacks
// in this process cross the same Config, presets, queue defaults and ACK
// aggregation as in virtual time. Stats report each direction's lateness:
// how late each frame was handed over against its schedule. Close stops the
// thread.
func NewRealTime(cfg Config) (*Wire, error) {
	w, err := New(tcpip.NewStdClock(), cfg)
	if err != nil {
		return nil, err
	}
	w.rt = &releaser{wake: make(chan struct{}, 1), stop: make(chan struct{}), done: make(chan struct{})}
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
		l.SchedFIFO, l.Spins, l.Batches = w.rt.fifo, w.rt.spins, w.rt.batches
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
	}
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
				preciseSleep(rtNapMax)
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
		d := at - w.now()
		switch {
		case d <= 0:
			return waitDue
		case d > rtSpin:
			preciseSleep(min(d-rtSpin, rtNapMax))
		default:
			w.mu.Lock()
			r.spins++
			w.mu.Unlock()
			for w.now() < at {
			}
			return waitDue
		}
	}
}
