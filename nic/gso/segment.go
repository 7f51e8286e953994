// Package gso is software segmentation offload: it splits one large TCP
// packet into MSS-sized frames the way a NIC's TSO engine does, for the links
// that hand such packets to something expecting wire-size frames (nic/tap on
// receive, Link on transmit).
package gso

import (
	"errors"
	"fmt"

	"gvisor.dev/gvisor/pkg/tcpip/checksum"
	"gvisor.dev/gvisor/pkg/tcpip/header"
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
	if kind != TCPv4 && kind != TCPv6 {
		return fmt.Errorf("%w: kind %d is not TCP over IPv4 or IPv6", ErrMalformed, kind)
	}
	if mss <= 0 || l3 < 0 || l3 >= len(frame) {
		return fmt.Errorf("%w: MSS %d, IP header at %d of a %d-byte frame", ErrMalformed, mss, l3, len(frame))
	}
	var l4 int
	var tcpProto bool
	if kind == TCPv4 {
		ip := header.IPv4(frame[l3:])
		if len(frame)-l3 < header.IPv4MinimumSize || ip.HeaderLength() < header.IPv4MinimumSize || len(frame)-l3 < int(ip.HeaderLength()) {
			return fmt.Errorf("%w: bad IPv4 header", ErrMalformed)
		}
		l4 = l3 + int(ip.HeaderLength())
		tcpProto = ip.Protocol() == uint8(header.TCPProtocolNumber)
	} else {
		if len(frame)-l3 < header.IPv6MinimumSize {
			return fmt.Errorf("%w: short IPv6 header", ErrMalformed)
		}
		// Extension headers are not produced by a TCP that asks for GSO.
		l4 = l3 + header.IPv6MinimumSize
		tcpProto = header.IPv6(frame[l3:]).NextHeader() == uint8(header.TCPProtocolNumber)
	}
	if !tcpProto || len(frame) < l4+header.TCPMinimumSize {
		return fmt.Errorf("%w: the packet does not carry TCP", ErrMalformed)
	}
	tcp := header.TCP(frame[l4:])
	thl := int(tcp.DataOffset())
	if thl < header.TCPMinimumSize || len(frame) < l4+thl {
		return fmt.Errorf("%w: bad TCP data offset %d", ErrMalformed, thl)
	}
	hdrEnd := l4 + thl
	if hdrEnd+mss-l3 > 0xffff {
		return fmt.Errorf("%w: MSS %d makes frames longer than IP can say", ErrMalformed, mss)
	}
	payload := frame[hdrEnd:]
	seq := tcp.SequenceNumber()
	flags := tcp.Flags()
	var id uint16
	if kind == TCPv4 {
		id = header.IPv4(frame[l3:]).ID()
	}
	if n := hdrEnd + min(mss, len(payload)); cap(s.buf) < n {
		s.buf = make([]byte, n)
	}
	seg := s.buf[:cap(s.buf)]
	for off := 0; off < len(payload) || off == 0; off += mss {
		n := min(mss, len(payload)-off)
		b := seg[:hdrEnd+n]
		copy(b, frame[:hdrEnd])
		copy(b[hdrEnd:], payload[off:off+n])
		t := header.TCP(b[l4:])
		t.SetSequenceNumber(seq + uint32(off))
		f := flags
		if off > 0 {
			f &^= header.TCPFlagCwr
		}
		if off+n < len(payload) {
			// control:tap-fin-on-every-segment
			f &^= header.TCPFlagFin | header.TCPFlagPsh // only the last segment ends the burst
		}
		t.SetFlags(uint8(f))
		var xsum uint16
		if kind == TCPv4 {
			ip := header.IPv4(b[l3:])
			ip.SetTotalLength(uint16(len(b) - l3))
			ip.SetID(id + uint16(off/mss))
			ip.SetChecksum(0)
			ip.SetChecksum(^ip.CalculateChecksum())
			xsum = header.PseudoHeaderChecksum(header.TCPProtocolNumber, ip.SourceAddress(), ip.DestinationAddress(), uint16(len(b)-l4))
		} else {
			ip := header.IPv6(b[l3:])
			ip.SetPayloadLength(uint16(len(b) - l4))
			xsum = header.PseudoHeaderChecksum(header.TCPProtocolNumber, ip.SourceAddress(), ip.DestinationAddress(), uint16(len(b)-l4))
		}
		t.SetChecksum(0)
		t.SetChecksum(^checksum.Checksum(b[l4:], xsum))
		emit(b)
		if len(payload) == 0 {
			break
		}
	}
	return nil
}
