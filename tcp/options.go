package tcp

import (
	"time"

	"gvisor.dev/gvisor/pkg/tcpip"

	"github.com/netramp/netramp/cc"
	"github.com/netramp/netramp/counters"
	"github.com/netramp/netramp/nic"
)

// Options configure every endpoint of one protocol instance (one stack).
type Options struct {
	Arm           cc.Arm // B (default): HyStart++ and the half-window card rule; A: RFC 5681 and the old rule
	Pacing        bool   // spread each window over the RTT at cc's pacing rate
	InitialWindow int    // segments; 0 = 10 (RFC 6928)

	// SendBufferMax and ReceiveBufferMax bound the send queue and the
	// receive buffer in bytes; 0 = 4 MiB and 6 MiB. Receive autotuning grows
	// the buffer up to ReceiveBufferMax.
	SendBufferMax, ReceiveBufferMax int

	NoSACK, NoTimestamps, NoWindowScale bool

	DelayedAck time.Duration // longest delay of an ACK; 0 = 40 ms; negative = ACK every segment
	StretchAck int           // ACK every N full segments instead of every second (bench only); 0 = 2

	TimeWait time.Duration // 2·MSL; 0 = 60 s

	Counters *counters.Registry           // tcp.* and cc's counters; nil = a private registry
	Credit   func(tcpip.NICID) nic.Credit // the card's credit per NIC; nil = never card-limited
}
