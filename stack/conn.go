// The application's view of one of our TCP's connections: a net.Conn whose
// steady Read and Write allocate nothing.

package stack

import (
	"bytes"
	"io"
	"math"
	"net"
	"net/netip"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"gvisor.dev/gvisor/pkg/buffer"
	"gvisor.dev/gvisor/pkg/tcpip"
	"gvisor.dev/gvisor/pkg/waiter"
)

// conn is a net.Conn over one of our TCP's endpoints. Everything a Read or
// a Write hands the endpoint lives here, made once per connection: the
// writer a Read fills, the reader a Write drains, and each direction's
// waiter entry and channel (the channel at the direction's first wait, so
// an idle connection holds none), the entry registered only for the length
// of a wait. So a Read or Write allocates nothing, waits included
// (TestConnSteadyReadAndWriteAllocateNothing); gVisor's gonet makes a writer
// per Read, a reader per Write and an entry and a channel per wait.
//
// Reads are serialised among themselves and so are Writes, as Go's net
// serialises them on a socket: one Read and one Write run at once, each
// with its own half of the struct.
//
// Errors follow Go's net package: io.EOF once the peer's FIN is read (or
// after CloseRead), a *net.OpError otherwise, whose Err is
// os.ErrDeadlineExceeded past a deadline, net.ErrClosed after Close, and
// for the endpoint's own errors the errno a kernel socket gives for the
// same event (errOf), so errors.Is(err, syscall.ECONNRESET) holds as it
// does on Linux. gonet reports the first two alike; it gives the endpoint's
// words as a plain error for the rest (the same text for a reset, "endpoint
// is closed for send" where this says "broken pipe"), and after Close it
// reports what the endpoint then says (io.EOF, closed for send), where this
// says net.ErrClosed, as a kernel socket's net.Conn does.
type conn struct {
	ep     tcpip.Endpoint
	wq     *waiter.Queue
	q      waiter.Queue   // the queue of an endpoint that Dial makes (wq is then &q)
	local  netip.AddrPort // fixed from the handshake on; made into a net.Addr when asked
	remote netip.AddrPort
	closed atomic.Bool

	rmu   sync.Mutex // serialises Reads and WriteTo; guards rw, views and stage
	rw    tcpip.SliceWriter
	views []*buffer.View // what one WriteTo step took off the receive queue
	stage *[]byte        // where a WriteTo step gathers short runs (stagePool's, held only during the step)
	rd    direction

	wmu sync.Mutex // serialises Writes; guards wr
	wr  bytes.Reader
	wd  direction
}

// direction is one way of a conn: the waiter entry a blocked call
// registers, the channel it waits on, and the deadline.
type direction struct {
	entry   waiter.Entry
	mask    waiter.EventMask
	waiting bool // entry is registered; only the call holding the direction's mutex touches it

	// deadline is the deadline as nanoseconds past epoch; 0 is none. A
	// call reads it without a lock; Set*Deadline writes it under mu.
	deadline atomic.Int64
	mu       sync.Mutex
	timer    *time.Timer // made by the first future deadline, Reset by later ones
	stopped  bool        // Close stopped the timer for good; set arms it no more
	// wake has capacity 1: the entry (which the endpoint's events,
	// Close's among them, fire), the deadline's timer and Set*Deadline
	// send without blocking. The first wait makes it, under mu; a send
	// before then has no waiter to wake.
	wake chan struct{}
}

// epoch is what deadlines are measured from: the monotonic clock of this
// process, as time.Since reads it, so a deadline costs a call one atomic
// load while none is set and one clock read while one is.
var epoch = time.Now()

// waitChan is d's channel, made with the entry's notifier the first time;
// only the call holding the direction's mutex calls it.
func (d *direction) waitChan() chan struct{} {
	if d.wake == nil {
		// control:stack-conn-wake-made-unlocked
		d.mu.Lock()
		d.wake = make(chan struct{}, 1)
		d.mu.Unlock()
		d.entry.Init(waiter.ChannelNotifier(d.wake), d.mask)
	}
	return d.wake
}

// poke wakes the call waiting on d, if any, to look again.
func (d *direction) poke() {
	d.mu.Lock()
	select {
	case d.wake <- struct{}{}: // a nil channel (no wait yet) is never ready
	default:
	}
	d.mu.Unlock()
}

// expired reports whether d's deadline has passed.
func (d *direction) expired() bool {
	dl := d.deadline.Load()
	return dl != 0 && int64(time.Since(epoch)) >= dl
}

// set moves d's deadline to t (zero: none) and wakes a waiting call, which
// then fails at once if t has passed or waits on until t. One timer serves
// every deadline of d: it only wakes the waiter, which reads the clock.
func (d *direction) set(t time.Time) {
	d.mu.Lock()
	// The deadline on the monotonic clock, as the timer counts: a wall
	// clock step between now and t moves neither.
	now := time.Now()
	wait := t.Sub(now)
	var dl int64 // 0: none
	if !t.IsZero() {
		el := now.Sub(epoch)
		dl = math.MaxInt64
		if wait <= math.MaxInt64-el {
			dl = max(int64(el+wait), 1)
		}
	}
	d.deadline.Store(dl)
	switch {
	// control:stack-conn-deadline-rearms-after-close
	case d.stopped:
		// A Set*Deadline that passed its closed check before Close ran
		// gets here after stop: arming the timer again would keep the
		// closed conn reachable from the runtime's timers until it fired.
	case !t.IsZero() && wait > 0:
		if d.timer == nil {
			d.timer = time.AfterFunc(wait, d.poke)
		} else {
			d.timer.Reset(wait)
		}
	case d.timer != nil:
		d.timer.Stop()
	}
	d.mu.Unlock()
	// control:stack-conn-deadline-set-does-not-wake
	d.poke()
}

// stop stops d's timer for good: the conn is closed.
func (d *direction) stop() {
	d.mu.Lock()
	d.stopped = true
	if d.timer != nil {
		d.timer.Stop()
	}
	d.mu.Unlock()
}

// newConn wraps a connected endpoint and its queue.
func newConn(ep tcpip.Endpoint, wq *waiter.Queue) *conn {
	c := &conn{}
	c.init(ep, wq)
	c.setAddrs()
	return c
}

func (c *conn) init(ep tcpip.Endpoint, wq *waiter.Queue) {
	c.ep, c.wq = ep, wq
	// HUp and Err too: a reset or an abort wakes both directions, whatever
	// readiness the endpoint reports with them.
	c.rd.mask = waiter.ReadableEvents | waiter.EventHUp | waiter.EventErr
	c.wd.mask = waiter.WritableEvents | waiter.EventHUp | waiter.EventErr
}

// setAddrs makes the addresses once: they are fixed from the handshake on.
func (c *conn) setAddrs() {
	if a, err := c.ep.GetLocalAddress(); err == nil {
		c.local = addrPort(a)
	}
	if a, err := c.ep.GetRemoteAddress(); err == nil {
		c.remote = addrPort(a)
	}
}

func addrPort(a tcpip.FullAddress) netip.AddrPort {
	ip, _ := netip.AddrFromSlice(a.Addr.AsSlice())
	return netip.AddrPortFrom(ip, a.Port)
}

func tcpAddr(a tcpip.FullAddress) *net.TCPAddr {
	return &net.TCPAddr{IP: net.IP(a.Addr.AsSlice()), Port: int(a.Port)}
}

// netAddr is ap as a net.Addr; nil for none, as net.Conn's methods say.
func netAddr(ap netip.AddrPort) net.Addr {
	if !ap.IsValid() {
		return nil
	}
	return net.TCPAddrFromAddrPort(ap)
}

// block is called by a Read or Write the endpoint refused with
// ErrWouldBlock. The first time it registers d's entry and returns at once:
// the caller tries again, so readiness that came between its try and the
// registration is not missed. After that it waits for the entry (the
// endpoint's events, Close's included) or a deadline change. It returns
// an error when the call must end.
func (c *conn) block(d *direction, op string) error {
	wake := d.waitChan()
	if !d.waiting {
		c.wq.EventRegister(&d.entry)
		d.waiting = true
		return c.mayGoOn(d, op)
	}
	<-wake
	return c.mayGoOn(d, op)
}

// unblock unregisters d's entry if a wait registered it.
func (c *conn) unblock(d *direction) {
	if d.waiting {
		c.wq.EventUnregister(&d.entry)
		d.waiting = false
	}
}

// mayGoOn is the error that ends a call in direction d before it tries the
// endpoint: Close, then the deadline.
func (c *conn) mayGoOn(d *direction, op string) error {
	if c.closed.Load() {
		return c.opError(op, net.ErrClosed)
	}
	if d.expired() {
		return c.opError(op, os.ErrDeadlineExceeded)
	}
	return nil
}

// Read implements net.Conn.
func (c *conn) Read(b []byte) (int, error) {
	c.rmu.Lock()
	defer c.rmu.Unlock()
	if err := c.mayGoOn(&c.rd, "read"); err != nil {
		return 0, err
	}
	if len(b) == 0 {
		return 0, nil
	}
	c.rw = b
	var res tcpip.ReadResult
	err := c.awaitRead(func() (terr tcpip.Error) {
		// control:stack-conn-allocates-per-read
		res, terr = c.ep.Read(&c.rw, tcpip.ReadOptions{})
		return terr
	})
	c.rw = nil // the caller's buffer is not ours to keep
	if err != nil {
		return 0, err
	}
	return res.Count, nil
}

// awaitRead calls try, a read from the endpoint, until its answer is not
// ErrWouldBlock, waiting for the read direction's events between tries, and
// gives that answer as net.Conn does: nil, io.EOF at the peer's FIN (or
// after CloseRead), an *net.OpError otherwise. The caller checked mayGoOn;
// c.rmu is held.
func (c *conn) awaitRead(try func() tcpip.Error) error {
	var terr tcpip.Error
	for {
		terr = try()
		if _, ok := terr.(*tcpip.ErrWouldBlock); !ok {
			break
		}
		if err := c.block(&c.rd, "read"); err != nil {
			c.unblock(&c.rd)
			return err
		}
	}
	c.unblock(&c.rd)
	switch terr.(type) {
	case nil:
		return nil
	case *tcpip.ErrClosedForReceive:
		if c.closed.Load() {
			return c.opError("read", net.ErrClosed)
		}
		return io.EOF
	}
	return c.endpointError("read", terr)
}

// viewReader is what our TCP's endpoint offers beyond tcpip.Endpoint: the
// receive queue's bytes as views that share its chunks (tcp's ReadViews).
type viewReader interface {
	ReadViews(dst []*buffer.View, max int) ([]*buffer.View, int, tcpip.Error)
}

const (
	// writeToTake is the most one WriteTo step takes off the receive queue.
	writeToTake = 256 << 10
	// writeToRun is the shortest run of contiguous bytes WriteTo hands the
	// writer where it lies; shorter runs are gathered in a staging buffer
	// of writeToStage bytes, io.Copy's own buffer size.
	writeToRun   = 16 << 10
	writeToStage = 32 << 10
)

// WriteTo implements io.WriterTo, which io.Copy prefers to Read: it hands w
// the received bytes until the peer's FIN (then it returns a nil error, as
// io.Copy expects), the read deadline, Close, or an error of the connection
// or of w. A run of contiguous bytes of at least writeToRun (the segments
// of one chunk of an in-memory sender's queue, a GRO aggregate) goes to w
// where it lies in the receive queue, copied by nobody on the way; shorter
// runs (a NIC's frames, each in its own buffer) are gathered first, so w
// sees writes of at least writeToRun bytes (bar the last), as from
// io.Copy's buffer, never one per segment. Bytes count as read when they
// are taken off the queue: those taken and not written when w fails are
// lost, as io.Copy loses what it read and could not write.
func (c *conn) WriteTo(w io.Writer) (int64, error) {
	vr, ok := c.ep.(viewReader)
	if !ok {
		return io.Copy(w, struct{ io.Reader }{c})
	}
	c.rmu.Lock()
	defer c.rmu.Unlock()
	var total int64
	for {
		n, err := c.writeToStep(vr, w)
		total += int64(n)
		if err == io.EOF {
			return total, nil
		}
		if err != nil {
			return total, err
		}
	}
}

// writeToStep is one step of WriteTo: it waits for received bytes, takes up
// to writeToTake of them and writes them to w. It returns io.EOF at the
// peer's FIN. c.rmu is held.
func (c *conn) writeToStep(vr viewReader, w io.Writer) (int, error) {
	if err := c.mayGoOn(&c.rd, "read"); err != nil {
		return 0, err
	}
	if err := c.awaitRead(func() (terr tcpip.Error) {
		// control:stack-writeto-allocates-per-step
		c.views, _, terr = vr.ReadViews(c.views[:0], writeToTake)
		return terr
	}); err != nil {
		return 0, err
	}
	n, err := c.writeViews(w)
	for i, v := range c.views {
		v.Release()
		c.views[i] = nil
	}
	return n, err
}

// stagePool holds the staging buffers of WriteTo steps: a step takes one at
// its first short run to gather and gives it back at its end, so a
// connection holds none between steps. A short connection (a few KB, where
// the stage is most of what it would allocate) then makes none of its own,
// and 10,000 idle connections hold none.
var stagePool = sync.Pool{New: func() any {
	b := make([]byte, 0, writeToStage)
	return &b
}}

// writeViews writes c.views to w: each run of contiguous bytes of at least
// writeToRun as it lies, shorter ones gathered in a staging buffer. A short
// run that is the step's last with nothing gathered before it also goes as
// it lies: gathering it would copy it and still make one write.
func (c *conn) writeViews(w io.Writer) (int, error) {
	defer c.releaseStage()
	written := 0
	for i := 0; i < len(c.views); {
		run := c.views[i].AsSlice()
		for i++; i < len(c.views); i++ {
			next := c.views[i].AsSlice()
			if !follows(run, next) {
				break
			}
			run = run[:len(run)+len(next)]
		}
		// control:stack-writeto-lone-short-run-staged
		alone := i == len(c.views) && c.staged() == 0
		// control:stack-writeto-short-runs-ungathered
		if len(run) < writeToRun && !alone {
			if c.staged()+len(run) > writeToStage {
				n, err := c.flushStage(w)
				written += n
				if err != nil {
					return written, err
				}
			}
			if c.stage == nil {
				c.stage = stagePool.Get().(*[]byte)
			}
			*c.stage = append(*c.stage, run...)
			continue
		}
		n, err := c.flushStage(w)
		written += n
		if err != nil {
			return written, err
		}
		// control:stack-writeto-copies-runs
		n, err = writeAll(w, run)
		written += n
		if err != nil {
			return written, err
		}
	}
	n, err := c.flushStage(w)
	return written + n, err
}

// staged is the bytes the step's staging buffer holds.
func (c *conn) staged() int {
	if c.stage == nil {
		return 0
	}
	return len(*c.stage)
}

// flushStage writes what the staging buffer gathered.
func (c *conn) flushStage(w io.Writer) (int, error) {
	if c.staged() == 0 {
		return 0, nil
	}
	n, err := writeAll(w, *c.stage)
	*c.stage = (*c.stage)[:0]
	return n, err
}

// releaseStage gives the step's staging buffer back to stagePool, its bytes
// written or, after a failed write, dropped with the step's.
func (c *conn) releaseStage() {
	if c.stage == nil {
		return
	}
	*c.stage = (*c.stage)[:0]
	// control:stack-writeto-stage-kept
	stagePool.Put(c.stage)
	c.stage = nil
}

// writeAll is one Write of b, a short one an error (io.Writer's contract).
func writeAll(w io.Writer, b []byte) (int, error) {
	n, err := w.Write(b)
	if err == nil && n < len(b) {
		err = io.ErrShortWrite
	}
	return n, err
}

// follows reports whether b's bytes start where a's end, in the same array,
// so a[:len(a)+len(b)] holds both.
func follows(a, b []byte) bool {
	return len(b) > 0 && cap(a) > len(a) && &a[:len(a)+1][len(a)] == &b[0]
}

// Write implements net.Conn: it returns once all of b is queued, or with
// the error that stopped it and the bytes queued before. A full send queue
// is waited out, never an error.
func (c *conn) Write(b []byte) (int, error) {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	if err := c.mayGoOn(&c.wd, "write"); err != nil {
		return 0, err
	}
	n := 0
	var err error
	for n < len(b) {
		c.wr.Reset(b[n:])
		k, terr := c.ep.Write(&c.wr, tcpip.WriteOptions{})
		n += int(k)
		switch terr.(type) {
		case nil:
			continue
		case *tcpip.ErrWouldBlock:
			err = c.block(&c.wd, "write")
		default:
			err = c.endpointError("write", terr)
		}
		if err != nil {
			break
		}
	}
	c.unblock(&c.wd)
	c.wr.Reset(nil)
	// control:stack-conn-write-error-forgets-n
	return n, err
}

// Close implements net.Conn: the endpoint closes (a FIN after the queued
// data, or a reset if unread data is left: RFC 9293 §3.10.4), and a Read or
// Write waiting on this conn returns net.ErrClosed.
func (c *conn) Close() error {
	if !c.closed.CompareAndSwap(false, true) {
		return c.opError("close", net.ErrClosed)
	}
	c.rd.stop()
	c.wd.stop()
	// The endpoint's Close wakes a waiting Read (ReadableEvents: the read
	// side ends) and Write (WritableEvents with the FIN, or every event
	// with a reset); the call then finds closed set and returns
	// net.ErrClosed. The endpoint owns that wake, for gonet's waiters as
	// for ours, so it has one home (tcp/conn.go Close).
	c.ep.Close()
	return nil
}

// CloseRead shuts down the reading side: Reads return io.EOF.
func (c *conn) CloseRead() error { return c.shutdown(tcpip.ShutdownRead) }

// CloseWrite shuts down the writing side: the peer reads our FIN after the
// data queued.
func (c *conn) CloseWrite() error { return c.shutdown(tcpip.ShutdownWrite) }

func (c *conn) shutdown(how tcpip.ShutdownFlags) error {
	if c.closed.Load() {
		return c.opError("close", net.ErrClosed)
	}
	if terr := c.ep.Shutdown(how); terr != nil {
		return c.endpointError("close", terr)
	}
	return nil
}

// LocalAddr implements net.Conn.
func (c *conn) LocalAddr() net.Addr { return netAddr(c.local) }

// RemoteAddr implements net.Conn.
func (c *conn) RemoteAddr() net.Addr { return netAddr(c.remote) }

// SetDeadline implements net.Conn.
func (c *conn) SetDeadline(t time.Time) error {
	if c.closed.Load() {
		return c.opError("set", net.ErrClosed)
	}
	c.rd.set(t)
	c.wd.set(t)
	return nil
}

// SetReadDeadline implements net.Conn.
func (c *conn) SetReadDeadline(t time.Time) error {
	if c.closed.Load() {
		return c.opError("set", net.ErrClosed)
	}
	c.rd.set(t)
	return nil
}

// SetWriteDeadline implements net.Conn.
func (c *conn) SetWriteDeadline(t time.Time) error {
	if c.closed.Load() {
		return c.opError("set", net.ErrClosed)
	}
	c.wd.set(t)
	return nil
}

// endpointError is an endpoint error as a call's error; after Close every
// error is net.ErrClosed.
func (c *conn) endpointError(op string, terr tcpip.Error) error {
	if c.closed.Load() {
		return c.opError(op, net.ErrClosed)
	}
	return c.opError(op, errOf(terr))
}

func (c *conn) opError(op string, err error) error {
	return &net.OpError{Op: op, Net: "tcp", Source: netAddr(c.local), Addr: netAddr(c.remote), Err: err}
}

// errOf is the error for an endpoint's error: the errno a kernel socket
// reports for the same event where there is one, else the endpoint's own
// words.
func errOf(terr tcpip.Error) error {
	switch terr.(type) {
	case *tcpip.ErrConnectionReset:
		return syscall.ECONNRESET
	case *tcpip.ErrConnectionAborted:
		return syscall.ECONNABORTED
	case *tcpip.ErrConnectionRefused:
		return syscall.ECONNREFUSED
	case *tcpip.ErrTimeout:
		return syscall.ETIMEDOUT
	case *tcpip.ErrClosedForSend:
		return syscall.EPIPE
	case *tcpip.ErrNotConnected:
		return syscall.ENOTCONN
	case *tcpip.ErrNetworkUnreachable:
		return syscall.ENETUNREACH
	case *tcpip.ErrHostUnreachable:
		return syscall.EHOSTUNREACH
	case *tcpip.ErrPortInUse:
		return syscall.EADDRINUSE
	case *tcpip.ErrBadLocalAddress:
		return syscall.EADDRNOTAVAIL
	}
	return endpointError{terr}
}

// endpointError is an endpoint error with no errno of its own.
type endpointError struct{ terr tcpip.Error }

func (e endpointError) Error() string { return e.terr.String() }
