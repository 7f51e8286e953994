package vtest

import (
	"crypto/sha256"
	"fmt"
	"hash"
	"sort"
	"sync"
	"time"

	"gvisor.dev/gvisor/pkg/tcpip"
	"gvisor.dev/gvisor/pkg/waiter"
)

// Mark is one point of a sink's ramp: the bytes received by a time, measured
// from the first byte's arrival.
type Mark struct {
	At    time.Duration
	Bytes int64
}

// Sink reads an endpoint whenever it is readable until EOF, hashing what it
// reads and recording a Mark per read instant, then closes the endpoint.
// Like Source it runs from waiter callbacks deferred through the clock.
type Sink struct {
	gate    pumpGate
	run     sync.Mutex // guards the rest: held by pump and the accessors
	clk     tcpip.Clock
	ep      tcpip.Endpoint
	wq      *waiter.Queue
	entry   waiter.Entry
	h       hash.Hash
	n       int64
	first   tcpip.MonotonicTime
	started bool
	begun   tcpip.MonotonicTime // when Start was called
	lead    time.Duration       // from Start to the first byte
	marks   []Mark
	done    bool
	err     error
	doneAt  time.Duration // since the first byte
	// Discard, when set before Start, skips hashing (for large runs whose
	// integrity another check covers).
	Discard bool
	// KeepOpen, when set before Start, leaves the endpoint open at EOF (its
	// own Source may still be sending); by default the sink closes it.
	KeepOpen bool
}

// NewSink prepares a sink on ep; Start begins.
func NewSink(clk tcpip.Clock, ep tcpip.Endpoint, wq *waiter.Queue) *Sink {
	s := &Sink{clk: clk, ep: ep, wq: wq, h: sha256.New()}
	s.entry = waiter.NewFunctionEntry(waiter.ReadableEvents|waiter.EventErr|waiter.EventHUp, func(waiter.EventMask) { s.kick() })
	return s
}

// Start registers for readability and reads what is there.
func (s *Sink) Start() {
	s.run.Lock()
	s.begun = s.clk.NowMonotonic()
	s.run.Unlock()
	s.wq.EventRegister(&s.entry)
	s.kick()
}

func (s *Sink) kick() { s.gate.kick(s.clk, s.pump) }

// Write is the endpoint's destination for Read: it counts and hashes.
func (s *Sink) Write(p []byte) (int, error) {
	if !s.Discard {
		s.h.Write(p)
	}
	s.n += int64(len(p))
	return len(p), nil
}

func (s *Sink) pump() {
	s.gate.begin()
	s.run.Lock()
	defer s.run.Unlock()
	before := s.n
	for !s.done {
		_, err := s.ep.Read(s, tcpip.ReadOptions{})
		if err == nil {
			continue
		}
		switch err.(type) {
		case *tcpip.ErrWouldBlock:
		case *tcpip.ErrClosedForReceive:
			s.finish(nil)
		default:
			s.finish(fmt.Errorf("vtest: sink read after %d bytes: %s", s.n, err))
		}
		break
	}
	if s.n > before {
		now := s.clk.NowMonotonic()
		if !s.started {
			s.started, s.first = true, now
			s.lead = now.Sub(s.begun)
		}
		at := now.Sub(s.first)
		if k := len(s.marks); k > 0 && s.marks[k-1].At == at {
			s.marks[k-1].Bytes = s.n
		} else {
			s.marks = append(s.marks, Mark{At: at, Bytes: s.n})
		}
	}
	if s.done && s.started {
		s.doneAt = s.clk.NowMonotonic().Sub(s.first)
	}
}

func (s *Sink) finish(err error) {
	s.err = err
	s.stop()
	if !s.KeepOpen {
		s.ep.Close()
	}
}

// Done reports whether the sink reached EOF (or failed, see Err).
func (s *Sink) Done() bool { s.run.Lock(); defer s.run.Unlock(); return s.done }

// Err is the read error that ended the sink, nil at a clean EOF.
func (s *Sink) Err() error { s.run.Lock(); defer s.run.Unlock(); return s.err }

// Bytes is the total received.
func (s *Sink) Bytes() int64 { s.run.Lock(); defer s.run.Unlock(); return s.n }

// Hash is the SHA-256 of everything received (meaningful once Done).
func (s *Sink) Hash() [32]byte { s.run.Lock(); defer s.run.Unlock(); return sum(s.h) }

// Duration is the time from the first byte to EOF.
func (s *Sink) Duration() time.Duration { s.run.Lock(); defer s.run.Unlock(); return s.doneAt }

// Marks is a copy of the ramp: cumulative bytes at each read instant.
func (s *Sink) Marks() []Mark {
	s.run.Lock()
	defer s.run.Unlock()
	return append([]Mark(nil), s.marks...)
}

// ReceivedBy is the bytes received within d of the first byte (the ramp's
// "received by 100 ms / 300 ms / 1 s / 2 s" marks).
func (s *Sink) ReceivedBy(d time.Duration) int64 {
	s.run.Lock()
	defer s.run.Unlock()
	i := sort.Search(len(s.marks), func(i int) bool { return s.marks[i].At > d })
	if i == 0 {
		return 0
	}
	return s.marks[i-1].Bytes
}

// stop ends the pumps: done, unregistered from the queue.
func (s *Sink) stop() {
	s.done = true
	s.wq.EventUnregister(&s.entry)
	s.gate.stop()
}

// FirstByteAfter is the time from Start to the first byte's arrival.
func (s *Sink) FirstByteAfter() time.Duration { s.run.Lock(); defer s.run.Unlock(); return s.lead }

// ReceivedBySinceStart is the bytes received within d of Start (for a sink
// started when the connection was accepted: the ramp as the receiver's
// application sees it, handshake excluded, first round trip included).
func (s *Sink) ReceivedBySinceStart(d time.Duration) int64 {
	s.run.Lock()
	started, lead := s.started, s.lead
	s.run.Unlock()
	if !started {
		return 0
	}
	return s.ReceivedBy(d - lead)
}
