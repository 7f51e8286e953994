package bench

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"runtime"
	"sync"
	"time"

	"gvisor.dev/gvisor/pkg/tcpip"
	"gvisor.dev/gvisor/pkg/waiter"

	"github.com/netramp/netramp/counters"
	"github.com/netramp/netramp/metal/arms"
	"github.com/netramp/netramp/metal/osbench"
	"github.com/netramp/netramp/metal/report"
	"github.com/netramp/netramp/nic/wire"
	"github.com/netramp/netramp/stack/vclock"
	"github.com/netramp/netramp/stack/vtest"
)

// VirtualHorizon bounds one connection in virtual time: a transfer still
// running then has failed (a stall), not slowed.
var VirtualHorizon = 10 * time.Minute

// virtualArm is this build's TCP on both ends of a nic/wire path in virtual
// time: no goroutines, every event on the clock's driver, so a row repeats
// exactly on any machine at any load. Each connection gets fresh stacks and
// a fresh wire, so nothing one connection learnt carries into the next.
type virtualArm struct {
	arm arms.Arm
}

func newVirtualArm(name string) (Arm, error) {
	a, err := arms.Lookup(name)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrUnknownArm, err)
	}
	return &virtualArm{a}, nil
}

func (a *virtualArm) Unavailable() string { return "" }
func (a *virtualArm) Timebase() string    { return Virtual }
func (a *virtualArm) PathName(preset string) string {
	return "wire preset " + preset + " (virtual time)"
}
func (a *virtualArm) Describe() map[string]string {
	return map[string]string{"tcp": "netramp tcp", "arm": a.arm.Name, "options": a.arm.Describe}
}

// RunRow runs the row's connections on up to GOMAXPROCS goroutines at once:
// each has its own clock, wire and stacks, so running them side by side
// changes no figure, only the real time the row takes.
func (a *virtualArm) RunRow(ctx context.Context, spec RowSpec) ([]report.Conn, error) {
	out := make([]report.Conn, spec.Conns)
	errs := make([]error, spec.Conns)
	workers := min(runtime.GOMAXPROCS(0), spec.Conns)
	next := make(chan int)
	var wg sync.WaitGroup
	var mu sync.Mutex
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				if spec.Progress != nil {
					mu.Lock()
					spec.Progress(i)
					mu.Unlock()
				}
				out[i], errs[i] = a.runConn(spec, spec.Seed*1000+int64(i))
			}
		}()
	}
	for i := 0; i < spec.Conns && ctx.Err() == nil; i++ {
		next <- i
	}
	close(next)
	wg.Wait()
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	for i, err := range errs {
		if err != nil {
			return nil, fmt.Errorf("connection %d: %w", i, err)
		}
	}
	return out, nil
}

// flagEntry sets *dirty when its endpoint signals anything; the driver then
// pumps the endpoints after the event that signalled.
func watch(wq *waiter.Queue, dirty *bool) func() {
	e := waiter.NewFunctionEntry(waiter.EventIn|waiter.EventOut|waiter.EventHUp|waiter.EventErr, func(waiter.EventMask) { *dirty = true })
	wq.EventRegister(&e)
	return func() { wq.EventUnregister(&e) }
}

func (a *virtualArm) runConn(spec RowSpec, seed int64) (report.Conn, error) {
	wall := time.Now()
	cfg, err := wire.Preset(spec.Preset)
	if err != nil {
		return report.Conn{}, err
	}
	cfg.Seed = seed
	cfg.NoTraceHash = true // the bench measures the ramp; determinism is pinned by the host tests
	reg := counters.NewRegistry()
	o := a.arm.Options
	o.Counters = reg
	p, err := vtest.NewPair(cfg, o, o, seed)
	if err != nil {
		return report.Conn{}, err
	}
	defer p.Close()
	p.Wire.Counters(reg, "nic")
	clk := p.Clock
	d := &vdriver{clk: clk, dir: spec.Dir, n: spec.Bytes}
	d.hello = []byte(osbench.Hello{Version: osbench.Version, Dir: spec.Dir, Bytes: spec.Bytes}.String())
	d.dialled = clk.Now()
	client, server, err := p.Dial(vtest.SideA, sinkAddr.Port())
	if err != nil {
		return report.Conn{}, err
	}
	defer client.Close()
	defer server.Close()
	d.accepted = clk.Now() // Dial returns at the event that completed the accept
	d.cep, d.sep = client.EP, server.EP
	defer watch(client.WQ, &d.dirty)()
	defer watch(server.WQ, &d.dirty)()
	d.dirty = true
	done := clk.RunUntil(d.pump, clk.Elapsed()+VirtualHorizon)
	if d.err != nil {
		return report.Conn{}, d.err
	}
	if !done {
		return report.Conn{}, fmt.Errorf("not finished after %v of virtual time: %d of %d bytes received (%d events pending)",
			clk.Elapsed().Round(time.Millisecond), d.meterBytes(), spec.Bytes, clk.Pending())
	}
	return report.Conn{Report: d.rep, Counters: reg.Snapshot(), Wall: time.Since(wall)}, nil
}

// vdriver moves osbench-lan/3 through two event-driven endpoints (a
// stack/vtest pair): after every clock event that signalled either, it writes
// what the send queue takes and reads what arrived, metering reads on the
// virtual clock. The
// receiver's report is taken in process rather than sent back over the
// connection: it carries nothing the meter has not already recorded.
type vdriver struct {
	clk      *vclock.Clock
	dir      osbench.Direction
	n        int64
	hello    []byte
	cep, sep tcpip.Endpoint // client (the source's end), server (the sink's end)
	dirty    bool
	calls    int

	dialled, accepted time.Time
	helloSent         int
	helloBuf          []byte // hello bytes read by the server
	gotHello          bool
	sent              int64
	shut              bool
	meter             *osbench.Meter
	rep               osbench.Report
	finished          bool
	err               error
	rd                bytes.Reader
}

func (d *vdriver) meterBytes() int64 {
	if d.meter == nil {
		return 0
	}
	return d.meter.Bytes()
}

// counter discards what it is given and counts it.
type counter struct{ n int }

func (c *counter) Write(p []byte) (int, error) { c.n += len(p); return len(p), nil }

func (d *vdriver) pump() bool {
	if d.finished || d.err != nil {
		return true
	}
	// Endpoints signal through their waiter queues; a pump every 64
	// events as well keeps a missed signal from stalling the transfer.
	d.calls++
	if !d.dirty && d.calls%64 != 0 {
		return false
	}
	d.dirty = false
	now := d.clk.Now()
	// The client sends its hello first, then the upload's payload.
	if d.helloSent < len(d.hello) {
		d.rd.Reset(d.hello[d.helloSent:])
		if n, terr := d.cep.Write(&d.rd, tcpip.WriteOptions{}); terr == nil {
			d.helloSent += int(n)
		} else if !wouldBlock(terr) {
			d.err = fmt.Errorf("source hello: %s", terr)
			return true
		}
	}
	sender, receiver := d.cep, d.sep
	if d.dir == osbench.Download {
		sender, receiver = d.sep, d.cep
	}
	if !d.gotHello {
		d.readHello()
		if d.err != nil {
			return true
		}
	}
	canSend := d.helloSent == len(d.hello) && (d.dir == osbench.Upload || d.gotHello)
	if canSend {
		d.send(sender)
	}
	if d.dir == osbench.Download || d.gotHello {
		d.receive(receiver, now)
	}
	if d.err == nil && d.meter != nil && d.meter.Bytes() >= d.n {
		d.rep = d.meter.Report(now, d.dir, d.n)
		d.finished = true
	}
	if d.err == nil && d.n == 0 && d.gotHello {
		d.rep = osbench.NewMeter(now).Report(now, d.dir, 0)
		d.finished = true
	}
	return d.finished || d.err != nil
}

func wouldBlock(e tcpip.Error) bool {
	_, ok := e.(*tcpip.ErrWouldBlock)
	return ok
}

// readHello reads the hello from the server end byte by byte, exactly as a
// sink over a net.Conn would, so no payload byte is taken for it.
func (d *vdriver) readHello() {
	for !d.gotHello {
		var b bytes.Buffer
		res, terr := d.sep.Read(&limitWriter{w: &b, n: 1}, tcpip.ReadOptions{})
		if terr != nil {
			if !wouldBlock(terr) {
				d.err = fmt.Errorf("sink hello: %s", terr)
			}
			return
		}
		if res.Count == 0 {
			return
		}
		d.helloBuf = append(d.helloBuf, b.Bytes()...)
		if len(d.helloBuf) > osbench.MaxHelloLen {
			d.err = fmt.Errorf("%w: no newline in %d bytes", osbench.ErrMalformedHello, osbench.MaxHelloLen)
			return
		}
		if d.helloBuf[len(d.helloBuf)-1] == '\n' {
			h, err := osbench.ParseHello(string(d.helloBuf))
			if err != nil {
				d.err = err
				return
			}
			if h.Dir != d.dir || h.Bytes != d.n {
				d.err = errors.New("sink read a hello other than the one sent")
				return
			}
			d.gotHello = true
			if d.dir == osbench.Upload {
				d.meter = osbench.NewMeter(d.accepted) // the sink receives: its origin is accept
			}
		}
	}
}

// limitWriter takes at most n bytes, then reports a short write, which makes
// the endpoint's Read stop there.
type limitWriter struct {
	w *bytes.Buffer
	n int
}

func (l *limitWriter) Write(p []byte) (int, error) {
	if len(p) > l.n {
		p = p[:l.n]
	}
	l.n -= len(p)
	l.w.Write(p)
	return len(p), nil
}

var vpattern = bytes.Repeat([]byte("osbench-lan/3 payload "), 64<<10/22+1)[:64<<10]

func (d *vdriver) send(ep tcpip.Endpoint) {
	for d.sent < d.n {
		k := int64(len(vpattern))
		if rest := d.n - d.sent; rest < k {
			k = rest
		}
		d.rd.Reset(vpattern[:k])
		n, terr := ep.Write(&d.rd, tcpip.WriteOptions{})
		d.sent += n
		if terr != nil {
			if !wouldBlock(terr) {
				d.err = fmt.Errorf("sending: %s", terr)
			}
			return
		}
		if n == 0 {
			return
		}
	}
	if !d.shut {
		d.shut = true
		if terr := ep.Shutdown(tcpip.ShutdownWrite); terr != nil {
			d.err = fmt.Errorf("half-close: %s", terr)
		}
	}
}

func (d *vdriver) receive(ep tcpip.Endpoint, now time.Time) {
	if d.meter == nil {
		d.meter = osbench.NewMeter(d.dialled) // a download's receiver is the dialler
	}
	for {
		var c counter
		_, terr := ep.Read(&c, tcpip.ReadOptions{})
		if c.n > 0 {
			d.meter.Add(now, c.n)
		}
		if terr != nil {
			switch terr.(type) {
			case *tcpip.ErrWouldBlock:
			case *tcpip.ErrClosedForReceive:
				if d.meter.Bytes() < d.n {
					d.err = fmt.Errorf("%w: %d of %d bytes", osbench.ErrShort, d.meter.Bytes(), d.n)
				}
			default:
				d.err = fmt.Errorf("receiving: %s", terr)
			}
			return
		}
		if c.n == 0 {
			return
		}
	}
}
