// Package tcptest plays a TCP peer by hand: it crafts IPv4+TCP segments
// (flags, sequence and ACK numbers, window, options), injects them into a
// netramp stack through a channel link on a virtual clock, and reads back
// what our TCP sent. The fuzz targets, the segment tests and the hostile-peer
// suite share it, so a segment is built and parsed in one place.
package tcptest

import (
	"encoding/binary"

	"gvisor.dev/gvisor/pkg/tcpip"
	"gvisor.dev/gvisor/pkg/tcpip/checksum"
	"gvisor.dev/gvisor/pkg/tcpip/header"
)

// Seg is one TCP segment: crafted by the peer, or read back from the host.
// Opts holds the raw option bytes; Frame pads them to a 4-byte boundary and
// cuts them at 40 bytes.
type Seg struct {
	SrcPort, DstPort uint16
	Seq, Ack         uint32
	Flags            header.TCPFlags
	Wnd              uint16
	Opts             []byte
	Payload          []byte
	DF               bool // read back: the datagram carried IPv4's don't-fragment flag
}

// Has reports whether any of f is set.
func (s Seg) Has(f header.TCPFlags) bool { return s.Flags&f != 0 }

// Len is the segment's length in sequence space (RFC 9293 §3.4: SYN and FIN
// count one each).
func (s Seg) Len() uint32 {
	n := uint32(len(s.Payload))
	if s.Has(header.TCPFlagSyn) {
		n++
	}
	if s.Has(header.TCPFlagFin) {
		n++
	}
	return n
}

// SynOptions parses Opts as a SYN's options.
func (s Seg) SynOptions() header.TCPSynOptions {
	return header.ParseSynOptions(s.Opts, s.Has(header.TCPFlagAck))
}

// Options parses Opts as a synchronized segment's options.
func (s Seg) Options() header.TCPOptions { return header.ParseTCPOptions(s.Opts) }

// SynOpts builds a SYN's options: MSS, then window scale ws (none when ws <
// 0), SACK-permitted and timestamps (TSval tsVal, TSecr 0) when asked.
func SynOpts(mss uint16, ws int, sack, ts bool, tsVal uint32) []byte {
	return SynOptsEcr(mss, ws, sack, ts, tsVal, 0)
}

// SynOptsEcr is SynOpts with a TSecr, as a SYN-ACK carries.
func SynOptsEcr(mss uint16, ws int, sack, ts bool, tsVal, tsEcr uint32) []byte {
	b := make([]byte, 40)
	n := header.EncodeMSSOption(uint32(mss), b)
	if ws >= 0 {
		n += header.EncodeNOP(b[n:])
		n += header.EncodeWSOption(ws, b[n:])
	}
	if sack {
		n += header.EncodeNOP(b[n:])
		n += header.EncodeNOP(b[n:])
		n += header.EncodeSACKPermittedOption(b[n:])
	}
	if ts {
		n += header.EncodeNOP(b[n:])
		n += header.EncodeNOP(b[n:])
		n += header.EncodeTSOption(tsVal, tsEcr, b[n:])
	}
	return b[:n]
}

// TSOpt is a timestamps option (RFC 7323 §3), NOP-aligned.
func TSOpt(val, ecr uint32) []byte {
	b := make([]byte, 12)
	n := header.EncodeNOP(b)
	n += header.EncodeNOP(b[n:])
	n += header.EncodeTSOption(val, ecr, b[n:])
	return b[:n]
}

// SACKOpt is a SACK option (RFC 2018 §3) with the given blocks, NOP-aligned.
// Blocks beyond four are written raw (the option is then longer than a
// header can hold, as a hostile peer might send): Frame cuts it at 40 bytes.
func SACKOpt(blocks ...header.SACKBlock) []byte {
	o := []byte{1, 1, 5, byte(2 + 8*len(blocks))}
	for _, b := range blocks {
		o = binary.BigEndian.AppendUint32(o, uint32(b.Start))
		o = binary.BigEndian.AppendUint32(o, uint32(b.End))
	}
	return o
}

// Frame builds an IPv4 packet from src to dst carrying s, with valid IP and
// TCP checksums.
func Frame(src, dst tcpip.Address, s Seg) []byte { return FrameMangled(src, dst, s, nil) }

// FrameMangled is Frame with mangle applied to the TCP header and payload
// before the checksum; the checksum is recomputed unless mangle returns
// false (to leave it wrong, or as mangle wrote it).
func FrameMangled(src, dst tcpip.Address, s Seg, mangle func(header.TCP) bool) []byte {
	opts := s.Opts
	optLen := (len(opts) + 3) &^ 3
	if optLen > header.TCPOptionsMaximumSize {
		optLen, opts = header.TCPOptionsMaximumSize, opts[:header.TCPOptionsMaximumSize]
	}
	tcpLen := header.TCPMinimumSize + optLen
	b := make([]byte, header.IPv4MinimumSize+tcpLen+len(s.Payload))
	ip := header.IPv4(b)
	ip.Encode(&header.IPv4Fields{TotalLength: uint16(len(b)), TTL: 64, Protocol: uint8(header.TCPProtocolNumber),
		SrcAddr: src, DstAddr: dst})
	ip.SetChecksum(^ip.CalculateChecksum())
	th := header.TCP(b[header.IPv4MinimumSize:])
	th.Encode(&header.TCPFields{SrcPort: s.SrcPort, DstPort: s.DstPort, SeqNum: s.Seq, AckNum: s.Ack,
		DataOffset: uint8(tcpLen), Flags: s.Flags, WindowSize: s.Wnd})
	copy(th[header.TCPMinimumSize:], opts)
	copy(th[tcpLen:], s.Payload)
	if mangle == nil || mangle(th) {
		FixChecksum(b)
	}
	return b
}

// RawFrame wraps raw bytes (a TCP header and payload, well formed or not)
// in an IPv4 packet from src to dst; the TCP checksum is left as raw has it.
func RawFrame(src, dst tcpip.Address, raw []byte) []byte {
	b := make([]byte, header.IPv4MinimumSize+len(raw))
	ip := header.IPv4(b)
	ip.Encode(&header.IPv4Fields{TotalLength: uint16(len(b)), TTL: 64, Protocol: uint8(header.TCPProtocolNumber),
		SrcAddr: src, DstAddr: dst})
	ip.SetChecksum(^ip.CalculateChecksum())
	copy(b[header.IPv4MinimumSize:], raw)
	return b
}

// FixChecksum recomputes the TCP checksum of an IPv4 frame built by Frame
// or RawFrame (RFC 9293 §3.1's pseudo-header).
func FixChecksum(b []byte) {
	ip := header.IPv4(b)
	th := header.TCP(b[ip.HeaderLength():ip.TotalLength()])
	th.SetChecksum(0)
	x := header.PseudoHeaderChecksum(header.TCPProtocolNumber, ip.SourceAddress(), ip.DestinationAddress(), uint16(len(th)))
	th.SetChecksum(^checksum.Checksum(th, x))
}

// Parse reads an IPv4 frame carrying TCP; false when b is not one.
func Parse(b []byte) (Seg, bool) {
	ip := header.IPv4(b)
	if len(b) < header.IPv4MinimumSize || !ip.IsValid(len(b)) || ip.Protocol() != uint8(header.TCPProtocolNumber) {
		return Seg{}, false
	}
	th := header.TCP(ip.Payload())
	if len(th) < header.TCPMinimumSize {
		return Seg{}, false
	}
	off := int(th.DataOffset())
	if off < header.TCPMinimumSize || off > len(th) {
		return Seg{}, false
	}
	return Seg{
		SrcPort: th.SourcePort(), DstPort: th.DestinationPort(), Seq: th.SequenceNumber(), Ack: th.AckNumber(),
		Flags: th.Flags(), Wnd: th.WindowSize(), DF: ip.Flags()&header.IPv4FlagDontFragment != 0,
		Opts:    append([]byte(nil), th[header.TCPMinimumSize:off]...),
		Payload: append([]byte(nil), th[off:]...),
	}, true
}
