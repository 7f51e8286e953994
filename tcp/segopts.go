// Outbound TCP options: MSS, window scale, SACK, timestamps, and how much
// room they take in a segment.

package tcp

import (
	"time"

	"gvisor.dev/gvisor/pkg/tcpip/header"
	"gvisor.dev/gvisor/pkg/tcpip/seqnum"
	"gvisor.dev/gvisor/pkg/tcpip/stack"

	"github.com/netramp/netramp/tcp/internal/reasm"
	"github.com/netramp/netramp/tcp/internal/rtxq"
)

// tsVal is our timestamp clock (RFC 7323 §5.4): milliseconds plus the
// connection's offset.
func (e *endpoint) tsVal() uint32 { return e.tsAt(e.now()) }

// tsAt is the timestamp clock at a time already read (a segment's arrival),
// sparing a second clock read on the per-segment path.
func (e *endpoint) tsAt(now time.Duration) uint32 { return uint32(now/time.Millisecond) + e.tsOffset }

// echoSpan turns an ACK's timestamp echo into send times: the segment whose
// TSval it echoes left within that millisecond tick. The zero Echo means no
// usable echo (none, zero, or not one our clock could have sent, as RFC 7323
// §4.1's RTT sample also requires).
func (e *endpoint) echoSpan(opts *header.TCPOptions, now time.Duration) rtxq.Echo {
	if !e.tsOK || !opts.TS || opts.TSEcr == 0 {
		return rtxq.Echo{}
	}
	ago := int32(e.tsAt(now) - opts.TSEcr)
	if ago < 0 || ago >= 600000 {
		return rtxq.Echo{}
	}
	from := (now/time.Millisecond - time.Duration(ago)) * time.Millisecond
	return rtxq.Echo{From: max(from, 0), Before: max(from+time.Millisecond, 0)}
}

// synOptions encodes the options of our SYN or SYN-ACK: MSS always; window
// scale, timestamps and SACK-permitted as offered (SYN) or agreed (SYN-ACK).
func (e *endpoint) synOptions(dst []byte, synAck bool) []byte {
	offerWS := !e.p.opts.NoWindowScale
	offerTS := !e.p.opts.NoTimestamps
	offerSACK := !e.p.opts.NoSACK
	if synAck {
		offerWS, offerTS, offerSACK = e.wsOK, e.tsOK, e.sackOK
	}
	ws := -1
	if offerWS {
		ws = int(e.rcvWS)
	}
	return encodeSynOptions(dst, e.ourMSS(), ws, offerSACK, offerTS, e.tsVal(), e.tsRecent)
}

// encodeSynOptions encodes a SYN's or SYN-ACK's options: MSS always, our
// window scale ws unless it is -1, SACK-permitted, and timestamps.
func encodeSynOptions(dst []byte, mss, ws int, offerSACK, offerTS bool, tsVal, tsEcr uint32) []byte {
	b := dst[:40]
	n := header.EncodeMSSOption(uint32(mss), b)
	if ws >= 0 {
		n += header.EncodeNOP(b[n:])
		n += header.EncodeWSOption(ws, b[n:])
	}
	if offerSACK && !offerTS {
		n += header.EncodeNOP(b[n:])
		n += header.EncodeNOP(b[n:])
		n += header.EncodeSACKPermittedOption(b[n:])
	}
	if offerTS {
		if offerSACK {
			n += header.EncodeSACKPermittedOption(b[n:])
		} else {
			n += header.EncodeNOP(b[n:])
			n += header.EncodeNOP(b[n:])
		}
		n += header.EncodeTSOption(tsVal, tsEcr, b[n:])
	}
	n += header.AddTCPOptionPadding(b, n)
	return b[:n]
}

// ourMSS is the MSS we announce: the route's MTU less the TCP header, read
// once per route (path).
func (e *endpoint) ourMSS() int {
	// control:tcp-mss-from-route-per-segment
	if e.route == nil {
		return routeMSS(nil)
	}
	return e.pathOf().mss
}

// routeMSS is the MSS to announce on route r (536 without one).
func routeMSS(r *stack.Route) int {
	m := 536
	if r != nil {
		m = int(r.MTU()) - header.TCPMinimumSize
	}
	if m > 0xffff {
		m = 0xffff
	}
	if m < header.TCPMinimumSendMSS {
		m = header.TCPMinimumSendMSS
	}
	return m
}

// sackBlocksWanted is how many SACK blocks (D-SACK first) a segment would
// carry now, before any size budget.
func (e *endpoint) sackBlocksWanted() int {
	if !e.sackOK || e.ooo == nil {
		return 0
	}
	k := e.ooo.Ranges()
	if e.dsack != nil {
		k++
	}
	return k
}

// optionBytes is the TCP option length of a data segment sent now: the
// timestamp option and as many SACK blocks as the 40 option bytes hold.
func (e *endpoint) optionBytes() int {
	n := 0
	if e.tsOK {
		n = 12
	}
	if k := min(e.sackBlocksWanted(), (40-n-4)/8); k > 0 {
		n += 4 + 8*k
	}
	return n
}

// sackEnd is the right edge a SACK block reports for r, a range held out of
// order: one past the FIN when r runs up to a FIN held with it, since the FIN
// occupies one sequence number (RFC 9293 §3.4) and a block covers what is
// held (RFC 2018 §3). A sender that marks only segments a block covers whole
// would otherwise never mark the data+FIN segment and wait for its RTO when
// the segment before it is lost. A FIN held with no data ending at it (a bare
// FIN, or one whose data the store refused) is not reported: the sender
// retransmits it, which costs one segment and no payload.
func (e *endpoint) sackEnd(r reasm.Range) uint64 {
	// control:tcp-sack-fin-not-covered
	if e.finPending && r.End == e.finOff {
		return r.End + 1
	}
	return r.End
}

// dataOptions encodes timestamps (TSval at now) and SACK blocks for a
// non-SYN segment, within budget option bytes: a segment's options and payload together never
// exceed the MSS (RFC 9293 §3.7.1), so it is never IP-fragmented.
func (e *endpoint) dataOptions(dst []byte, withSACK bool, budget int, now time.Duration) []byte {
	b := dst[:40]
	n := 0
	if e.tsOK {
		n += header.EncodeNOP(b[n:])
		n += header.EncodeNOP(b[n:])
		n += header.EncodeTSOption(e.tsAt(now), e.tsRecent, b[n:])
	}
	if withSACK && e.sackOK && (e.dsack != nil || !e.ooo.Empty()) {
		var blocks [4]header.SACKBlock
		k := 0
		if e.dsack != nil {
			blocks[k] = header.SACKBlock{Start: seqnum.Value(wire(e.irs, e.dsack.Start)), End: seqnum.Value(wire(e.irs, e.dsack.End))}
			k++
		}
		if cap(e.sackBlocks) < 4 {
			e.sackBlocks = make([]reasm.Range, 0, 4)
		}
		e.sackBlocks = e.ooo.Blocks(e.sackBlocks[:0:4])
		for _, r := range e.sackBlocks {
			if k == len(blocks) {
				break
			}
			blocks[k] = header.SACKBlock{Start: seqnum.Value(wire(e.irs, r.Start)), End: seqnum.Value(wire(e.irs, e.sackEnd(r)))}
			k++
		}
		max := (min(40, budget) - n - 4) / 8
		if k > max {
			k = max
		}
		if k > 0 {
			n += header.EncodeNOP(b[n:])
			n += header.EncodeNOP(b[n:])
			n += header.EncodeSACKBlocks(blocks[:k], b[n:])
		}
	}
	return b[:n]
}
