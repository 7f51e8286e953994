// Inbound segment parsing: the header view, options and payload of one
// segment, checked before any state is touched.

package tcp

import (
	"encoding/binary"

	"gvisor.dev/gvisor/pkg/buffer"
	"gvisor.dev/gvisor/pkg/tcpip/checksum"
	"gvisor.dev/gvisor/pkg/tcpip/header"
	"gvisor.dev/gvisor/pkg/tcpip/seqnum"
	"gvisor.dev/gvisor/pkg/tcpip/stack"
)

// segment is one parsed inbound segment; payload and opts alias the packet.
type segment struct {
	seq, ack uint32
	flags    header.TCPFlags
	wnd      uint16
	payload  []byte
	opts     []byte
	view     *buffer.View // the packet's view payload lies in, if one holds it all
}

func (s *segment) logicalLen() int {
	n := len(s.payload)
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
func (p *protocol) parse(pkt *stack.PacketBuffer) (segment, bool) {
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
	if !pkt.RXChecksumValidated && !checksumValid(pkt, hdr, size) {
		p.st.csumErrors.Inc()
		return segment{}, false
	}
	s := segment{
		seq: hdr.SequenceNumber(), ack: hdr.AckNumber(), flags: hdr.Flags(),
		wnd: hdr.WindowSize(), opts: hdr[header.TCPMinimumSize:off],
	}
	if size > 0 {
		s.payload, s.view = payloadInPlace(pkt, size)
	}
	return s, true
}

// payloadInPlace is the segment's payload, read where it lies when one view
// holds it, and that view: PullUp would copy a view whose chunk is shared (an
// in-memory link shares it with the sender's packet), and in-order data is
// kept as a clone of the view, not copied.
func payloadInPlace(pkt *stack.PacketBuffer, size int) ([]byte, *buffer.View) {
	vl, off := pkt.AsViewList()
	off += pkt.HeaderSize()
	for v := vl.Front(); v != nil; v = v.Next() {
		n := v.Size()
		if off < n {
			if off+size <= n {
				return v.AsSlice()[off : off+size], v
			}
			break
		}
		off -= n
	}
	b, _ := pkt.Data().PullUp(size)
	return b, nil
}

// checksumValid checks the segment's checksum: header, payload and the
// pseudo-header (RFC 9293 §3.1). The pseudo-header's addresses are summed
// where they lie in the network header, one run of bytes for both:
// PacketBuffer.Network boxes the header in an interface (a heap allocation
// per segment), and copying the addresses out to sum them cost a tenth of
// parsing (issue 12).
func checksumValid(pkt *stack.PacketBuffer, hdr header.TCP, size int) bool {
	var sum uint16
	nh := pkt.NetworkHeader().Slice()
	switch {
	case pkt.NetworkProtocolNumber == header.IPv4ProtocolNumber && len(nh) >= header.IPv4MinimumSize:
		sum = checksum.Checksum(nh[12:20], 0) // source and destination
	case pkt.NetworkProtocolNumber == header.IPv6ProtocolNumber && len(nh) >= header.IPv6MinimumSize:
		sum = checksum.Checksum(nh[8:40], 0)
	default:
		net := pkt.Network()
		src, dst := net.SourceAddress(), net.DestinationAddress()
		sum = checksum.Checksum(dst.AsSlice(), checksum.Checksum(src.AsSlice(), 0))
	}
	// control:tcp-rx-sum-without-protocol
	sum = checksum.Combine(sum, uint16(ProtocolNumber))
	sum = checksum.Combine(sum, uint16(int(hdr.DataOffset())+size))
	sum = checksum.Combine(sum, pkt.Data().Checksum())
	return hdr.CalculateChecksum(sum) == 0xffff
}

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
