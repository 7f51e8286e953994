package vtest

import (
	"fmt"
	"time"

	"github.com/netramp/netramp/counters"
	"github.com/netramp/netramp/nic/wire"
	"github.com/netramp/netramp/stack"
	"github.com/netramp/netramp/tcp"
)

// Run is one transfer's description for OneTransfer: n bytes from a sender
// with Sender options to a receiver with Receiver options over Wire, within
// Horizon of virtual time (0: 10 minutes).
type Run struct {
	Wire             wire.Config
	Sender, Receiver tcp.Options
	Bytes            int64
	Seed             int64 // the stacks', the stream's, and the wire's when Wire.Seed is 0
	Horizon          time.Duration
	// Discard skips hashing the received bytes (they are still counted).
	Discard bool
	// Trace, when set, sees every record of the wire's frame trace, on the
	// terms of wire.SetTrace (under the wire's lock, calling neither the
	// wire nor a stack).
	Trace func(wire.TraceEvent)
	// Wrap, when set, puts the caller's link endpoints between the stacks
	// and the wire (NewPairLinks).
	Wrap LinkWrap
}

// Result is what OneTransfer measured. A run that reached its horizon
// returns its Result too, with Done false: what arrived by then is the
// measurement of a run sized by time rather than by bytes.
type Result struct {
	Done          bool          // the receiver saw EOF with the bytes sent
	Received      int64         // bytes the receiver read
	Duration      time.Duration // first byte to EOF at the receiver (0 if not Done)
	Marks         []Mark        // the receiver's ramp, from the first byte
	Sender        counters.Snapshot
	Receiver      counters.Snapshot
	AtoB, BtoA    wire.DirStats // A is the sender's end
	TraceHash     [32]byte
	VirtualEnd    time.Duration // the clock's Elapsed at EOF or at the horizon
	SourceBlocked int           // writes the sender's endpoint refused (backpressure)
	sink          *Sink
}

// ReceivedBy is the bytes received within d of the first byte.
func (r *Result) ReceivedBy(d time.Duration) int64 { return r.sink.ReceivedBy(d) }

// OneTransfer builds a Pair for r, connects A to B, sends r.Bytes A→B and
// checks them: the whole of a virtual-time arm in one call. At the horizon it
// returns the Result so far with an error wrapping ErrTimeout; a failed
// check returns the Result with the check's error.
func OneTransfer(r Run) (*Result, error) {
	if r.Horizon < 0 || r.Bytes < 0 {
		return nil, fmt.Errorf("%w: Run.Horizon %v and Run.Bytes %d must not be negative", stack.ErrBadOptions, r.Horizon, r.Bytes)
	}
	if r.Horizon == 0 {
		r.Horizon = 10 * time.Minute
	}
	p, err := NewPairLinks(r.Wire, stack.Options{TCP: r.Sender}, stack.Options{TCP: r.Receiver}, r.Seed, r.Wrap)
	if err != nil {
		return nil, err
	}
	defer p.Close()
	if r.Trace != nil {
		p.Wire.SetTrace(r.Trace)
	}
	c, s, err := p.Dial(SideA, 5001)
	if err != nil {
		return nil, err
	}
	so, si := p.Start(c, s, r.Bytes, r.Seed)
	si.Discard = r.Discard
	runErr := p.Run(si.Done, r.Horizon)
	res := measure(p, so, si)
	if runErr != nil {
		// control:vtest-horizon-result-dropped
		return res, fmt.Errorf("%w (received %d of %d)", runErr, si.Bytes(), r.Bytes)
	}
	if err := Check(so, si, r.Bytes); err != nil {
		return res, err
	}
	res.Done = true
	return res, nil
}

// measure reads what a pair's transfer has measured so far.
func measure(p *Pair, so *Source, si *Sink) *Result {
	ab, ba := p.Wire.Stats()
	return &Result{
		Received: si.Bytes(), Duration: si.Duration(), Marks: si.Marks(),
		Sender: p.A.Counters().Snapshot(), Receiver: p.B.Counters().Snapshot(),
		AtoB: ab, BtoA: ba, TraceHash: p.Wire.TraceHash(), VirtualEnd: p.Clock.Elapsed(),
		SourceBlocked: so.Blocked(), sink: si,
	}
}
