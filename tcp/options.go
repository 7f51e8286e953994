package tcp

import (
	"errors"
	"fmt"
	"time"

	"gvisor.dev/gvisor/pkg/tcpip"

	"github.com/netramp/netramp/cc"
	"github.com/netramp/netramp/counters"
	"github.com/netramp/netramp/nic"
)

// Options configure every endpoint of one protocol instance (one stack).
// A zero field takes the default its comment names; a value outside a
// field's range is an error from NewProtocolFactory, never a substitution.
type Options struct {
	Arm           cc.Arm // D (default): B with HyStart++'s L = infinity and its growth paced; B: HyStart++ L = 8 and the half-window card rule; A: RFC 5681 and the old rule
	Pacing        bool   // spread each window over the RTT at cc's pacing rate
	InitialWindow int    // segments, 0..4096; 0 = 10 (RFC 6928)

	// SendBufferMax and ReceiveBufferMax bound the send queue and the
	// receive buffer in bytes, each within [MinBufferMax, MaxBufferMax];
	// 0 = 4 MiB and 6 MiB. Receive autotuning grows the buffer up to
	// ReceiveBufferMax.
	SendBufferMax, ReceiveBufferMax int

	NoSACK, NoTimestamps, NoWindowScale bool

	DelayedAck time.Duration // longest delay of an ACK, below DelayedAckLimit; 0 = 40 ms; negative = ACK every segment
	StretchAck int           // ACK every N full segments instead of every second (bench only), 0..MaxStretchAck; 0 = 2

	TimeWait time.Duration // 2·MSL; 0 = 60 s

	Counters *counters.Registry           // tcp.* and cc's counters; nil = a private registry
	Credit   func(tcpip.NICID) nic.Credit // the card's credit per NIC; nil = never card-limited
}

// ErrBadOptions is wrapped by every error NewProtocolFactory returns for
// invalid Options; the message names the field.
var ErrBadOptions = errors.New("tcp: bad options")

// Ranges of Options fields.
const (
	// MinBufferMax is one full segment of the largest Ethernet MTU's
	// payload with room to spare; smaller buffers cannot hold a segment.
	MinBufferMax = 4096
	// MaxBufferMax is the largest window TCP can advertise (RFC 7323 §2.3:
	// 65535·2^14), so no buffer is bigger than what it can offer.
	MaxBufferMax = 0xffff << 14
	// DelayedAckLimit is RFC 9293 §3.8.6.3's bound: an ACK is delayed less
	// than 0.5 s.
	DelayedAckLimit = 500 * time.Millisecond
	// MaxStretchAck bounds the bench's stretch ACKs; past it the peer's
	// send would stall on the delayed-ACK timer every window.
	MaxStretchAck = 64
)

// validate checks every field once, before any endpoint exists, so a bad
// option is an error naming it rather than a panic on the data path.
func (o *Options) validate() error {
	bad := func(field string, v any, want string) error {
		return fmt.Errorf("%w: %s = %v, want %s", ErrBadOptions, field, v, want)
	}
	// cc owns the rules for its own fields (Arm, InitialWindow); any SMSS
	// in range will do for the check.
	if _, err := cc.New(cc.Config{SMSS: 536, InitialWindow: o.InitialWindow, Arm: o.Arm, Pacing: o.Pacing}); err != nil {
		return fmt.Errorf("%w: %w", ErrBadOptions, err)
	}
	for _, b := range []struct {
		field string
		v     int
	}{{"SendBufferMax", o.SendBufferMax}, {"ReceiveBufferMax", o.ReceiveBufferMax}} {
		if b.v != 0 && (b.v < MinBufferMax || b.v > MaxBufferMax) {
			return bad(b.field, b.v, fmt.Sprintf("0 or within [%d, %d]", MinBufferMax, MaxBufferMax))
		}
	}
	if o.DelayedAck >= DelayedAckLimit {
		return bad("DelayedAck", o.DelayedAck, fmt.Sprintf("below %v (RFC 9293 §3.8.6.3)", DelayedAckLimit))
	}
	if o.StretchAck < 0 || o.StretchAck > MaxStretchAck {
		return bad("StretchAck", o.StretchAck, fmt.Sprintf("within [0, %d]", MaxStretchAck))
	}
	if o.TimeWait < 0 {
		return bad("TimeWait", o.TimeWait, ">= 0")
	}
	return nil
}
