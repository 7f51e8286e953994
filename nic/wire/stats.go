package wire

import (
	"github.com/netramp/netramp/counters"
)

// DirStats counts what one direction did with its frames. Sent counts frames
// the sending stack handed over and the ring took; Delivered those handed to
// the far stack (duplicates and corrupted frames included); each Drop field
// one cause.
type DirStats struct {
	SentFrames, SentBytes           uint64
	DeliveredFrames, DeliveredBytes uint64
	DropRing                        uint64 // refused: TX ring full
	DropQueue                       uint64 // bottleneck queue full
	DropLoss                        uint64 // random (Bernoulli) loss
	DropBurst                       uint64 // Gilbert-Elliott burst loss
	DropBlackout                    uint64 // path down
	DropOversize                    uint64 // larger than the MTU
	DropTooBig                      uint64 // larger than PathMTU and not fragmented (DF set, or not IPv4)
	FragNeeded                      uint64 // ICMPv4 fragmentation-needed sent back for them (PathMTU)
	Fragmented                      uint64 // packets without DF cut into fragments (PathMTU)
	DropDetached                    uint64 // far endpoint had no dispatcher or was closed
	DropInput                       uint64 // real time: the receiver's input queue was full
	Corrupted                       uint64 // delivered with a flipped byte
	Duplicated                      uint64 // delivered a second time
	AcksHeld                        uint64 // pure ACKs held by the aggregator
	AckReleases                     uint64 // groups of held ACKs released
	AcksCoalesced                   uint64 // held ACKs superseded by a newer one of their flow (AckAggCoalesce)
	QueueHighBytes                  uint64 // bottleneck queue high-water mark, bytes (with Ethernet overhead)
	QueueHighFrames                 uint64 // bottleneck queue high-water mark, frames
	GROPolls                        uint64 // receive polls that handed frames over (GRO)
	GROAggregates                   uint64 // packets the receive GRO built of two or more frames
	GROFramesMerged                 uint64 // frames that went into those aggregates
	GROPollsSeveral                 uint64 // polls that handed over two or more aggregates
	GROPollHighAggregates           uint64 // the most aggregates one poll handed over
	// Lateness is how late frames were handed to the far end against their
	// schedule (real-time wires only; zero in virtual time).
	Lateness Lateness
}

// dirCounters mirrors DirStats into a counters.Registry once registered.
type dirCounters struct {
	sentFrames, sentBytes, deliveredFrames, deliveredBytes *counters.Counter
	dropRing, dropQueue, dropLoss, dropBurst, dropBlackout *counters.Counter
	dropOversize, dropDetached, corrupted, duplicated      *counters.Counter
	dropInput                                              *counters.Counter
	acksHeld, ackReleases, queueHighBytes, queueHighFrames *counters.Counter
	acksCoalesced                                          *counters.Counter
	dropTooBig, fragNeeded, fragmented                     *counters.Counter
	groPolls, groAggregates, groFramesMerged               *counters.Counter
	groPollsSeveral, groPollHigh                           *counters.Counter
}

func (dirCounters) add(c **counters.Counter, n uint64) { (*c).Add(n) }
func (dirCounters) max(c **counters.Counter, v uint64) { (*c).Max(v) }

// Counters registers both directions' counts in r as
// <prefix>.<a2b|b2a>.<name> (prefix "" means "nic.wire"), starting from the
// counts so far. It panics where RegisterCounters would return an error, which
// with a prefix fixed in the source is a programming mistake.
func (w *Wire) Counters(r *counters.Registry, prefix string) {
	if err := w.RegisterCounters(r, prefix); err != nil {
		panic(err)
	}
}

// RegisterCounters is Counters returning the registry's error (a prefix that
// is not dotted lower case, or a name taken with another doc).
func (w *Wire) RegisterCounters(r *counters.Registry, prefix string) error {
	if prefix == "" {
		prefix = "nic.wire"
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, d := range w.dirs {
		p := prefix + "." + d.name() + "."
		s := &d.stats
		var c dirCounters
		for _, e := range []struct {
			ptr  **counters.Counter
			name string
			doc  string
			v    uint64
		}{
			{&c.sentFrames, "sent.frames", "frames the sending stack handed to the wire and the TX ring took", s.SentFrames},
			{&c.sentBytes, "sent.bytes", "IP bytes of the frames sent", s.SentBytes},
			{&c.deliveredFrames, "delivered.frames", "frames handed to the receiving stack, duplicates and corrupted ones included", s.DeliveredFrames},
			{&c.deliveredBytes, "delivered.bytes", "IP bytes of the frames delivered", s.DeliveredBytes},
			{&c.dropRing, "drop.ring", "frames refused because the TX ring was full", s.DropRing},
			{&c.dropQueue, "drop.queue", "frames dropped at the tail of the full bottleneck queue", s.DropQueue},
			{&c.dropLoss, "drop.loss", "frames lost at random (Bernoulli loss)", s.DropLoss},
			{&c.dropBurst, "drop.burst", "frames lost by the Gilbert-Elliott burst channel", s.DropBurst},
			{&c.dropBlackout, "drop.blackout", "frames lost while the path was down", s.DropBlackout},
			{&c.dropOversize, "drop.oversize", "frames refused for exceeding the MTU", s.DropOversize},
			{&c.dropTooBig, "drop.too-big", "packets larger than the path MTU dropped: DF set, or not IPv4", s.DropTooBig},
			{&c.fragNeeded, "icmp.frag-needed", "ICMPv4 fragmentation-needed messages sent back for packets larger than the path MTU", s.FragNeeded},
			{&c.fragmented, "fragmented", "packets without DF cut into fragments to fit the path MTU", s.Fragmented},
			{&c.dropDetached, "drop.detached", "frames that arrived at an endpoint with no dispatcher", s.DropDetached},
			{&c.dropInput, "drop.input", "frames a real-time wire dropped because the receiver's input queue (a stack's or a sink's) was full", s.DropInput},
			{&c.corrupted, "corrupted", "frames delivered with one byte flipped", s.Corrupted},
			{&c.duplicated, "duplicated", "frames delivered twice", s.Duplicated},
			{&c.acksHeld, "ack.held", "pure ACKs held by the ACK aggregator", s.AcksHeld},
			{&c.ackReleases, "ack.releases", "groups of held ACKs released together", s.AckReleases},
			{&c.acksCoalesced, "ack.coalesced", "held ACKs superseded by a newer ACK of their flow and not sent on", s.AcksCoalesced},
			{&c.queueHighBytes, "queue.high-water.bytes", "bottleneck queue high-water mark in bytes with Ethernet overhead", s.QueueHighBytes},
			{&c.queueHighFrames, "queue.high-water.frames", "bottleneck queue high-water mark in frames", s.QueueHighFrames},
			{&c.groPolls, "gro.polls", "receive polls that handed the far stack the frames arrived since the interrupt (GRO.Poll)", s.GROPolls},
			{&c.groAggregates, "gro.aggregates", "packets the receive GRO merged from two or more in-order TCP segments", s.GROAggregates},
			{&c.groFramesMerged, "gro.frames.merged", "frames the receive GRO merged into aggregates", s.GROFramesMerged},
			{&c.groPollsSeveral, "gro.polls.several-aggregates", "receive polls that handed over two or more GRO aggregates", s.GROPollsSeveral},
			{&c.groPollHigh, "gro.poll.high-water.aggregates", "the most GRO aggregates one receive poll handed over", s.GROPollHighAggregates},
		} {
			ctr, err := r.Register(p+e.name, e.doc)
			if err != nil {
				return err
			}
			if e.name == "queue.high-water.bytes" || e.name == "queue.high-water.frames" || e.name == "gro.poll.high-water.aggregates" {
				ctr.Max(e.v)
			} else {
				ctr.Add(e.v)
			}
			*e.ptr = ctr
		}
		d.ctr = c
	}
	return nil
}
