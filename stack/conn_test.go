package stack

import (
	"context"
	"errors"
	"io"
	"net"
	"net/netip"
	"os"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"golang.org/x/net/nettest"
	"gvisor.dev/gvisor/pkg/tcpip"
	"gvisor.dev/gvisor/pkg/tcpip/adapters/gonet"
	"gvisor.dev/gvisor/pkg/tcpip/link/pipe"
	gstack "gvisor.dev/gvisor/pkg/tcpip/stack"
	"gvisor.dev/gvisor/pkg/waiter"

	"github.com/netramp/netramp/nic/gso"
	"github.com/netramp/netramp/tcp"
)

var connAddr = netip.MustParseAddrPort("198.18.0.2:7000")

// stackPair is two stacks running our TCP over a pipe link, with tcp
// options o on both; stop closes them.
func stackPair(o tcp.Options) (a, b *Stack, stop func(), err error) {
	la, lb := pipe.New("", "", 1500)
	return stackPairOn(o, la, lb)
}

// stackPairOn is stackPair over the two ends of a link of the caller's.
func stackPairOn(o tcp.Options, la, lb gstack.LinkEndpoint) (a, b *Stack, stop func(), err error) {
	a, err = New(Options{TCP: o, NICs: []NIC{{Link: la, Addr: netip.MustParsePrefix("198.18.0.1/24")}}})
	if err != nil {
		return nil, nil, nil, err
	}
	b, err = New(Options{TCP: o, NICs: []NIC{{Link: lb, Addr: netip.MustParsePrefix("198.18.0.2/24")}}})
	if err != nil {
		a.Close()
		return nil, nil, nil, err
	}
	return a, b, func() { a.Close(); b.Close() }, nil
}

// dialer opens a connection from a stack: ours, or gonet over the same
// stack and TCP, for the parity test.
type dialer func(ctx context.Context, s *Stack, addr netip.AddrPort) (net.Conn, error)

func ourDial(ctx context.Context, s *Stack, addr netip.AddrPort) (net.Conn, error) {
	return s.Dial(ctx, addr)
}

func gonetDial(ctx context.Context, s *Stack, addr netip.AddrPort) (net.Conn, error) {
	fa, proto := fullAddr(addr)
	return gonet.DialContextTCP(ctx, s.s, fa, proto)
}

// connected returns a's conn dialled by dial to b's listener and b's
// accepted conn; stop closes both, the listener and the stacks.
func connected(a, b *Stack, dial dialer) (c1, c2 net.Conn, stop func(), err error) {
	l, err := b.Listen(connAddr)
	if err != nil {
		return nil, nil, nil, err
	}
	acc := make(chan net.Conn, 1)
	go func() {
		c, err := l.Accept()
		if err != nil {
			c = nil
		}
		acc <- c
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c1, err = dial(ctx, a, connAddr)
	if err != nil {
		l.Close()
		return nil, nil, nil, err
	}
	c2 = <-acc
	if c2 == nil {
		c1.Close()
		l.Close()
		return nil, nil, nil, errors.New("accept failed")
	}
	return c1, c2, func() { c1.Close(); c2.Close(); l.Close() }, nil
}

// connPair is connected over a fresh stackPair with options o, closed at
// the test's end.
func connPair(t *testing.T, o tcp.Options, dial dialer) (c1, c2 net.Conn) {
	t.Helper()
	la, lb := pipe.New("", "", 1500)
	return connPairOn(t, o, la, lb, dial)
}

// connPairOn is connPair over the two ends of a link of the caller's.
func connPairOn(t *testing.T, o tcp.Options, la, lb gstack.LinkEndpoint, dial dialer) (c1, c2 net.Conn) {
	t.Helper()
	a, b, stopStacks, err := stackPairOn(o, la, lb)
	if err != nil {
		t.Fatal(err)
	}
	c1, c2, stop, err := connected(a, b, dial)
	if err != nil {
		stopStacks()
		t.Fatal(err)
	}
	t.Cleanup(func() { stop(); stopStacks() })
	return c1, c2
}

// TestConnSatisfiesNetConn runs x/net's net.Conn conformance suite on our
// conn: basic I/O, ping-pong, reads and writes racing deadlines, deadlines
// past, present and future, Close while blocked, concurrent methods. Run it
// under -race too: the suite says what the detector is for.
func TestConnSatisfiesNetConn(t *testing.T) {
	nettest.TestConn(t, func() (c1, c2 net.Conn, stop func(), err error) {
		a, b, stopStacks, err := stackPair(tcp.Options{})
		if err != nil {
			return nil, nil, nil, err
		}
		c1, c2, stopConns, err := connected(a, b, ourDial)
		if err != nil {
			stopStacks()
			return nil, nil, nil, err
		}
		return c1, c2, func() { stopConns(); stopStacks() }, nil
	})
}

func TestDialAndAcceptReturnOurConnOnOurTCP(t *testing.T) {
	c1, c2 := connPair(t, tcp.Options{}, ourDial)
	for _, c := range []net.Conn{c1, c2} {
		if _, ok := c.(*conn); !ok {
			t.Fatalf("%T, want *stack.conn", c)
		}
	}
	if got, want := c1.RemoteAddr().String(), connAddr.String(); got != want {
		t.Errorf("dialler's RemoteAddr %s, want %s", got, want)
	}
	if got, want := c2.LocalAddr().String(), connAddr.String(); got != want {
		t.Errorf("accepted LocalAddr %s, want %s", got, want)
	}
	if c1.LocalAddr().String() != c2.RemoteAddr().String() {
		t.Errorf("dialler's LocalAddr %s, accepted RemoteAddr %s: want the same", c1.LocalAddr(), c2.RemoteAddr())
	}
}

// waitRegistered returns once a call of c waits for events (its entry is
// on the endpoint's queue), or when stop is set.
func waitRegistered(c *conn, ev waiter.EventMask, stop *atomic.Bool) {
	for c.wq.Events()&ev == 0 && (stop == nil || !stop.Load()) {
		runtime.Gosched()
	}
}

// waitParked returns once n of this process's goroutines wait in a conn's
// block, called from the conn method op ("Read" or "Write"), for the wake
// of their entry, a deadline change or Close. A call parked there looks at
// its deadline and at Close again only when woken, so a test that changes
// either after this sees whether the change wakes it; one that changes
// them after waitRegistered alone could land before the call's own look,
// and pass without the wake. Go's goroutine dump names the state ("chan
// receive") and every frame, inlined ones too.
func waitParked(t *testing.T, op string, n int) {
	t.Helper()
	buf := make([]byte, 1<<20)
	for end := time.Now().Add(blockedFor); time.Now().Before(end); time.Sleep(time.Millisecond) {
		k := runtime.Stack(buf, true)
		got := 0
		for _, g := range strings.Split(string(buf[:k]), "\n\n") {
			if strings.Contains(g, "[chan receive") && strings.Contains(g, "stack.(*conn).block(") && strings.Contains(g, "stack.(*conn)."+op+"(") {
				got++
			}
		}
		if got >= n {
			return
		}
	}
	t.Fatalf("no %d %s calls parked after %v", n, op, blockedFor)
}

// stopPeer ends an allocation case: it stops the peer goroutine, closes c
// (which ends a peer blocked on it), waits for the peer to return and fails
// the test on the error the measured calls met.
func stopPeer(t *testing.T, stop *atomic.Bool, c net.Conn, done <-chan struct{}, err error) {
	t.Helper()
	stop.Store(true)
	c.Close()
	<-done
	if err != nil {
		t.Fatal(err)
	}
}

// TestConnSteadyReadAndWriteAllocateNothing: issue 12. Between two stacks
// over an in-memory link, a steady Read and a steady Write allocate
// nothing, waits included: each run of the ping-pong has a Read that waits
// (the peer answers only once the Read's entry is registered), and each
// run of the bulk case a Write that must wait (it writes more than the
// send queue and the peer's receive buffer hold, and the peer reads only
// while the writer waits).
func TestConnSteadyReadAndWriteAllocateNothing(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector allocates on its own: run this test without -race")
	}
	const runs = 200
	t.Run("ping-pong", func(t *testing.T) {
		c1, c2 := connPair(t, tcp.Options{}, ourDial)
		a := c1.(*conn)
		var stop atomic.Bool
		done := make(chan struct{})
		go func() { // the echo: answers once a's Read waits
			defer close(done)
			buf := make([]byte, 1000)
			for {
				if _, err := io.ReadFull(c2, buf); err != nil {
					return
				}
				waitRegistered(a, waiter.ReadableEvents, &stop)
				if _, err := c2.Write(buf); err != nil {
					return
				}
			}
		}()
		msg, got := make([]byte, 1000), make([]byte, 1000)
		var err error
		n := testing.AllocsPerRun(runs, func() {
			if err == nil {
				_, err = a.Write(msg)
			}
			if err == nil {
				_, err = io.ReadFull(a, got)
			}
		})
		stopPeer(t, &stop, c1, done, err)
		if n != 0 {
			t.Fatalf("%v allocations per Write and waiting Read, want 0", n)
		}
	})
	bulk := func(t *testing.T, la, lb gstack.LinkEndpoint) {
		const chunk = 256 << 10
		c1, c2 := connPairOn(t, tcp.Options{SendBufferMax: 16 << 10, ReceiveBufferMax: 32 << 10}, la, lb, ourDial)
		a := c1.(*conn)
		var stop atomic.Bool
		var read atomic.Int64
		done := make(chan struct{})
		go func() { // the sink: reads only while a's Write waits
			defer close(done)
			buf := make([]byte, 64<<10)
			for !stop.Load() {
				waitRegistered(a, waiter.WritableEvents, &stop)
				n, err := c2.Read(buf)
				read.Add(int64(n))
				if err != nil {
					return
				}
			}
		}()
		msg := make([]byte, chunk)
		var err error
		n := testing.AllocsPerRun(runs, func() {
			if err == nil {
				_, err = a.Write(msg)
			}
		})
		stopPeer(t, &stop, c1, done, err)
		if n != 0 {
			t.Fatalf("%v allocations per waiting %d-byte Write, want 0", n, chunk)
		}
		if read.Load() < (runs-1)*chunk {
			t.Fatalf("the sink read %d bytes of %d", read.Load(), (runs+1)*chunk)
		}
	}
	t.Run("bulk", func(t *testing.T) {
		la, lb := pipe.New("", "", 1500)
		bulk(t, la, lb)
	})
	// A link that writes bursts (nic.BurstWriter): the writer's segments
	// go out in gathered writes, a batch (stack/qdisc.go) each, and neither
	// a batch nor its token allocates.
	t.Run("bulk-gathered", func(t *testing.T) {
		la, lb, err := gso.NewPipe(1500, gso.LinkOptions{NoGSO: true})
		if err != nil {
			t.Fatal(err)
		}
		ga := &gatherCount{Link: la}
		bulk(t, ga, lb)
		if ga.gathered.Load() == 0 {
			t.Fatal("no write of several packets: the transfer gathered nothing")
		}
	})
}

// gatherCount is a gso.Link that counts its writes of several packets.
type gatherCount struct {
	*gso.Link
	gathered atomic.Int64
}

func (g *gatherCount) WritePackets(pkts gstack.PacketBufferList) (int, tcpip.Error) {
	if pkts.Len() > 1 {
		g.gathered.Add(1)
	}
	return g.Link.WritePackets(pkts)
}

// blockedFor is how long a test lets a call stay blocked before it calls
// it hung. It bounds a missed wake-up, not a speed.
const blockedFor = 10 * time.Second

// result is a Read's or Write's outcome, delivered by a goroutine.
type result struct {
	n   int
	err error
}

func readAsync(c net.Conn, b []byte) <-chan result {
	ch := make(chan result, 1)
	go func() { n, err := c.Read(b); ch <- result{n, err} }()
	return ch
}

// writeUntilError writes until an error: with no reader, the send queue
// fills and the last Write blocks.
func writeUntilError(c net.Conn) <-chan result {
	ch := make(chan result, 1)
	go func() {
		buf := make([]byte, 64<<10)
		for {
			if n, err := c.Write(buf); err != nil {
				ch <- result{n, err}
				return
			}
		}
	}()
	return ch
}

func await(t *testing.T, ch <-chan result, what string) result {
	t.Helper()
	select {
	case r := <-ch:
		return r
	case <-time.After(blockedFor):
		t.Fatalf("%s still blocked after %v", what, blockedFor)
	}
	return result{}
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout() && errors.Is(err, os.ErrDeadlineExceeded)
}

func TestConnDeadlineInThePastFailsAtOnce(t *testing.T) {
	c1, _ := connPair(t, tcp.Options{}, ourDial)
	c1.SetDeadline(time.Now().Add(-time.Second))
	if n, err := c1.Write([]byte("x")); n != 0 || !isTimeout(err) {
		t.Errorf("Write past the deadline = %d, %v; want 0 and a timeout", n, err)
	}
	if n, err := c1.Read(make([]byte, 10)); n != 0 || !isTimeout(err) {
		t.Errorf("Read past the deadline = %d, %v; want 0 and a timeout", n, err)
	}
	var oe *net.OpError
	if _, err := c1.Read(make([]byte, 10)); !errors.As(err, &oe) || oe.Op != "read" {
		t.Errorf("Read past the deadline: %#v, want a *net.OpError for read", err)
	}
}

// parkedReadAndWrite is a conn with a Read waiting for data and a Write
// waiting for room (16 KB buffers, filled), both parked.
func parkedReadAndWrite(t *testing.T) (c net.Conn, rd, wr <-chan result) {
	t.Helper()
	c, _ = connPair(t, tcp.Options{SendBufferMax: 16 << 10, ReceiveBufferMax: 16 << 10}, ourDial)
	rd = readAsync(c, make([]byte, 10))
	wr = writeUntilError(c)
	waitParked(t, "Read", 1)
	waitParked(t, "Write", 1)
	return c, rd, wr
}

// TestConnPastDeadlineWakesBlockedCalls: a deadline moved into the past
// ends a Read and a Write already waiting, with a timeout.
func TestConnPastDeadlineWakesBlockedCalls(t *testing.T) {
	c1, rd, wr := parkedReadAndWrite(t)
	c1.SetDeadline(time.Now().Add(-time.Second))
	if r := await(t, rd, "Read"); !isTimeout(r.err) {
		t.Errorf("blocked Read: %v, want a timeout", r.err)
	}
	if r := await(t, wr, "Write"); !isTimeout(r.err) {
		t.Errorf("blocked Write: %v, want a timeout", r.err)
	}
}

// TestConnFutureDeadlineEndsBlockedRead: a Read waiting with a deadline
// returns a timeout once the deadline passes.
func TestConnFutureDeadlineEndsBlockedRead(t *testing.T) {
	c1, _ := connPair(t, tcp.Options{}, ourDial)
	c1.SetReadDeadline(time.Now().Add(20 * time.Millisecond))
	if r := await(t, readAsync(c1, make([]byte, 10)), "Read"); !isTimeout(r.err) {
		t.Errorf("Read: %v, want a timeout", r.err)
	}
}

// TestConnLaterDeadlineExtendsBlockedRead: a deadline set while a Read
// waits replaces the one it started with: the Read outlives the first and
// returns the data that comes after it.
func TestConnLaterDeadlineExtendsBlockedRead(t *testing.T) {
	c1, c2 := connPair(t, tcp.Options{}, ourDial)
	const first = 300 * time.Millisecond
	start := time.Now()
	c1.SetReadDeadline(start.Add(first))
	rd := readAsync(c1, make([]byte, 10))
	waitParked(t, "Read", 1)
	c1.SetReadDeadline(time.Now().Add(time.Hour))
	time.Sleep(time.Until(start.Add(first + 200*time.Millisecond)))
	if _, err := c2.Write([]byte("late")); err != nil {
		t.Fatal(err)
	}
	if r := await(t, rd, "Read"); r.err != nil || r.n != 4 {
		t.Errorf("Read = %d, %v; want the 4 bytes sent after the first deadline", r.n, r.err)
	}
}

// TestConnCloseUnblocksReadAndWrite: Close ends a waiting Read and Write
// with net.ErrClosed, and later calls fail the same way.
func TestConnCloseUnblocksReadAndWrite(t *testing.T) {
	c1, rd, wr := parkedReadAndWrite(t)
	if err := c1.Close(); err != nil {
		t.Fatal(err)
	}
	if r := await(t, rd, "Read"); !errors.Is(r.err, net.ErrClosed) {
		t.Errorf("blocked Read after Close: %v, want net.ErrClosed", r.err)
	}
	if r := await(t, wr, "Write"); !errors.Is(r.err, net.ErrClosed) {
		t.Errorf("blocked Write after Close: %v, want net.ErrClosed", r.err)
	}
	if _, err := c1.Read(make([]byte, 1)); !errors.Is(err, net.ErrClosed) {
		t.Errorf("Read after Close: %v, want net.ErrClosed", err)
	}
	if err := c1.Close(); !errors.Is(err, net.ErrClosed) {
		t.Errorf("second Close: %v, want net.ErrClosed", err)
	}
}

// TestListenerCloseUnblocksAccept: Close ends a waiting Accept with
// net.ErrClosed.
func TestListenerCloseUnblocksAccept(t *testing.T) {
	_, b, stop, err := stackPair(tcp.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	l, err := b.Listen(connAddr)
	if err != nil {
		t.Fatal(err)
	}
	got := make(chan error, 1)
	go func() { _, err := l.Accept(); got <- err }()
	ll := l.(*listener)
	waitRegistered(&conn{wq: &ll.q}, waiter.ReadableEvents, nil)
	l.Close()
	select {
	case err := <-got:
		if !errors.Is(err, net.ErrClosed) {
			t.Errorf("Accept after Close: %v, want net.ErrClosed", err)
		}
	case <-time.After(blockedFor):
		t.Fatal("Accept still blocked after Close")
	}
}

// kind names an error's class as a caller tells it: io.EOF, a timeout, a
// connection reset, another error, none.
func kind(err error) string {
	var ne net.Error
	switch {
	case err == nil:
		return "none"
	case err == io.EOF:
		return "EOF"
	case errors.As(err, &ne) && ne.Timeout():
		return "timeout"
	}
	var oe *net.OpError
	if !errors.As(err, &oe) {
		return "not an OpError"
	}
	if oe.Err.Error() == "connection reset by peer" {
		return oe.Op + ": reset"
	}
	return oe.Op + ": error"
}

// TestConnErrorsMatchGonet: our conn and gVisor's gonet, each over our
// TCP, report the end of a stream, a reset and a shut-down side alike (the
// same class; ours adds the kernel's errno).
func TestConnErrorsMatchGonet(t *testing.T) {
	cases := []struct {
		name string
		// run drives c (the adapter under test) and its peer p, and
		// returns the error of the step the case is about.
		run   func(t *testing.T, c, p net.Conn) error
		want  string
		errno error // what errors.Is finds in ours; nil: none checked
	}{
		{"read after the peer's FIN", func(t *testing.T, c, p net.Conn) error {
			p.Write([]byte("data"))
			p.Close()
			b := make([]byte, 10)
			if n, err := io.ReadFull(c, b[:4]); n != 4 {
				t.Fatalf("read the data: %d, %v", n, err)
			}
			_, err := c.Read(b)
			return err
		}, "EOF", nil},
		{"read after CloseRead", func(t *testing.T, c, p net.Conn) error {
			if err := c.(interface{ CloseRead() error }).CloseRead(); err != nil {
				t.Fatal(err)
			}
			_, err := c.Read(make([]byte, 10))
			return err
		}, "EOF", nil},
		{"read after the peer's reset", func(t *testing.T, c, p net.Conn) error {
			c.Write([]byte("unread")) // the peer closes with it unread: a reset
			waitReadable(t, p)
			p.Close()
			_, err := c.Read(make([]byte, 10))
			return err
		}, "read: reset", syscall.ECONNRESET},
		{"write after CloseWrite", func(t *testing.T, c, p net.Conn) error {
			if err := c.(interface{ CloseWrite() error }).CloseWrite(); err != nil {
				t.Fatal(err)
			}
			_, err := c.Write([]byte("x"))
			return err
		}, "write: error", syscall.EPIPE},
		{"write after the peer's reset", func(t *testing.T, c, p net.Conn) error {
			c.Write([]byte("unread"))
			waitReadable(t, p)
			p.Close()
			if _, err := c.Read(make([]byte, 1)); err == nil {
				t.Fatal("read after the reset succeeded")
			}
			_, err := c.Write([]byte("x"))
			return err
		}, "write: reset", syscall.ECONNRESET},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			for _, ad := range []struct {
				name string
				dial dialer
			}{{"gonet", gonetDial}, {"ours", ourDial}} {
				c, p := connPair(t, tcp.Options{}, ad.dial)
				c.SetDeadline(time.Now().Add(blockedFor))
				err := tc.run(t, c, p)
				if got := kind(err); got != tc.want {
					t.Errorf("%s: %v is %s, want %s", ad.name, err, got, tc.want)
				}
				if ad.name == "ours" && tc.errno != nil && !errors.Is(err, tc.errno) {
					t.Errorf("ours: %v is not %v", err, tc.errno)
				}
			}
		})
	}
}

// waitReadable returns once c's peer data has arrived at c.
func waitReadable(t *testing.T, c net.Conn) {
	t.Helper()
	deadline := time.Now().Add(blockedFor)
	for c.(*conn).ep.Readiness(waiter.ReadableEvents) == 0 {
		if time.Now().After(deadline) {
			t.Fatal("the data never arrived")
		}
		runtime.Gosched()
	}
}

// TestConnOneReadAndOneWriteRunConcurrently: a Read and a Write of one
// conn, each in its own goroutine, both ends at once (run with -race).
func TestConnOneReadAndOneWriteRunConcurrently(t *testing.T) {
	c1, c2 := connPair(t, tcp.Options{SendBufferMax: 32 << 10, ReceiveBufferMax: 32 << 10}, ourDial)
	const total = 4 << 20
	var wg sync.WaitGroup
	errs := make(chan error, 4)
	for _, c := range []net.Conn{c1, c2} {
		wg.Add(2)
		go func() {
			defer wg.Done()
			buf := make([]byte, 8<<10)
			for sent := 0; sent < total; sent += len(buf) {
				if _, err := c.Write(buf); err != nil {
					errs <- err
					return
				}
			}
		}()
		go func() {
			defer wg.Done()
			if _, err := io.ReadFull(c, make([]byte, total)); err != nil {
				errs <- err
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

// A Set*Deadline that passed its closed check before Close ran, and reaches
// its direction after Close stopped it, arms no timer: a timer armed then
// would keep the closed conn reachable until it fired, up to the deadline
// (found by the concurrency soak). The interleaving is made deterministic
// by calling the direction's steps in that order.
func TestDeadlineSetAfterCloseArmsNoTimer(t *testing.T) {
	for _, tc := range []struct {
		name   string
		before bool // a deadline, and so a timer, was set before Close
	}{{"no timer yet", false}, {"timer made before", true}} {
		t.Run(tc.name, func(t *testing.T) {
			var d direction
			if tc.before {
				d.set(time.Now().Add(time.Hour))
			}
			d.stop()
			d.set(time.Now().Add(time.Hour))
			if d.timer != nil && d.timer.Stop() {
				t.Fatal("a deadline set after Close stopped the direction armed its timer")
			}
		})
	}
}
