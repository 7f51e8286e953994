// Package gso is software segmentation offload: it splits one large TCP
// packet into MSS-sized frames the way a NIC's TSO engine does, for the links
// that hand such packets to something expecting wire-size frames (nic/tap on
// receive, Link on transmit).
package gso

import (
	"errors"
	"fmt"

	"gvisor.dev/gvisor/pkg/tcpip/header"

	"github.com/netramp/netramp/internal/csum"
)

// Kind is the network protocol of a TCP GSO packet.
type Kind uint8

// The kinds Segment splits.
const (
	TCPv4 Kind = iota + 1
	TCPv6
)

// ErrMalformed reports a packet whose IP or TCP headers do not describe a
// TCP segment Segment can split; the caller drops it and counts the drop.
var ErrMalformed = errors.New("gso: malformed packet")

// Segment splits one TCP packet of kind into frames that each carry at most
// mss payload bytes, with complete IP and TCP checksums, as a NIC's TSO
// engine would: RFC 9293 §3.1 fields per segment, the sequence number
// advanced by the payload before it, the IPv4 ID incremented per segment
// (RFC 6864 §4.1), CWR on the first segment only (RFC 3168 §6.1.2), FIN and
// PSH on the last only. frame is the whole packet; l3 is the offset of its IP
// header (14 behind Ethernet, 0 for TUN or an IP-only link), and the bytes
// before it are copied to every frame. The TCP checksum field's input value
// is ignored (a partial sum is usual). Each frame is passed to emit, which
// must copy it if it keeps it.
func Segment(kind Kind, mss int, frame []byte, l3 int, emit func([]byte)) error {
	var s Segmenter
	return s.Segment(kind, mss, frame, l3, emit)
}

// Segmenter is Segment with one frame buffer kept from call to call, for a
// link that segments often. The zero value is ready; it is not safe for
// concurrent use.
type Segmenter struct {
	buf []byte
}

// Segment is the package's Segment, building each frame in s's buffer.
func (s *Segmenter) Segment(kind Kind, mss int, frame []byte, l3 int, emit func([]byte)) error {
	lo, err := parse(kind, mss, frame, l3, len(frame))
	if err != nil {
		return err
	}
	payload := frame[lo.hdrEnd:]
	if n := lo.hdrEnd + min(mss, len(payload)); cap(s.buf) < n {
		s.buf = make([]byte, n)
	}
	seg := s.buf[:cap(s.buf)]
	for off := 0; off < len(payload) || off == 0; off += mss {
		n := min(mss, len(payload)-off)
		b := seg[:lo.hdrEnd+n]
		copy(b, frame[:lo.hdrEnd])
		copy(b[lo.hdrEnd:], payload[off:off+n])
		lo.fix(b[:lo.hdrEnd], off, n, off+n >= len(payload), csum.Sum(b[lo.hdrEnd:], 0))
		emit(b)
		if len(payload) == 0 {
			break
		}
	}
	return nil
}

// Whole checks one TCP packet of kind as Segment does but passes it on as
// one segment, in place: its IP length (and IPv4 header checksum) and a
// complete TCP checksum made to cover the whole payload, as a receiver's GRO
// hands its stack the frames of a burst joined. A packet longer than its IP
// length field can say is refused with ErrMalformed. frame is changed, and
// passed to emit, which must copy it if it keeps it.
func Whole(kind Kind, frame []byte, l3 int, emit func([]byte)) error {
	if l3 >= 0 && len(frame)-l3 > 0xffff {
		return fmt.Errorf("%w: %d bytes from the IP header on, more than IP can say", ErrMalformed, len(frame)-l3)
	}
	lo, err := parse(kind, 1, frame, l3, len(frame))
	if err != nil {
		return err
	}
	payload := frame[lo.hdrEnd:]
	lo.mss = max(len(payload), 1) // one segment: the IPv4 ID stays the packet's
	lo.fix(frame[:lo.hdrEnd], 0, len(payload), true, csum.Sum(payload, 0))
	emit(frame)
	return nil
}

// layout is a checked TCP GSO packet's headers: where IP and TCP begin and
// the headers end, and the fields each segment's differ by.
type layout struct {
	kind   Kind
	mss    int
	l3, l4 int
	hdrEnd int
	seq    uint32
	flags  header.TCPFlags
	id     uint16
}

// parse checks the headers at the front of hdr, of a packet of total bytes
// whose IP header is at l3, for splitting at mss.
func parse(kind Kind, mss int, hdr []byte, l3, total int) (layout, error) {
	if kind != TCPv4 && kind != TCPv6 {
		return layout{}, fmt.Errorf("%w: kind %d is not TCP over IPv4 or IPv6", ErrMalformed, kind)
	}
	if mss <= 0 || l3 < 0 || l3 >= len(hdr) {
		return layout{}, fmt.Errorf("%w: MSS %d, IP header at %d of %d header bytes", ErrMalformed, mss, l3, len(hdr))
	}
	lo := layout{kind: kind, mss: mss, l3: l3}
	var tcpProto bool
	if kind == TCPv4 {
		ip := header.IPv4(hdr[l3:])
		if len(hdr)-l3 < header.IPv4MinimumSize || ip.HeaderLength() < header.IPv4MinimumSize || len(hdr)-l3 < int(ip.HeaderLength()) {
			return layout{}, fmt.Errorf("%w: bad IPv4 header", ErrMalformed)
		}
		lo.l4 = l3 + int(ip.HeaderLength())
		tcpProto = ip.Protocol() == uint8(header.TCPProtocolNumber)
		lo.id = ip.ID()
	} else {
		if len(hdr)-l3 < header.IPv6MinimumSize {
			return layout{}, fmt.Errorf("%w: short IPv6 header", ErrMalformed)
		}
		// Extension headers are not produced by a TCP that asks for GSO.
		lo.l4 = l3 + header.IPv6MinimumSize
		tcpProto = header.IPv6(hdr[l3:]).NextHeader() == uint8(header.TCPProtocolNumber)
	}
	if !tcpProto || len(hdr) < lo.l4+header.TCPMinimumSize {
		return layout{}, fmt.Errorf("%w: the packet does not carry TCP", ErrMalformed)
	}
	tcp := header.TCP(hdr[lo.l4:])
	thl := int(tcp.DataOffset())
	if thl < header.TCPMinimumSize || len(hdr) < lo.l4+thl {
		return layout{}, fmt.Errorf("%w: bad TCP data offset %d", ErrMalformed, thl)
	}
	lo.hdrEnd = lo.l4 + thl
	if lo.hdrEnd+mss-l3 > 0xffff {
		return layout{}, fmt.Errorf("%w: MSS %d makes frames longer than IP can say", ErrMalformed, mss)
	}
	if total < lo.hdrEnd {
		return layout{}, fmt.Errorf("%w: %d bytes, short of the %d of its headers", ErrMalformed, total, lo.hdrEnd)
	}
	lo.seq, lo.flags = tcp.SequenceNumber(), tcp.Flags()
	return lo, nil
}

// fix turns hdr, a copy of the packet's headers, into those of the segment
// of n payload bytes at payload offset off, whose payload sums to sum; last
// is whether it ends the packet.
func (lo *layout) fix(hdr []byte, off, n int, last bool, sum uint16) {
	t := header.TCP(hdr[lo.l4:])
	t.SetSequenceNumber(lo.seq + uint32(off))
	f := lo.flags
	if off > 0 {
		f &^= header.TCPFlagCwr
	}
	if !last {
		// control:tap-fin-on-every-segment
		f &^= header.TCPFlagFin | header.TCPFlagPsh // only the last segment ends the burst
	}
	t.SetFlags(uint8(f))
	tcpLen := uint16(len(hdr) - lo.l4 + n)
	var xsum uint16
	if lo.kind == TCPv4 {
		ip := header.IPv4(hdr[lo.l3:])
		ip.SetTotalLength(uint16(len(hdr)-lo.l3) + uint16(n))
		ip.SetID(lo.id + uint16(off/lo.mss))
		ip.SetChecksum(0)
		ip.SetChecksum(^ip.CalculateChecksum())
		xsum = header.PseudoHeaderChecksum(header.TCPProtocolNumber, ip.SourceAddress(), ip.DestinationAddress(), tcpLen)
	} else {
		ip := header.IPv6(hdr[lo.l3:])
		ip.SetPayloadLength(tcpLen)
		xsum = header.PseudoHeaderChecksum(header.TCPProtocolNumber, ip.SourceAddress(), ip.DestinationAddress(), tcpLen)
	}
	t.SetChecksum(0)
	t.SetChecksum(^csum.Sum(t, csum.Combine(xsum, sum)))
}
