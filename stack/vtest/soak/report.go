package soak

import (
	"fmt"
	"io"
	"time"
)

// Report is what a soak did and what it left behind.
type Report struct {
	Config Config // with defaults filled in

	Arrivals      int     // connection arrivals scheduled
	Skipped       int     // arrivals with every client vanished
	Ends          int     // endpoint drivers started, both sides
	Endings       Endings // connections by how they ended
	VanishedConns int     // connections whose client vanished under them (counted in Endings too)
	Unlinked      Endings // server ends that read no header (their client reset or vanished first)
	BytesUp       int64   // stream bytes the server's ends read, every connection
	BytesDown     int64   // stream bytes the clients' ends read
	PathChanges   int     // times a client's path changed
	Vanishings    int     // times a client vanished
	FragNeeded    uint64  // ICMP fragmentation-needed the paths sent (a narrower PathMTU)
	Fragmented    uint64  // packets without DF the paths fragmented
	PMTULowered   uint64  // tcp.pmtu.lowered, all stacks
	Retransmitted uint64  // tcp.retransmitted.bytes, all stacks
	GiveUps       uint64  // tcp.give-ups and tcp.give-ups.zero-window, all stacks
	Stuck         int     // ends still running at the drain's horizon
	Problems      int     // failed checks and bad endings
	Opened        uint64  // tcp.conns.opened, all stacks, at the end
	Closed        uint64  // tcp.conns.closed, all stacks, at the end
	StillOpen     int     // endpoints registered at the end, the listener excluded

	Virtual                        time.Duration // virtual time of the whole run, drain included
	Wall                           time.Duration
	HeapStart, HeapEnd             uint64 // vtest.LiveHeap with the stacks up and no connection, and at the end
	GoroutinesStart, GoroutinesEnd int
	TimersStart, TimersEnd         int // timers pending on the virtual clock
}

// Endings counts connections (or ends) by how they ended.
type Endings struct {
	Completed int // both ends read everything intact and closed
	Reset     int // a reset ended it: the peer's, a refused connect, or a client's abort
	TimedOut  int // an end timed out: the TCP gave up, or IdleTimeout passed
	Corrupt   int // an end reached EOF with the wrong byte count or SHA-256
	Failed    int // any other error, or stuck at the drain's horizon
}

func (n *Endings) add(o outcome) {
	switch o {
	case completed:
		n.Completed++
	case reset, vanished:
		n.Reset++
	case timedOut:
		n.TimedOut++
	case corrupt:
		n.Corrupt++
	default:
		n.Failed++
	}
}

// WriteText prints the report's figures, one a line.
func (r *Report) WriteText(w io.Writer) {
	c := r.Config
	fmt.Fprintf(w, "soak: seed %d, %d clients, %d connections over %v (requests and responses up to %d bytes), path change every %v on average\n",
		c.Seed, c.Clients, c.Conns, c.Duration, c.MaxBytes, c.PathEvery)
	fmt.Fprintf(w, "connections: %d completed, %d reset, %d timed out, %d corrupt, %d failed (%d of them under a client that vanished; %d arrivals skipped)\n",
		r.Endings.Completed, r.Endings.Reset, r.Endings.TimedOut, r.Endings.Corrupt, r.Endings.Failed, r.VanishedConns, r.Skipped)
	fmt.Fprintf(w, "server ends without a header: %d reset, %d timed out\n", r.Unlinked.Reset, r.Unlinked.TimedOut)
	fmt.Fprintf(w, "bytes: %d up (clients to server), %d down\n", r.BytesUp, r.BytesDown)
	fmt.Fprintf(w, "faults: %d path changes, %d vanishings; %d fragmentation-needed sent, %d packets fragmented, %d MSS lowered; %d bytes retransmitted, %d TCP give-ups\n",
		r.PathChanges, r.Vanishings, r.FragNeeded, r.Fragmented, r.PMTULowered, r.Retransmitted, r.GiveUps)
	fmt.Fprintf(w, "virtual %.2f h, wall %v\n", r.Virtual.Hours(), r.Wall.Round(time.Millisecond))
	fmt.Fprintf(w, "heap: %.2f MiB at the start, %.2f MiB at the end (slack %.2f MiB)\n",
		mib(r.HeapStart), mib(r.HeapEnd), mib(c.HeapSlack))
	fmt.Fprintf(w, "goroutines: %d at the start, %d at the end\n", r.GoroutinesStart, r.GoroutinesEnd)
	fmt.Fprintf(w, "timers pending: %d at the start, %d at the end\n", r.TimersStart, r.TimersEnd)
	fmt.Fprintf(w, "tcp.conns: %d opened, %d closed, %d still open; %d stuck, %d problems\n",
		r.Opened, r.Closed, r.StillOpen, r.Stuck, r.Problems)
}

func mib(b uint64) float64 { return float64(b) / (1 << 20) }
