package vtest

import (
	"bytes"
	"crypto/sha256"
	"fmt"
	"hash"
	"sync"

	"gvisor.dev/gvisor/pkg/tcpip"
	"gvisor.dev/gvisor/pkg/waiter"
)

// chunk is how much stream a Source generates ahead of the endpoint.
const chunk = 256 << 10

// Source writes n bytes of a seeded Stream to an endpoint whenever it is
// writable, then shuts down its write side (a FIN). It runs from waiter
// callbacks deferred through the clock (AfterFunc(0)), so it never re-enters
// the endpoint from inside one of its notifications.
type Source struct {
	gate    pumpGate
	run     sync.Mutex // guards the rest: held by pump and the accessors
	clk     tcpip.Clock
	ep      tcpip.Endpoint
	wq      *waiter.Queue
	entry   waiter.Entry
	stream  *Stream
	seed    int64
	gen     int64 // bytes generated (and hashed)
	h       hash.Hash
	total   int64
	sent    int64
	buf     []byte // generated, not yet written
	off     int
	done    bool
	err     error
	blocked int // writes refused with ErrWouldBlock
}

// NewSource prepares a source of n bytes of seed's stream on ep; Start begins.
func NewSource(clk tcpip.Clock, ep tcpip.Endpoint, wq *waiter.Queue, seed, n int64) *Source {
	s := &Source{clk: clk, ep: ep, wq: wq, stream: NewStream(seed), seed: seed, h: sha256.New(), total: n}
	s.entry = waiter.NewFunctionEntry(waiter.WritableEvents|waiter.EventErr|waiter.EventHUp, func(waiter.EventMask) { s.kick() })
	return s
}

// Start registers for writability and writes what the endpoint takes now
// (deferred to the clock's next event at the current instant).
func (s *Source) Start() {
	s.wq.EventRegister(&s.entry)
	s.kick()
}

func (s *Source) kick() { s.gate.kick(s.clk, s.pump) }

func (s *Source) pump() {
	s.gate.begin()
	s.run.Lock()
	defer s.run.Unlock()
	for !s.done {
		if s.off == len(s.buf) {
			if s.sent == s.total {
				if err := s.ep.Shutdown(tcpip.ShutdownWrite); err != nil {
					s.err = fmt.Errorf("vtest: source shutdown: %s", err)
				}
				s.stop()
				return
			}
			k := int64(chunk)
			if rem := s.total - s.sent; rem < k {
				k = rem
			}
			if cap(s.buf) < int(k) {
				s.buf = make([]byte, k)
			}
			s.buf = s.buf[:k]
			s.stream.Read(s.buf)
			s.h.Write(s.buf)
			s.gen += k
			s.off = 0
		}
		r := bytes.NewReader(s.buf[s.off:])
		n, err := s.ep.Write(r, tcpip.WriteOptions{})
		if n > 0 {
			s.off += int(n)
			s.sent += n
		}
		if err != nil {
			if _, ok := err.(*tcpip.ErrWouldBlock); ok {
				s.blocked++
				// Writability may have returned between the refusal and now.
				if s.ep.Readiness(waiter.WritableEvents)&waiter.WritableEvents != 0 {
					continue
				}
				return
			}
			s.err = fmt.Errorf("vtest: source write at %d: %s", s.sent, err)
			s.stop()
			return
		}
		if n == 0 {
			return
		}
	}
}

// Done reports whether every byte was written and the write side shut
// down, or a write failed (see Err).
func (s *Source) Done() bool { s.run.Lock(); defer s.run.Unlock(); return s.done }

// Err is the write error that ended the source, nil if none.
func (s *Source) Err() error { s.run.Lock(); defer s.run.Unlock(); return s.err }

// Sent is the bytes the endpoint has accepted.
func (s *Source) Sent() int64 { s.run.Lock(); defer s.run.Unlock(); return s.sent }

// Blocked is how many writes the endpoint refused as would-block
// (backpressure, which must never end the source).
func (s *Source) Blocked() int { s.run.Lock(); defer s.run.Unlock(); return s.blocked }

// Hash is the SHA-256 of the whole stream the source sends (StreamHash of
// its seed and size).
func (s *Source) Hash() [32]byte {
	s.run.Lock()
	defer s.run.Unlock()
	if s.gen == s.total {
		return sum(s.h)
	}
	return StreamHash(s.seed, s.total)
}

// stop ends the pumps: done, unregistered from the queue.
func (s *Source) stop() {
	s.done = true
	s.wq.EventUnregister(&s.entry)
	s.gate.stop()
}
