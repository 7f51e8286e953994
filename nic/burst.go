package nic

import "gvisor.dev/gvisor/pkg/tcpip/stack"

// Delivery bursts. A link that hands the stack several frames in one go (a
// NIC's RX ring poll, a read loop that drains its file, an in-memory link
// delivering the frames of one write) knows where that burst ends, as a
// kernel's NAPI poll does; a receiver that hears of it can acknowledge the
// burst once at its end instead of every second segment of it (netramp's
// tcp/coalesce.go). The signal travels with the deliveries: the link tells
// the dispatcher it delivers to, and a dispatcher that does not listen (a
// gVisor NIC under gVisor's own TCP) is simply not told.
//
// A link brackets its deliveries:
//
//	nic.BeginBurst(d)
//	for each frame { d.DeliverNetworkPacket(proto, pkt) }
//	nic.EndBurst(d)
//
// on the goroutine that delivers them, with every BeginBurst matched by one
// EndBurst on the same dispatcher, and a bound on the frames of one burst
// (its ring, its poll budget): a listener may hold ACKs until the end.
// Bursts of several goroutines into one dispatcher may overlap; a listener
// takes the end of any as the end of all it holds.

// Bursts hears where a link's delivery bursts begin and end.
type Bursts interface {
	// BeginBurst says that the deliveries that follow on this goroutine,
	// until the matching EndBurst, arrived together.
	BeginBurst()
	// EndBurst ends the burst BeginBurst began; the listener answers what
	// it held for it before EndBurst returns.
	EndBurst()
}

// BurstDispatcher is a NetworkDispatcher that listens for bursts:
// netramp's stack attaches one to every link under netramp's TCP.
type BurstDispatcher interface {
	stack.NetworkDispatcher
	Bursts
}

// BeginBurst tells d, if it listens (BurstDispatcher), that a burst of
// deliveries begins.
func BeginBurst(d stack.NetworkDispatcher) {
	if b, ok := d.(BurstDispatcher); ok {
		b.BeginBurst()
	}
}

// EndBurst tells d, if it listens, that the burst BeginBurst began has ended.
func EndBurst(d stack.NetworkDispatcher) {
	if b, ok := d.(BurstDispatcher); ok {
		b.EndBurst()
	}
}

// BurstWriter is a link whose WritePackets sends the packets of one call
// together, as one burst the far end can tell (a pipe that delivers them as
// one delivery burst, a NIC that rings its doorbell once for them).
// netramp's stack gathers the packets its TCP sends at one opportunity into
// one WritePackets call for such a link only: a link that can refuse part of
// a call (ErrNoBufferSpace) must not claim it, since a refusal of a gathered
// packet can no longer reach the TCP that sent it and is counted as a drop.
type BurstWriter interface {
	// WritesBursts reports whether the link sends each WritePackets call as
	// one burst and never refuses a packet of it.
	WritesBursts() bool
}
