package soak

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"hash"
	"time"

	"gvisor.dev/gvisor/pkg/tcpip"
	"gvisor.dev/gvisor/pkg/waiter"

	"github.com/netramp/netramp/stack/vtest"
)

// headerLen is the request's header: the connection's id and the response's
// size, big-endian.
const headerLen = 16

// chunk is how much of its stream an end generates ahead of the endpoint.
const chunk = 32 << 10

// end drives one endpoint of a connection from waiter notifications deferred
// through the clock (a notification may come from inside Read or Write, which
// must not be re-entered): it writes its stream and shuts down, reads the
// peer's to EOF, checks it, and closes. The client's stream is the header and
// the request; the server's, the response the header asked for.
type end struct {
	s      *Soak
	rec    *record // nil on a server end until the header has arrived
	client bool
	slot   int // the client's index; on the server, the NIC's
	live   int // index in s.live
	ep     tcpip.Endpoint
	wq     *waiter.Queue
	entry  waiter.Entry
	kick   tcpip.Timer
	kicked bool
	dog    tcpip.Timer // IdleTimeout's watchdog
	last   time.Duration

	// sending
	out     *vtest.Stream
	outLeft int64 // stream bytes still to generate
	outHash hash.Hash
	buf     []byte
	off     int
	rd      bytes.Reader
	shut    bool
	sent    int64

	// receiving
	inHash hash.Hash
	got    int64 // stream bytes received, header excluded
	hdr    [headerLen]byte
	hdrN   int
	eof    bool

	resetAt int64 // the client aborts once sent+got reaches it; -1 never
	ended   bool
}

func newEnd(s *Soak, ep tcpip.Endpoint, wq *waiter.Queue, client bool, slot int) *end {
	e := &end{s: s, ep: ep, wq: wq, client: client, slot: slot, resetAt: -1, inHash: sha256.New(), last: s.clk.Elapsed()}
	e.entry = waiter.NewFunctionEntry(waiter.ReadableEvents|waiter.WritableEvents|waiter.EventErr|waiter.EventHUp, func(waiter.EventMask) { e.poke() })
	e.dog = s.clk.AfterFunc(s.cfg.IdleTimeout, e.watch)
	s.addLive(e)
	wq.EventRegister(&e.entry)
	return e
}

// send sets the stream this end writes: prefix (the header, not hashed),
// then n bytes of seed's stream.
func (e *end) send(prefix []byte, seed, n int64) {
	e.out, e.outLeft, e.outHash = vtest.NewStream(seed), n, sha256.New()
	e.buf = append(make([]byte, 0, chunk), prefix...)
	e.off = 0
	if n == 0 {
		e.sentAll()
	}
}

// poke schedules a pump at the clock's current instant, one at a time.
func (e *end) poke() {
	if e.kicked || e.ended {
		return
	}
	e.kicked = true
	if e.kick == nil {
		e.kick = e.s.clk.AfterFunc(0, e.pump)
		return
	}
	e.kick.Reset(0)
}

func (e *end) pump() {
	e.kicked = false
	for !e.ended {
		r := e.readSome()
		if e.ended {
			return
		}
		w := e.writeSome()
		if e.ended {
			return
		}
		if e.client && e.resetAt >= 0 && e.sent+e.got >= e.resetAt {
			e.ep.Abort()
			e.finish(reset, "aborted on purpose")
			return
		}
		if e.eof && e.shut {
			e.ep.Close()
			e.finish(completed, "")
			return
		}
		if e.rec != nil && e.rec.how == neverRead && e.client && e.ep.Readiness(waiter.EventHUp) != 0 {
			e.fail(e.ep.LastError(), "closed under a reader that never reads")
			return
		}
		if !r && !w {
			return
		}
	}
}

// readSome reads what the endpoint holds; it reports progress.
func (e *end) readSome() bool {
	if e.eof || e.client && e.rec.how == neverRead {
		return false
	}
	moved := false
	for {
		res, err := e.ep.Read(e, tcpip.ReadOptions{})
		if err == nil {
			if res.Count > 0 {
				moved = true
				e.last = e.s.clk.Elapsed()
			}
			if e.ended {
				return moved
			}
			continue
		}
		switch err.(type) {
		case *tcpip.ErrWouldBlock:
		case *tcpip.ErrClosedForReceive:
			e.eof = true
			e.checkIn()
		default:
			e.fail(err, "read")
		}
		return moved
	}
}

// Write takes what Read hands over: on the server the header first, then
// the stream, hashed.
func (e *end) Write(p []byte) (int, error) {
	n := len(p)
	if !e.client && e.hdrN < headerLen {
		k := copy(e.hdr[e.hdrN:], p)
		e.hdrN += k
		p = p[k:]
		if e.hdrN == headerLen {
			e.linkServer()
		}
	}
	if len(p) > 0 {
		e.inHash.Write(p)
		e.got += int64(len(p))
	}
	return n, nil
}

// linkServer finds the connection the header names and starts the response.
func (e *end) linkServer() {
	id := binary.BigEndian.Uint64(e.hdr[:8])
	size := int64(binary.BigEndian.Uint64(e.hdr[8:]))
	r := e.s.recs[id]
	if r == nil || r.srvLinked || size != r.respLen {
		e.ep.Abort()
		e.finish(corrupt, fmt.Sprintf("header names connection %d, response %d bytes: no such connection waits", id, size))
		return
	}
	r.srvLinked = true
	e.rec = r
	e.send(nil, streamSeed(id, false), size)
}

// checkIn judges the received stream at EOF.
func (e *end) checkIn() {
	if e.rec == nil {
		e.ep.Abort()
		e.finish(corrupt, fmt.Sprintf("EOF after %d of the header's %d bytes", e.hdrN, headerLen))
		return
	}
	want, wantHash := e.rec.respLen, e.rec.respHash
	if !e.client {
		want, wantHash = e.rec.reqLen, e.rec.reqHash
	}
	if e.got != want {
		e.ep.Abort()
		e.finish(corrupt, fmt.Sprintf("EOF after %d bytes, want %d", e.got, want))
		return
	}
	var h [32]byte
	copy(h[:], e.inHash.Sum(nil))
	if h != wantHash {
		e.ep.Abort()
		e.finish(corrupt, "SHA-256 of the bytes received differs from the stream sent")
	}
}

// writeSome writes what the endpoint takes, then the FIN; it reports progress.
func (e *end) writeSome() bool {
	if e.out == nil || e.shut {
		return false
	}
	moved := false
	for {
		if e.off == len(e.buf) {
			if e.outLeft == 0 {
				if err := e.ep.Shutdown(tcpip.ShutdownWrite); err != nil {
					if _, ok := err.(*tcpip.ErrNotConnected); ok {
						// A connection reset after our EOF is closed: shutdown
						// says not connected (as Linux's does); the reset is
						// the endpoint's last error.
						if le := e.ep.LastError(); le != nil {
							err = le
						}
					}
					e.fail(err, "shutdown")
					return moved
				}
				e.shut = true
				e.buf = nil
				return moved
			}
			k := min(int64(chunk), e.outLeft)
			e.buf = e.buf[:k]
			e.out.Read(e.buf)
			e.outHash.Write(e.buf)
			e.outLeft -= k
			e.off = 0
			if e.outLeft == 0 {
				e.sentAll()
			}
		}
		e.rd.Reset(e.buf[e.off:])
		n, err := e.ep.Write(&e.rd, tcpip.WriteOptions{})
		if n > 0 {
			e.off += int(n)
			e.sent += n
			moved = true
			e.last = e.s.clk.Elapsed()
		}
		if err != nil {
			if _, ok := err.(*tcpip.ErrWouldBlock); !ok {
				e.fail(err, "write")
			}
			return moved
		}
		if n == 0 {
			return moved
		}
	}
}

// sentAll records the stream's hash for the peer's check.
func (e *end) sentAll() {
	var h [32]byte
	copy(h[:], e.outHash.Sum(nil))
	if e.client {
		e.rec.reqHash = h
	} else {
		e.rec.respHash = h
	}
}

// watch is the IdleTimeout watchdog.
func (e *end) watch() {
	if e.ended {
		return
	}
	idle := e.s.clk.Elapsed() - e.last
	if idle < e.s.cfg.IdleTimeout {
		e.dog.Reset(e.s.cfg.IdleTimeout - idle)
		return
	}
	e.ep.Abort()
	e.finish(timedOut, fmt.Sprintf("no progress for %v", idle))
}

// fail ends the end on an endpoint error.
func (e *end) fail(err tcpip.Error, op string) {
	o := failed
	switch err.(type) {
	case *tcpip.ErrConnectionReset, *tcpip.ErrConnectionAborted, *tcpip.ErrConnectionRefused:
		o = reset
	case *tcpip.ErrTimeout:
		o = timedOut
	}
	e.ep.Abort()
	e.finish(o, fmt.Sprintf("%s: %v", op, err))
}

// finish records how the end ended and lets go of it (the endpoint is
// closed or aborted by the caller).
func (e *end) finish(o outcome, why string) {
	if e.ended {
		return
	}
	e.ended = true
	e.wq.EventUnregister(&e.entry)
	if e.kick != nil {
		e.kick.Stop()
	}
	e.dog.Stop()
	e.buf, e.out, e.outHash = nil, nil, nil
	e.s.endDone(e, o, why)
}

// streamSeed is the seed of a connection's request or response stream.
func streamSeed(id uint64, request bool) int64 {
	if request {
		return int64(2 * id)
	}
	return int64(2*id + 1)
}
