package wire

import (
	"bytes"
	"time"

	"gvisor.dev/gvisor/pkg/tcpip/header"

	"github.com/netramp/netramp/internal/csum"
	"github.com/netramp/netramp/nic/gso"
)

// The receiving card's poll and GRO (Dir.GRO). A frame that reaches the
// endpoint while no poll is pending raises the interrupt, and the card's
// moderation runs the poll Poll later: every frame that arrived by then (at
// most Budget) is handed to the stack as one delivery burst (nic.BeginBurst,
// nic.EndBurst), as a NAPI poll hands its stack what it took off the ring.
// Within the burst, runs of in-order TCP segments of one flow are merged
// into one packet each, as Linux's GRO (tcp_gro_receive) merges them.
//
// A segment joins the aggregate before it when all of these hold (Linux's
// rule, with the departures named):
//   - both are TCP over IPv4 without IP options or fragmentation, or over
//     IPv6 without extension headers, and their IP and TCP checksums are
//     valid (a corrupted frame is passed on as it is, for the stack to drop:
//     merged, its bad bytes would get a fresh, valid checksum);
//   - same addresses and ports; IPv4 TOS, TTL and flags (DF) equal, IPv6
//     traffic class, flow label and hop limit equal;
//   - its flags are ACK, or ACK and PSH (the aggregate's first segment
//     likewise), and it carries payload;
//   - its sequence number is the aggregate's next; its ACK number and
//     window equal the aggregate's (departure: Linux compares the ACK
//     number but keeps the first segment's window; we end the aggregate
//     instead, so no window update is lost);
//   - its TCP header, options included, is as long and byte for byte the
//     same as the aggregate's first, so timestamps must be equal (Linux
//     compares the option words, TSval and TSecr among them);
//   - its payload is no larger than the first's, and the aggregate before
//     it neither carries PSH nor ended on a shorter segment: those end an
//     aggregate after joining it, as in Linux (PSH not with MergePSH);
//   - the aggregate stays within MaxBytes of IP packet.
//
// Departure from Linux: Linux keeps up to eight flows' aggregates open in a
// poll; here a segment that cannot join ends the aggregate under way, so
// every packet reaches the stack in the order its frames arrived.
//
// An aggregate carries its first segment's headers with the PSH of its last,
// its IP length and a complete TCP checksum covering its whole payload
// (gso.Whole), as Linux's GRO hands its stack one packet for the run. A
// frame that does not merge is handed over as it arrived.

// GRO is a direction's receive-side poll and GRO model, at the far
// endpoint. Zero Poll means none: each frame is handed over on arrival,
// alone. A FrameSink attached there gets the aggregates too, with no burst
// reported. Each frame is counted, traced and written to pcap as it is
// handed over, at the poll's time, not as the aggregate it went into.
type GRO struct {
	// Poll is the interrupt moderation: the poll runs Poll after the frame
	// that found no poll pending arrived, and takes every frame that has
	// arrived by then.
	Poll time.Duration
	// MaxBytes bounds an aggregate's IP packet (0: 65535, what an IPv4
	// length field can say, Linux's 64 KB gro_max_size).
	MaxBytes int
	// Budget is the most frames one poll takes (0: 256, an RX ring's worth;
	// more cannot wait on a ring between two polls). What is left over is
	// the next poll's, at once. The bound on a burst that nic.Bursts asks
	// for.
	Budget int
	// NoMerge hands a poll's frames over unmerged (GRO off on the card),
	// and NoBurst hands them over without reporting the poll as a burst (a
	// driver that does not report its polls). Both set, the poll only
	// delays frames: the control a GRO receiver is compared against.
	NoMerge, NoBurst bool
	// MergePSH lets PSH neither end an aggregate nor keep a segment from
	// joining one (departure from Linux, whose GRO flushes on PSH). A
	// sender that sets PSH on every data segment, as gVisor's TCP does on a
	// link without GSO, gets no aggregate at all from Linux's rule; with
	// MergePSH it gets those a sender that marks only the segment that
	// empties its send buffer (Linux, netramp's TCP) would get. The
	// aggregate carries its last segment's PSH.
	MergePSH bool
}

// DefaultGROBudget is the frames one poll takes when GRO.Budget is 0.
const DefaultGROBudget = 256

// maxGROBytes is GRO.MaxBytes's default and bound.
const maxGROBytes = 0xffff

func (g *GRO) validate(f func(string) string) error {
	switch {
	case g.Poll < 0:
		return errorf("%s = %v, want >= 0", f("GRO.Poll"), g.Poll)
	case g.MaxBytes < 0 || g.MaxBytes > maxGROBytes:
		return errorf("%s = %d, want 0 (default %d) or within [1, %d]", f("GRO.MaxBytes"), g.MaxBytes, maxGROBytes, maxGROBytes)
	case g.Budget < 0:
		return errorf("%s = %d, want >= 0", f("GRO.Budget"), g.Budget)
	case g.Poll == 0 && (g.MaxBytes != 0 || g.Budget != 0 || g.NoMerge || g.NoBurst || g.MergePSH):
		return errorf("%s is 0 (no poll) with other GRO fields set", f("GRO.Poll"))
	}
	return nil
}

func (g *GRO) maxBytes() int {
	if g.MaxBytes == 0 {
		return maxGROBytes
	}
	return g.MaxBytes
}

func (g *GRO) budget() int {
	if g.Budget == 0 {
		return DefaultGROBudget
	}
	return g.Budget
}

// groSeg is what merging needs of one frame: set only for a TCP segment
// that may join or start an aggregate.
type groSeg struct {
	ok      bool
	kind    gso.Kind
	l4      int // TCP header offset
	hdrEnd  int // payload offset
	seq     uint32
	flags   header.TCPFlags
	payload int
}

// groParse reads frame as a candidate for merging, checking its checksums.
func groParse(frame []byte) groSeg {
	var s groSeg
	var xsum uint16
	switch {
	case len(frame) >= header.IPv4MinimumSize && frame[0]>>4 == 4:
		ip := header.IPv4(frame)
		if ip.HeaderLength() != header.IPv4MinimumSize || int(ip.TotalLength()) != len(frame) ||
			ip.Protocol() != uint8(header.TCPProtocolNumber) || ip.More() || ip.FragmentOffset() != 0 ||
			!ip.IsChecksumValid() {
			return s
		}
		s.kind, s.l4 = gso.TCPv4, header.IPv4MinimumSize
		xsum = header.PseudoHeaderChecksum(header.TCPProtocolNumber, ip.SourceAddress(), ip.DestinationAddress(), uint16(len(frame)-s.l4))
	case len(frame) >= header.IPv6MinimumSize && frame[0]>>4 == 6:
		ip := header.IPv6(frame)
		if ip.NextHeader() != uint8(header.TCPProtocolNumber) || header.IPv6MinimumSize+int(ip.PayloadLength()) != len(frame) {
			return s
		}
		s.kind, s.l4 = gso.TCPv6, header.IPv6MinimumSize
		xsum = header.PseudoHeaderChecksum(header.TCPProtocolNumber, ip.SourceAddress(), ip.DestinationAddress(), uint16(len(frame)-s.l4))
	default:
		return s
	}
	if len(frame) < s.l4+header.TCPMinimumSize {
		return s
	}
	t := header.TCP(frame[s.l4:])
	off := int(t.DataOffset())
	if off < header.TCPMinimumSize || s.l4+off >= len(frame) { // no payload: nothing to merge
		return s
	}
	if f := t.Flags(); f&^header.TCPFlagPsh != header.TCPFlagAck {
		return s
	}
	// control:wire-gro-corrupt-merged
	if csum.Sum(frame[s.l4:], xsum) != 0xffff {
		return s
	}
	s.hdrEnd = s.l4 + off
	s.seq, s.flags, s.payload = t.SequenceNumber(), t.Flags(), len(frame)-s.hdrEnd
	s.ok = true
	return s
}

// groRun is the aggregate under way: its frames and what the next must match.
type groRun struct {
	frames  [][]byte
	first   groSeg
	next    uint32 // the sequence number the next segment must carry
	size    int    // IP bytes of the aggregate so far
	ended   bool   // PSH or a short segment: nothing more may join
	hdrSame []byte // the first frame's headers
	psh     bool   // PSH ends the aggregate (not MergePSH)
}

// joins reports whether s, of frame, may join r (see the rule above).
func (r *groRun) joins(s groSeg, frame []byte, maxBytes int) bool {
	// control:hosttests-gro-never-merges
	if r.ended || !s.ok || s.kind != r.first.kind || s.hdrEnd != r.first.hdrEnd || s.seq != r.next ||
		s.payload > r.first.payload || r.size+s.payload > maxBytes {
		return false
	}
	h := r.hdrSame
	switch s.kind {
	case gso.TCPv4:
		// TOS (1), flags and fragment offset (6-7), TTL (8), addresses
		// (12-19); ID, length and checksum may differ.
		if frame[1] != h[1] || frame[6] != h[6] || frame[7] != h[7] || frame[8] != h[8] ||
			!bytes.Equal(frame[12:20], h[12:20]) {
			return false
		}
	case gso.TCPv6:
		// Version, traffic class, flow label (0-3), hop limit (7),
		// addresses (8-39); the payload length may differ.
		if !bytes.Equal(frame[0:4], h[0:4]) || frame[7] != h[7] || !bytes.Equal(frame[8:40], h[8:40]) {
			return false
		}
	}
	// TCP: ports, ACK number (0-3, 8-11), data offset and flags but PSH
	// (12-13), window (14-15), options (20 on); the sequence number,
	// checksum and urgent pointer are checked or free.
	a, b := frame[s.l4:s.hdrEnd], h[s.l4:s.hdrEnd]
	// control:wire-gro-options-ignored
	return bytes.Equal(a[0:4], b[0:4]) && bytes.Equal(a[8:12], b[8:12]) && a[12] == b[12] &&
		a[13]&^uint8(header.TCPFlagPsh) == b[13]&^uint8(header.TCPFlagPsh) &&
		bytes.Equal(a[14:16], b[14:16]) && bytes.Equal(a[header.TCPMinimumSize:], b[header.TCPMinimumSize:])
}

func (r *groRun) start(s groSeg, frame []byte) {
	*r = groRun{frames: append(r.frames[:0], frame), first: s, next: s.seq + uint32(s.payload),
		size: len(frame), hdrSame: frame[:s.hdrEnd], psh: r.psh}
	r.ended = r.psh && s.flags&header.TCPFlagPsh != 0
}

func (r *groRun) add(s groSeg, frame []byte) {
	r.frames = append(r.frames, frame)
	r.next += uint32(s.payload)
	r.size += s.payload
	r.ended = (r.psh && s.flags&header.TCPFlagPsh != 0) || s.payload < r.first.payload
}

// groPacket is one packet a poll hands over: a frame as it arrived, or an
// aggregate built from several (agg, in a buffer of the merger's).
type groPacket struct {
	b   []byte
	agg bool
}

// groStats is what one merge did.
type groStats struct {
	aggregates, merged int
}

// groMerge merges frames, in arrival order, into the packets a poll hands
// over, appended to out, by g's rule. getBuf returns a buffer of n bytes for
// an aggregate. The frames are not changed.
func groMerge(frames [][]byte, g *GRO, getBuf func(n int) []byte, out []groPacket) ([]groPacket, groStats) {
	var st groStats
	r := groRun{psh: !g.MergePSH}
	maxBytes := g.maxBytes()
	flush := func() {
		switch len(r.frames) {
		case 0:
			return
		case 1:
			out = append(out, groPacket{b: r.frames[0]})
		default:
			b := getBuf(r.size)[:0]
			b = append(b, r.frames[0]...)
			for _, f := range r.frames[1:] {
				b = append(b, f[r.first.hdrEnd:]...)
			}
			last := r.frames[len(r.frames)-1]
			psh := header.TCP(last[r.first.l4:]).Flags() & header.TCPFlagPsh
			t := header.TCP(b[r.first.l4:])
			t.SetFlags(uint8(t.Flags()&^header.TCPFlagPsh | psh))
			if err := gso.Whole(r.first.kind, b, 0, func([]byte) {}); err != nil {
				// Checked above; should Whole refuse it, the frames go on
				// as they arrived.
				for _, f := range r.frames {
					out = append(out, groPacket{b: f})
				}
				break
			}
			out = append(out, groPacket{b: b, agg: true})
			st.aggregates++
			st.merged += len(r.frames)
		}
		r.frames = r.frames[:0]
	}
	for _, f := range frames {
		s := groParse(f)
		if len(r.frames) > 0 && r.joins(s, f, maxBytes) {
			r.add(s, f)
			continue
		}
		flush()
		if s.ok {
			r.start(s, f)
		} else {
			out = append(out, groPacket{b: f})
		}
	}
	flush()
	return out, st
}
