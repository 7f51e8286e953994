// The PSH flag: set on the segment that empties the send buffer.

package tcp

import "gvisor.dev/gvisor/pkg/tcpip/header"

// pushFlag is PSH for a data segment whose payload ends at offset dataEnd
// (one past its last byte): set when that is the end of the data queued, so
// the segment empties the send buffer, and clear on the segments before it
// (RFC 9293 §3.9.1, SEND: the data up to the push reaches the receiver as
// one delivery). A receiver's GRO (Linux's, or nic/wire's card) ends an
// aggregate at a PSH, so a flag on every segment would leave a receiver that
// merges nothing; the segments of a bulk transfer carry none until the
// writer stops. Our receiver and Linux's deliver data whether PSH is set or
// not, so the flag never holds bytes back.
func (e *endpoint) pushFlag(dataEnd uint64) header.TCPFlags {
	// control:tcp-push-on-every-segment
	if dataEnd >= e.sbuf.End()+1 {
		return header.TCPFlagPsh
	}
	return 0
}
