// Inbound segment parsing: the header view, options and payload of one
// segment, checked before any state is touched.

package tcp

import (
	"encoding/binary"

	"gvisor.dev/gvisor/pkg/buffer"
	"gvisor.dev/gvisor/pkg/tcpip"
	"gvisor.dev/gvisor/pkg/tcpip/header"
	"gvisor.dev/gvisor/pkg/tcpip/seqnum"
	"gvisor.dev/gvisor/pkg/tcpip/stack"

	"github.com/netramp/netramp/internal/csum"
)

// segment is one parsed inbound segment; payload and opts alias the packet.
type segment struct {
	seq, ack uint32
	flags    header.TCPFlags
	wnd      uint16
	opts     []byte
	data     span // the payload, where it lies in the packet
}

func (s *segment) logicalLen() int {
	n := s.data.n
	if s.flags&header.TCPFlagSyn != 0 {
		n++
	}
	if s.flags&header.TCPFlagFin != 0 {
		n++
	}
	return n
}

func (s *segment) has(f header.TCPFlags) bool { return s.flags&f != 0 }

// parse validates the header (data offset, options inside it, checksum) and
// returns the segment; a malformed or corrupted one is counted and refused.
func (p *protocol) parse(pkt *stack.PacketBuffer, known rxPseudoSum) (segment, bool) {
	hdr := header.TCP(pkt.TransportHeader().Slice())
	if len(hdr) < header.TCPMinimumSize {
		p.st.dropMalformed.Inc()
		return segment{}, false
	}
	off := int(hdr.DataOffset())
	if off < header.TCPMinimumSize || off > len(hdr) {
		p.st.dropMalformed.Inc()
		return segment{}, false
	}
	size := pkt.Data().Size()
	if size > 0xffff {
		p.st.dropMalformed.Inc()
		return segment{}, false
	}
	var data span
	if size > 0 {
		d, ok := payloadInPlace(pkt, size)
		if !ok {
			p.st.dropMalformed.Inc()
			return segment{}, false
		}
		data = d
	}
	if !pkt.RXChecksumValidated && !checksumValid(pkt, hdr, data, known) {
		p.st.csumErrors.Inc()
		return segment{}, false
	}
	return segment{
		seq: hdr.SequenceNumber(), ack: hdr.AckNumber(), flags: hdr.Flags(),
		wnd: hdr.WindowSize(), opts: hdr[header.TCPMinimumSize:off], data: data,
	}, true
}

// span is a segment's payload where it lies in the packet: n bytes from off
// bytes into view, running on through the views after it when one does not
// hold them all (a receiver's GRO aggregate, or a payload that straddles two
// of an in-memory sender's chunks). Nothing is pulled up: PullUp would copy
// every payload that spans views, and in-order data is kept as clones of the
// views (keepRcv), so copying here would be a copy per byte the receive
// path need not make.
type span struct {
	view   *buffer.View
	off, n int
}

// payloadInPlace is the span of the packet's size payload bytes, false if
// its views hold fewer.
func payloadInPlace(pkt *stack.PacketBuffer, size int) (span, bool) {
	vl, off := pkt.AsViewList()
	off += pkt.HeaderSize()
	v := vl.Front()
	for ; v != nil && off >= v.Size(); v = v.Next() {
		off -= v.Size()
	}
	if v == nil {
		return span{}, false
	}
	s := span{view: v, off: off, n: size}
	for left := size; v != nil && left > 0; v = v.Next() {
		left -= v.Size() - off
		off = 0
		if left <= 0 {
			return s, true
		}
	}
	return span{}, false
}

// cut is the span's bytes from skip on, at most n of them.
func (p span) cut(skip, n int) span {
	skip = min(skip, p.n)
	p.n = min(n, p.n-skip)
	p.off += skip
	for p.view != nil && p.off >= p.view.Size() && p.n > 0 {
		p.off -= p.view.Size()
		p.view = p.view.Next()
	}
	return p
}

// sum is the one's complement sum of the span's bytes, read where they lie
// (internal/csum): no view is pulled up or cloned.
func (p span) sum() uint16 {
	var s csum.Summer
	p.each(func(_ *buffer.View, _ int, b []byte) { s.Add(b) })
	return s.Sum()
}

// each calls fn with each view's part of the span, in order: v is the view,
// b its bytes that belong to the span, from off bytes into v.
func (p span) each(fn func(v *buffer.View, off int, b []byte)) {
	off, left := p.off, p.n
	for v := p.view; v != nil && left > 0; v = v.Next() {
		b := v.AsSlice()[off:]
		b = b[:min(len(b), left)]
		left -= len(b)
		fn(v, off, b)
		off = 0
	}
}

// checksumValid checks the segment's checksum: header, payload and the
// pseudo-header (RFC 9293 §3.1). A connected endpoint passes its
// four-tuple's pseudo-header sum (known): the demuxer gives it only
// segments between those two addresses, and slicing the network header out
// of each packet again was a hundredth of the CPU of a bulk receive
// (osbench cpu, MTU 9000). Without it (a listener, or no endpoint) the sum
// comes from the packet (packetPseudoSum).
func checksumValid(pkt *stack.PacketBuffer, hdr header.TCP, data span, known rxPseudoSum) bool {
	sum, ok := known.get()
	// control:tcp-connected-trusts-checksum
	if !ok {
		sum = packetPseudoSum(pkt)
	}
	sum = csum.Combine(sum, uint16(int(hdr.DataOffset())+data.n))
	sum = csum.Combine(sum, data.sum())
	return hdr.CalculateChecksum(sum) == 0xffff
}

// packetPseudoSum sums the pseudo-header's addresses and protocol where they
// lie in pkt's network header, one run of bytes for both:
// PacketBuffer.Network boxes the header in an interface (a heap allocation
// per segment), and copying the addresses out to sum them cost a tenth of
// parsing (issue 12).
func packetPseudoSum(pkt *stack.PacketBuffer) uint16 {
	var sum uint16
	nh := pkt.NetworkHeader().Slice()
	switch {
	case pkt.NetworkProtocolNumber == header.IPv4ProtocolNumber && len(nh) >= header.IPv4MinimumSize:
		sum = csum.Sum(nh[12:20], 0) // source and destination
	case pkt.NetworkProtocolNumber == header.IPv6ProtocolNumber && len(nh) >= header.IPv6MinimumSize:
		sum = csum.Sum(nh[8:40], 0)
	default:
		net := pkt.Network()
		src, dst := net.SourceAddress(), net.DestinationAddress()
		sum = csum.Sum(dst.AsSlice(), csum.Sum(src.AsSlice(), 0))
	}
	// control:tcp-rx-sum-without-protocol
	return csum.Combine(sum, uint16(ProtocolNumber))
}

// pseudoSum is the pseudo-header (RFC 9293 §3.1) of segments between two
// addresses, without its length: the same either way round.
func pseudoSum(a, b tcpip.Address) uint16 {
	sum := csum.Sum(a.AsSlice(), 0)
	sum = csum.Sum(b.AsSlice(), sum)
	// control:tcp-path-sum-without-protocol
	return csum.Combine(sum, uint16(ProtocolNumber))
}

// rxPseudoSum is a pseudo-header sum that may be unknown (the zero value).
type rxPseudoSum uint32

func knownPseudoSum(sum uint16) rxPseudoSum { return rxPseudoSum(sum) | 1<<16 }

func (k rxPseudoSum) get() (uint16, bool) { return uint16(k), k&(1<<16) != 0 }

// parseOptions reads a segment's timestamp and SACK options with the same
// rules as header.ParseTCPOptions (parsing stops at a malformed option), but
// puts the SACK blocks in the endpoint's scratch array instead of a new
// slice, so processing an ACK allocates nothing. The blocks are valid until
// the next call.
func (e *endpoint) parseOptions(b []byte) header.TCPOptions {
	var o header.TCPOptions
	for i := 0; i < len(b); {
		kind := b[i]
		switch {
		case kind == header.TCPOptionEOL:
			return o
		case kind == header.TCPOptionNOP:
			i++
			continue
		case i+2 > len(b):
			return o
		}
		l := int(b[i+1])
		switch {
		case kind == header.TCPOptionTS && l == header.TCPOptionTSLength && i+l <= len(b):
			o.TS = true
			o.TSVal = binary.BigEndian.Uint32(b[i+2:])
			o.TSEcr = binary.BigEndian.Uint32(b[i+6:])
		case kind == header.TCPOptionTS:
			return o
		case kind == header.TCPOptionSACK && l >= 2 && (l-2)%8 == 0 && i+l <= len(b):
			blocks := e.sackIn[:0]
			for j := i + 2; j+8 <= i+l && len(blocks) < cap(blocks); j += 8 {
				blocks = append(blocks, header.SACKBlock{
					Start: seqnum.Value(binary.BigEndian.Uint32(b[j:])),
					End:   seqnum.Value(binary.BigEndian.Uint32(b[j+4:])),
				})
			}
			o.SACKBlocks = blocks
		case kind == header.TCPOptionSACK, l < 2, i+l > len(b):
			return o
		}
		i += l
	}
	return o
}
