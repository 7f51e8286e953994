package vtest

import (
	"fmt"
	"time"

	"github.com/netramp/netramp/counters"
	"github.com/netramp/netramp/nic/wire"
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
}

// Result is what OneTransfer measured.
type Result struct {
	Duration      time.Duration // first byte to EOF at the receiver
	Marks         []Mark        // the receiver's ramp, from the first byte
	Sender        counters.Snapshot
	Receiver      counters.Snapshot
	AtoB, BtoA    wire.DirStats // A is the sender's end
	TraceHash     [32]byte
	VirtualEnd    time.Duration // the clock's Elapsed at EOF
	SourceBlocked int           // writes the sender's endpoint refused (backpressure)
	sink          *Sink
}

// ReceivedBy is the bytes received within d of the first byte.
func (r *Result) ReceivedBy(d time.Duration) int64 { return r.sink.ReceivedBy(d) }

// OneTransfer builds a Pair for r, connects A to B, sends r.Bytes A→B and
// checks them: the whole of a virtual-time arm in one call.
func OneTransfer(r Run) (*Result, error) {
	if r.Horizon <= 0 {
		r.Horizon = 10 * time.Minute
	}
	p, err := NewPair(r.Wire, r.Sender, r.Receiver, r.Seed)
	if err != nil {
		return nil, err
	}
	defer p.Close()
	c, s, err := p.Dial(SideA, 5001)
	if err != nil {
		return nil, err
	}
	so, si := p.Start(c, s, r.Bytes, r.Seed)
	si.Discard = r.Discard
	if err := p.Run(si.Done, r.Horizon); err != nil {
		return nil, fmt.Errorf("%w (received %d of %d)", err, si.Bytes(), r.Bytes)
	}
	if err := Check(so, si, r.Bytes); err != nil {
		return nil, err
	}
	ab, ba := p.Wire.Stats()
	return &Result{
		Duration: si.Duration(), Marks: si.Marks(),
		Sender: p.A.Counters().Snapshot(), Receiver: p.B.Counters().Snapshot(),
		AtoB: ab, BtoA: ba, TraceHash: p.Wire.TraceHash(), VirtualEnd: p.Clock.Elapsed(),
		SourceBlocked: so.Blocked(), sink: si,
	}, nil
}
