package wire

import (
	"sync"
	"time"
)

// rxQueue is a real-time endpoint's input queue. The releasing thread hands
// a frame over here, as a card hands it to its host's receive ring, and the
// frame's lateness is measured at that handover; the endpoint's input
// goroutine then gives it to the stack or the sink attached. Were the
// releasing thread to deliver it itself, it would do the receiver's work on
// the wire's time: a stack's input waits on the stack's locks, held by
// ordinary threads that a loaded host deschedules for milliseconds, and a
// sink bridging to a TUN device runs the kernel's whole receive path inside
// write() (IP and TCP input, the socket's wake-up, often the ACK's
// transmit). Measured on t14 (1 Gbit/s, osbench -arms Linux,Linux,Linux,
// load 7, 2 cores) when the releasing thread made those writes itself: a
// write took 3.6 µs at the median, 40 µs at p99 and up to 2 ms, 5.3 s in all
// of a row of about 11 s, and the wire's lateness p99 was 3-7 ms.
//
// The input goroutine's lag, from handover to the delivery's return, is
// recorded per frame for stacks and sinks alike (InputLag): it is the
// receiving host's time to take a frame in, part of what a row measures,
// and shown beside the wire's lateness.
//
// The queue has a lock of its own, which the input goroutine holds only to
// take the frames queued: it never takes the wire's (see ingress.go for
// why the releaser must not wait on a lock an ordinary thread holds).
type rxQueue struct {
	mu     sync.Mutex
	frames []rxFrame // guarded by mu
	wake   chan struct{}

	lagMu sync.Mutex
	lag   latHist // handover to the receiver's return, guarded by lagMu
}

// rxFrame is a frame handed over at wire time at.
type rxFrame struct {
	b  []byte
	at time.Duration
}

// rxQueueMax bounds an input queue, as a host's receive ring is bounded: a
// receiver that falls this far behind loses frames, counted as DropInput.
const rxQueueMax = 4096

// put queues frame, handed over at wire time now, or reports false if the
// queue is full.
func (q *rxQueue) put(frame []byte, now time.Duration) bool {
	q.mu.Lock()
	// control:wire-input-queue-unbounded
	if len(q.frames) >= rxQueueMax {
		q.mu.Unlock()
		return false
	}
	q.frames = append(q.frames, rxFrame{frame, now})
	q.mu.Unlock()
	select {
	case q.wake <- struct{}{}:
	default:
	}
	return true
}

// input delivers e's queued frames, in order, to the sink attached to e,
// else to its stack, until the wire closes, and records each one's lag.
func (w *Wire) input(e *Endpoint) {
	q := e.rx
	d := e.out.reverse // the direction that delivers to e
	var batch []rxFrame
	var lags []time.Duration
	for {
		select {
		case <-q.wake:
		case <-w.rt.stop:
			return
		}
		for {
			q.mu.Lock()
			batch = append(batch[:0], q.frames...)
			clear(q.frames)
			q.frames = q.frames[:0]
			q.mu.Unlock()
			if len(batch) == 0 {
				break
			}
			disp, sink := e.receivers()
			lags = lags[:0]
			for _, f := range batch {
				switch {
				case sink != nil:
					sink.DeliverFrame(f.b)
				case disp != nil:
					dispatch(disp, f.b)
				default:
					continue
				}
				// control:wire-input-lag-unmeasured
				lags = append(lags, w.now()-f.at)
			}
			q.lagMu.Lock()
			for _, l := range lags {
				q.lag.record(l)
			}
			q.lagMu.Unlock()
			if n := uint64(len(batch) - len(lags)); n > 0 {
				w.mu.Lock()
				d.stats.DropDetached += n
				d.ctr.add(&d.ctr.dropDetached, n)
				w.mu.Unlock()
			}
			for _, f := range batch {
				w.rtPut(f.b)
			}
			clear(batch)
		}
	}
}

// InputLag is both directions' input lag as one histogram: for each frame
// delivered, the time from the wire's handover to its input queue to the
// return of the stack's or the sink's delivery. In virtual time Frames is
// 0.
func (w *Wire) InputLag() Lateness {
	var h latHist
	for _, e := range w.eps {
		if q := e.rx; q != nil {
			q.lagMu.Lock()
			h.merge(&q.lag)
			q.lagMu.Unlock()
		}
	}
	return h.summary()
}
