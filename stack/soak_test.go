package stack

// A real-time soak of conn's methods called at once, by several goroutines
// a side, while connections are dialled, accepted and torn down around
// them. Run it under the race detector (ci/test.sh does); -soak.duration
// (or NETRAMP_SOAK_DURATION) makes it minutes long.

import (
	"context"
	"encoding/binary"
	"errors"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"os"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	gstack "gvisor.dev/gvisor/pkg/tcpip/stack"

	"github.com/netramp/netramp/nic/gso"
	"github.com/netramp/netramp/tcp"
)

var soakDuration = flag.Duration("soak.duration", 0,
	"how long the concurrency soak opens connections on each link (0: 3 s, 1 s with -short; NETRAMP_SOAK_DURATION sets it too)")

// soakLength is how long the soak opens new connections.
func soakLength(t *testing.T) time.Duration {
	if *soakDuration > 0 {
		return *soakDuration
	}
	if s := os.Getenv("NETRAMP_SOAK_DURATION"); s != "" {
		d, err := time.ParseDuration(s)
		if err != nil || d <= 0 {
			t.Fatalf("NETRAMP_SOAK_DURATION=%q: want a positive duration", s)
		}
		return d
	}
	if testing.Short() {
		return time.Second
	}
	return 3 * time.Second
}

// soakHang is how long past the soak's length a goroutine may take to
// return before the soak calls it hung: a hang detector, not a speed.
const soakHang = 2 * time.Minute

const (
	soakWriters  = 3        // writers a side; a byte's top two bits name its writer
	soakReaders  = 2        // readers a side
	soakQuotaMax = 96 << 10 // the most one writer writes on one connection
)

// soakByte is byte off of writer w's stream: w in the top two bits and a
// hash of off in the low six, so a byte lost, repeated or moved within w's
// stream fails the comparison (63 times in 64 for each byte it shifts),
// whichever writers' bytes it lies between.
func soakByte(w int, off int64) byte {
	return byte(w<<6) | byte(uint32(off)*0x9e3779b1>>26)
}

// A connection's mode: how it ends.
type soakMode int

const (
	soakClean       soakMode = iota // both sides write their quotas, CloseWrite, read to EOF, Close
	soakAbortClient                 // the dialler Closes at a random moment
	soakAbortServer                 // the accepting side Closes at a random moment
	soakAbortBoth                   // both do
	soakModes
)

func (m soakMode) String() string {
	return [...]string{"clean", "abort-client", "abort-server", "abort-both"}[m]
}

func (m soakMode) aborts(side int) bool {
	return m == soakAbortBoth || (m == soakAbortClient && side == 0) || (m == soakAbortServer && side == 1)
}

// soakTx is what one side's writers reported: per writer, the bytes its
// Writes said they wrote (the sum of n, errors or not) and the stream
// offset at the end of each Write.
type soakTx struct {
	written [soakWriters]int64
	ends    [soakWriters][]int64
}

// soakRx is what one side's readers received, fed in stream order (they
// read under one lock, so the order the conn handed bytes out is known).
type soakRx struct {
	got     [soakWriters]int64   // bytes received from each writer
	runEnds [soakWriters][]int64 // offsets in a writer's stream where another writer's bytes followed
	last    int                  // the writer of the previous byte; -1 before the first
	bad     string               // the first byte that was not its writer's next
	end     error                // what ended the readers: io.EOF or the error
}

// take checks b, the next bytes of the stream, byte by byte.
func (r *soakRx) take(b []byte) {
	if r.bad != "" {
		return
	}
	for i, c := range b {
		w := int(c >> 6)
		if w >= soakWriters {
			r.bad = fmt.Sprintf("byte %#x (%d of a read of %d) names writer %d: there are %d", c, i, len(b), w, soakWriters)
			return
		}
		if want := soakByte(w, r.got[w]); c != want {
			r.bad = fmt.Sprintf("writer %d's byte %d is %#x, want %#x (%d of a read of %d)", w, r.got[w], c, want, i, len(b))
			return
		}
		if r.last >= 0 && r.last != w {
			r.runEnds[r.last] = append(r.runEnds[r.last], r.got[r.last])
		}
		r.got[w]++
		r.last = w
	}
}

// Write lets WriteTo feed r.
func (r *soakRx) Write(b []byte) (int, error) { r.take(b); return len(b), nil }

// soakSide is one side's record of a connection.
type soakSide struct {
	tx     soakTx
	rx     soakRx
	closes atomic.Int32 // Close calls that returned nil
	mu     sync.Mutex
	errs   map[string]int // the errors its calls returned, by kind
}

func (s *soakSide) count(kind string) {
	s.mu.Lock()
	s.errs[kind]++
	s.mu.Unlock()
}

// soakPair is one connection's record, both sides; the client makes it and
// sends its id in-band, so the accepting side finds it.
type soakPair struct {
	id    uint64
	mode  soakMode
	seed  uint64
	sides [2]soakSide // 0: the dialler, 1: the accepting side
	left  atomic.Int32
}

// soakKind names err's class; a timeout that is not
// os.ErrDeadlineExceeded is a kind of its own, which every check refuses.
func soakKind(err error) string {
	var ne net.Error
	switch {
	case errors.Is(err, os.ErrDeadlineExceeded):
		if !errors.As(err, &ne) || !ne.Timeout() {
			return "deadline-not-a-timeout"
		}
		return "deadline"
	case errors.As(err, &ne) && ne.Timeout():
		return "timeout-not-ErrDeadlineExceeded"
	case err == io.EOF:
		return "eof"
	case errors.Is(err, net.ErrClosed):
		return "closed"
	case errors.Is(err, syscall.ECONNRESET):
		return "reset"
	case errors.Is(err, syscall.EPIPE):
		return "pipe"
	case errors.Is(err, syscall.ECONNABORTED):
		return "aborted"
	}
	return fmt.Sprintf("other (%v)", err)
}

// soakAllowed are the error kinds a connection of each mode may see: a
// clean one only deadlines (and the EOF that ends it).
func soakAllowed(m soakMode, kind string) bool {
	switch kind {
	case "deadline", "eof":
		return true
	case "closed", "reset", "pipe", "aborted":
		return m != soakClean
	}
	return false
}

// soak is one run: its stats, the pairs in flight and the failures.
type soak struct {
	t      *testing.T
	pairs  sync.Map // id → *soakPair
	nextID atomic.Uint64

	mu       sync.Mutex
	failures []string

	conns     [soakModes]atomic.Int64
	churned   atomic.Int64 // dials cut short by their context, or closed at once
	orphans   atomic.Int64 // accepted conns whose dialler gave up before the id
	bytes     atomic.Int64
	deadlines atomic.Int64
}

func (s *soak) fail(format string, args ...any) {
	s.mu.Lock()
	if len(s.failures) < 20 {
		s.failures = append(s.failures, fmt.Sprintf(format, args...))
	}
	s.mu.Unlock()
}

// TestSoakConcurrentConnCallsDeliverEveryByteAndReturn: between two
// stacks, connections opened and torn down for the soak's length, each side
// of each calling Read (and WriteTo), Write, Close, CloseWrite and the
// three Set*Deadline from several goroutines at random moments, end with no
// panic, no hang and no goroutine left; every byte a side's Writes reported
// arrives intact, in order, and in one piece a Write, at a peer that reads
// to EOF, and no byte past what they reported arrives anywhere; every
// timeout is os.ErrDeadlineExceeded, and a connection closed cleanly sees
// no other error. Over gso.NewPipe always, over two TAPs on a Linux bridge
// when root.
func TestSoakConcurrentConnCallsDeliverEveryByteAndReturn(t *testing.T) {
	length := soakLength(t)
	for _, link := range []struct {
		name    string
		links   func(t *testing.T) (la, lb gstack.LinkEndpoint)
		workers int
	}{
		{"pipe", soakPipeLinks, 6},
		{"tap", soakTAPLinks, 4},
	} {
		t.Run(link.name, func(t *testing.T) {
			runSoak(t, length, link.workers, link.links)
		})
	}
}

func soakPipeLinks(t *testing.T) (la, lb gstack.LinkEndpoint) {
	a, b, err := gso.NewPipe(1500, gso.LinkOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return a, b
}

func runSoak(t *testing.T, length time.Duration, workers int, links func(t *testing.T) (la, lb gstack.LinkEndpoint)) {
	base := runtime.NumGoroutine()
	la, lb := links(t)
	// Small buffers: Writes wait for room and Reads for data all the time.
	o := tcp.Options{SendBufferMax: 16 << 10, ReceiveBufferMax: 16 << 10}
	a, b, stopStacks, err := stackPairOn(o, la, lb)
	if err != nil {
		t.Fatal(err)
	}
	l, err := b.Listen(connAddr)
	if err != nil {
		stopStacks()
		t.Fatal(err)
	}
	s := &soak{t: t}
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { // the accept loop, until the listener closes
		defer wg.Done()
		for {
			c, err := l.Accept()
			if err != nil {
				if !errors.Is(err, net.ErrClosed) {
					s.fail("Accept: %v, want a conn or net.ErrClosed", err)
				}
				return
			}
			wg.Add(1)
			go func() { defer wg.Done(); s.serve(c) }()
		}
	}()
	end := time.Now().Add(length)
	var dialers sync.WaitGroup
	for i := range workers {
		dialers.Add(1)
		go func() {
			defer dialers.Done()
			rng := rand.New(rand.NewPCG(uint64(i), uint64(time.Now().UnixNano())))
			for time.Now().Before(end) {
				s.client(a, rng)
			}
		}()
	}
	done := make(chan struct{})
	go func() {
		dialers.Wait()
		l.Close() // ends the accept loop; sessions already accepted run on
		wg.Wait()
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(length + soakHang):
		buf := make([]byte, 4<<20)
		buf = buf[:runtime.Stack(buf, true)]
		t.Fatalf("goroutines still running %v after the soak's end: hung\n%s", soakHang, buf)
	}
	stopStacks()
	s.pairs.Range(func(k, v any) bool {
		s.fail("connection %d (%v): one side never finished", k, v.(*soakPair).mode)
		return true
	})
	for _, f := range s.failures {
		t.Error(f)
	}
	var per []string
	total := int64(0)
	for m := range soakModes {
		n := s.conns[m].Load()
		total += n
		per = append(per, fmt.Sprintf("%d %v", n, m))
	}
	t.Logf("%d connections (%v), %d dials churned, %d orphans; %d bytes checked, %d deadline errors",
		total, per, s.churned.Load(), s.orphans.Load(), s.bytes.Load(), s.deadlines.Load())
	// The claims must have been exercised: clean ends, aborts and deadlines.
	if s.conns[soakClean].Load() == 0 || s.conns[soakAbortBoth].Load()+s.conns[soakAbortClient].Load()+s.conns[soakAbortServer].Load() == 0 {
		t.Errorf("no clean or no aborted connection in %v: the soak proved nothing", length)
	}
	if s.deadlines.Load() == 0 {
		t.Errorf("no call met a deadline in %v: the soak proved nothing about them", length)
	}
	// Every goroutine the soak started, and the stacks', returns.
	for deadline := time.Now().Add(10 * time.Second); runtime.NumGoroutine() > base; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			buf := make([]byte, 1<<20)
			buf = buf[:runtime.Stack(buf, true)]
			t.Fatalf("%d goroutines 10 s after every close, %d before the soak\n%s", runtime.NumGoroutine(), base, buf)
		}
	}
}

// client dials one connection, in a mode picked at random, and runs the
// dialler's side of it. One dial in ten is churn: a context of at most a
// millisecond, and a Close at once if the dial made it.
func (s *soak) client(a *Stack, rng *rand.Rand) {
	if rng.IntN(10) == 0 {
		ctx, cancel := context.WithTimeout(context.Background(), time.Duration(rng.IntN(1000))*time.Microsecond)
		c, err := a.Dial(ctx, connAddr)
		cancel()
		s.churned.Add(1)
		if err != nil {
			if !errors.Is(err, context.DeadlineExceeded) {
				s.fail("dial with a short context: %v, want a conn or context.DeadlineExceeded", err)
			}
			return
		}
		if err := c.Close(); err != nil {
			s.fail("Close of a fresh conn: %v", err)
		}
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), soakHang)
	c, err := a.Dial(ctx, connAddr)
	cancel()
	if err != nil {
		s.fail("Dial: %v", err)
		time.Sleep(10 * time.Millisecond)
		return
	}
	p := &soakPair{id: s.nextID.Add(1), mode: soakMode(rng.IntN(int(soakModes))), seed: rng.Uint64()}
	if p.mode != soakClean && rng.IntN(2) == 0 {
		p.mode = soakClean // half the connections end cleanly
	}
	p.left.Store(2)
	s.pairs.Store(p.id, p)
	var id [8]byte
	binary.BigEndian.PutUint64(id[:], p.id)
	if _, err := c.Write(id[:]); err != nil {
		s.fail("connection %d: writing its id: %v", p.id, err)
		s.pairs.Delete(p.id)
		c.Close()
		return
	}
	s.side(c, p, 0)
}

// serve reads the id of an accepted conn and runs the accepting side.
func (s *soak) serve(c net.Conn) {
	var id [8]byte
	if _, err := io.ReadFull(c, id[:]); err != nil {
		// The dialler closed before its id: a churned dial.
		s.orphans.Add(1)
		c.Close()
		return
	}
	v, ok := s.pairs.Load(binary.BigEndian.Uint64(id[:]))
	if !ok {
		s.fail("accepted a connection with unknown id %d", binary.BigEndian.Uint64(id[:]))
		c.Close()
		return
	}
	s.side(c, v.(*soakPair), 1)
}

// side runs one side of p on c: soakWriters writers, soakReaders readers
// (reading under one lock, some Reads through WriteTo), a goroutine that
// sets deadlines at random, and, if p's mode aborts this side, two that
// Close it at a random moment. In the clean mode the writers' quotas end
// with CloseWrite; every side ends with a Close once its readers and
// writers are done.
func (s *soak) side(c net.Conn, p *soakPair, me int) {
	sd := &p.sides[me]
	sd.errs = map[string]int{}
	sd.rx.last = -1
	rng := rand.New(rand.NewPCG(p.seed, uint64(me)))
	seeds := [soakWriters + soakReaders + 3]uint64{}
	for i := range seeds {
		seeds[i] = rng.Uint64()
	}
	var roles, writers sync.WaitGroup
	// noteErr records a call's error; it says whether the call's loop goes
	// on (a deadline: the chaos moves it again soon).
	noteErr := func(err error) bool {
		k := soakKind(err)
		sd.count(k)
		if k == "deadline" {
			s.deadlines.Add(1)
			time.Sleep(50 * time.Microsecond)
			return true
		}
		return false
	}
	for w := range soakWriters {
		writers.Add(1)
		go func() {
			defer writers.Done()
			rng := rand.New(rand.NewPCG(seeds[w], 0))
			quota := int64(rng.IntN(soakQuotaMax + 1))
			buf := make([]byte, 8<<10)
			var off int64
			defer func() { sd.tx.written[w] = off }()
			for off < quota {
				k := int(min(int64(1+rng.IntN(len(buf))), quota-off))
				for i := range k {
					buf[i] = soakByte(w, off+int64(i))
				}
				n, err := c.Write(buf[:k])
				if n < 0 || n > k {
					s.fail("connection %d side %d: Write of %d returned %d", p.id, me, k, n)
					return
				}
				off += int64(n)
				sd.tx.ends[w] = append(sd.tx.ends[w], off)
				if err == nil && n != k {
					s.fail("connection %d side %d: Write of %d returned %d and no error", p.id, me, k, n)
					return
				}
				if err != nil && !noteErr(err) {
					return
				}
			}
		}()
	}
	roles.Add(1)
	go func() {
		defer roles.Done()
		writers.Wait()
		if p.mode == soakClean {
			if err := c.(interface{ CloseWrite() error }).CloseWrite(); err != nil {
				sd.count(soakKind(err))
			}
		}
	}()
	var rmu sync.Mutex // the readers' turn: the stream's order stays known
	for r := range soakReaders {
		roles.Add(1)
		go func() {
			defer roles.Done()
			rng := rand.New(rand.NewPCG(seeds[soakWriters+r], 0))
			buf := make([]byte, 32<<10)
			for {
				rmu.Lock()
				if sd.rx.end != nil {
					rmu.Unlock()
					return
				}
				var err error
				var n int
				if rng.IntN(4) == 0 {
					var n64 int64
					n64, err = c.(io.WriterTo).WriteTo(&sd.rx)
					n = int(n64)
					if err == nil {
						err = io.EOF // WriteTo's nil is the peer's FIN
					}
				} else {
					n, err = c.Read(buf[:1+rng.IntN(len(buf))])
					sd.rx.take(buf[:n])
				}
				s.bytes.Add(int64(n))
				if err != nil {
					if noteErr(err) {
						rmu.Unlock()
						continue
					}
					sd.rx.end = err
				}
				rmu.Unlock()
			}
		}()
	}
	stop := make(chan struct{})
	var extra sync.WaitGroup
	extra.Add(1)
	go func() { // deadlines, set at random moments to random times
		defer extra.Done()
		rng := rand.New(rand.NewPCG(seeds[soakWriters+soakReaders], 0))
		for {
			tm := time.NewTimer(time.Duration(rng.IntN(2000)) * time.Microsecond)
			select {
			case <-stop:
				tm.Stop()
				return
			case <-tm.C:
			}
			var at time.Time
			switch rng.IntN(8) {
			case 0:
				at = time.Now().Add(-time.Second)
			case 1, 2, 3:
				at = time.Now().Add(time.Duration(rng.IntN(3000)) * time.Microsecond)
			case 4:
				at = time.Now().Add(time.Hour)
			} // else zero: none
			var err error
			switch rng.IntN(3) {
			case 0:
				err = c.SetDeadline(at)
			case 1:
				err = c.SetReadDeadline(at)
			default:
				err = c.SetWriteDeadline(at)
			}
			if err != nil {
				sd.count(soakKind(err))
			}
		}
	}()
	if p.mode.aborts(me) {
		after := time.Duration(rng.IntN(30_000)) * time.Microsecond
		for range 2 {
			extra.Add(1)
			go func() {
				defer extra.Done()
				tm := time.NewTimer(after)
				select {
				case <-stop:
					tm.Stop()
				case <-tm.C:
				}
				if c.Close() == nil {
					sd.closes.Add(1)
				}
			}()
		}
	}
	writers.Wait()
	roles.Wait()
	close(stop)
	extra.Wait()
	if c.Close() == nil {
		sd.closes.Add(1)
	}
	if p.left.Add(-1) == 0 {
		s.pairs.Delete(p.id)
		s.check(p)
	}
}

// check judges a connection whose sides have both finished.
func (s *soak) check(p *soakPair) {
	s.conns[p.mode].Add(1)
	for me := range 2 {
		sd := &p.sides[me]
		if n := sd.closes.Load(); n != 1 {
			s.fail("connection %d (%v) side %d: %d Close calls returned nil, want exactly 1", p.id, p.mode, me, n)
		}
		for k, n := range sd.errs {
			if !soakAllowed(p.mode, k) {
				s.fail("connection %d (%v) side %d: %d errors of kind %s", p.id, p.mode, me, n, k)
			}
		}
		tx, rx := &sd.tx, &p.sides[1-me].rx
		dir := fmt.Sprintf("connection %d (%v) side %d to %d", p.id, p.mode, me, 1-me)
		if rx.bad != "" {
			s.fail("%s: %s", dir, rx.bad)
			continue
		}
		if p.mode == soakClean && rx.end != io.EOF {
			s.fail("%s: the reader ended with %v, want io.EOF on a clean close", dir, rx.end)
		}
		for w := range soakWriters {
			if rx.got[w] > tx.written[w] {
				s.fail("%s: writer %d's Writes reported %d bytes, %d arrived", dir, w, tx.written[w], rx.got[w])
			}
			if rx.end == io.EOF && rx.got[w] != tx.written[w] {
				s.fail("%s: the reader saw EOF after %d of the %d bytes writer %d's Writes reported", dir, rx.got[w], tx.written[w], w)
			}
			// A Write's bytes lie together: another writer's bytes
			// follow a writer's only where one of its Writes ended.
			for _, e := range rx.runEnds[w] {
				if _, ok := slices.BinarySearch(tx.ends[w], e); !ok {
					s.fail("%s: writer %d's bytes are split at offset %d, where none of its Writes ended", dir, w, e)
					break
				}
			}
		}
	}
}
