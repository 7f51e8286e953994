package tap

import (
	"encoding/binary"
	"errors"
	"fmt"

	"gvisor.dev/gvisor/pkg/tcpip/checksum"
	"gvisor.dev/gvisor/pkg/tcpip/header"
)

// VnetHdrLen is the size of the legacy virtio-net header (struct
// virtio_net_hdr) that a TAP opened with IFF_VNET_HDR puts before each frame.
const VnetHdrLen = 10

// Virtio-net header flags and GSO types (virtio 1.1 §5.1.6).
const (
	VnetFlagNeedsCsum = 1 // checksum from CsumStart to the end goes at CsumStart+CsumOffset
	VnetFlagDataValid = 2 // the checksum was already verified

	VnetGSONone  = 0
	VnetGSOTCPv4 = 1
	VnetGSOUDP   = 3
	VnetGSOTCPv6 = 4
	VnetGSOECN   = 0x80
)

// ErrBadFrame reports a frame whose virtio-net header or IP/TCP headers do not
// describe something the endpoint can rebuild; the frame is dropped and
// counted.
var ErrBadFrame = errors.New("tap: malformed offload frame")

// VnetHdr is a decoded virtio-net header. The TAP uses the host's byte order
// for the legacy header; every Linux host netramp runs on is little endian.
type VnetHdr struct {
	Flags      uint8
	GSOType    uint8
	HdrLen     uint16
	GSOSize    uint16
	CsumStart  uint16
	CsumOffset uint16
}

// DecodeVnetHdr reads the header at the front of b.
func DecodeVnetHdr(b []byte) (VnetHdr, error) {
	if len(b) < VnetHdrLen {
		return VnetHdr{}, fmt.Errorf("%w: %d bytes, short of a virtio-net header", ErrBadFrame, len(b))
	}
	return VnetHdr{
		Flags:      b[0],
		GSOType:    b[1],
		HdrLen:     binary.LittleEndian.Uint16(b[2:]),
		GSOSize:    binary.LittleEndian.Uint16(b[4:]),
		CsumStart:  binary.LittleEndian.Uint16(b[6:]),
		CsumOffset: binary.LittleEndian.Uint16(b[8:]),
	}, nil
}

// Encode writes h at the front of b (len(b) >= VnetHdrLen).
func (h VnetHdr) Encode(b []byte) {
	b[0] = h.Flags
	b[1] = h.GSOType
	binary.LittleEndian.PutUint16(b[2:], h.HdrLen)
	binary.LittleEndian.PutUint16(b[4:], h.GSOSize)
	binary.LittleEndian.PutUint16(b[6:], h.CsumStart)
	binary.LittleEndian.PutUint16(b[8:], h.CsumOffset)
}

// FinishChecksum completes a partial checksum (VnetFlagNeedsCsum) in pkt,
// the frame after the virtio-net header: the kernel left the pseudo-header
// sum in the field and expects the device to add the rest (virtio 1.1
// §5.1.6.2).
func FinishChecksum(h VnetHdr, pkt []byte) error {
	// control:tap-partial-checksum-left
	if h.Flags&VnetFlagNeedsCsum == 0 {
		return nil
	}
	start, off := int(h.CsumStart), int(h.CsumStart)+int(h.CsumOffset)
	if start >= len(pkt) || off+2 > len(pkt) {
		return fmt.Errorf("%w: checksum at %d+%d outside a %d-byte frame", ErrBadFrame, h.CsumStart, h.CsumOffset, len(pkt))
	}
	sum := checksum.Checksum(pkt[start:], 0)
	binary.BigEndian.PutUint16(pkt[off:], ^sum)
	return nil
}

// Segment splits one TCP GSO frame (GSOTCPv4 or GSOTCPv6) into frames that
// each carry at most h.GSOSize payload bytes, with complete IP and TCP
// checksums, in the way a NIC's TSO engine would (RFC 9293 §3.1 fields per
// segment; IPv4 ID incremented per segment, RFC 6864 §4.1). l3 is the offset
// of the IP header in frame (14 for Ethernet, 0 for TUN). Each segment is
// passed to emit, which must copy it if it keeps it.
func Segment(h VnetHdr, frame []byte, l3 int, emit func([]byte)) error {
	gso := h.GSOType &^ VnetGSOECN
	if gso != VnetGSOTCPv4 && gso != VnetGSOTCPv6 {
		return fmt.Errorf("%w: GSO type %#x is not TCP", ErrBadFrame, h.GSOType)
	}
	if h.GSOSize == 0 || l3 < 0 || l3 >= len(frame) {
		return fmt.Errorf("%w: GSO size %d, l3 %d, frame %d", ErrBadFrame, h.GSOSize, l3, len(frame))
	}
	var l4 int
	var tcpProto bool
	if gso == VnetGSOTCPv4 {
		ip := header.IPv4(frame[l3:])
		if len(frame)-l3 < header.IPv4MinimumSize || ip.HeaderLength() < header.IPv4MinimumSize || len(frame)-l3 < int(ip.HeaderLength()) {
			return fmt.Errorf("%w: bad IPv4 header", ErrBadFrame)
		}
		l4 = l3 + int(ip.HeaderLength())
		tcpProto = ip.Protocol() == uint8(header.TCPProtocolNumber)
	} else {
		if len(frame)-l3 < header.IPv6MinimumSize {
			return fmt.Errorf("%w: short IPv6 header", ErrBadFrame)
		}
		// Extension headers are not produced by the kernel's TCP.
		l4 = l3 + header.IPv6MinimumSize
		tcpProto = header.IPv6(frame[l3:]).NextHeader() == uint8(header.TCPProtocolNumber)
	}
	if !tcpProto || len(frame) < l4+header.TCPMinimumSize {
		return fmt.Errorf("%w: GSO frame does not carry TCP", ErrBadFrame)
	}
	tcp := header.TCP(frame[l4:])
	thl := int(tcp.DataOffset())
	if thl < header.TCPMinimumSize || len(frame) < l4+thl {
		return fmt.Errorf("%w: bad TCP data offset %d", ErrBadFrame, thl)
	}
	hdrEnd := l4 + thl
	payload := frame[hdrEnd:]
	mss := int(h.GSOSize)
	seq := tcp.SequenceNumber()
	flags := tcp.Flags()
	var id uint16
	if gso == VnetGSOTCPv4 {
		id = header.IPv4(frame[l3:]).ID()
	}
	seg := make([]byte, hdrEnd+mss)
	for off := 0; off < len(payload) || off == 0; off += mss {
		n := min(mss, len(payload)-off)
		b := seg[:hdrEnd+n]
		copy(b, frame[:hdrEnd])
		copy(b[hdrEnd:], payload[off:off+n])
		t := header.TCP(b[l4:])
		t.SetSequenceNumber(seq + uint32(off))
		f := flags
		if off > 0 {
			f &^= header.TCPFlagCwr // CWR goes on the first segment only (RFC 3168 §6.1.2)
		}
		if off+n < len(payload) {
			// control:tap-fin-on-every-segment
			f &^= header.TCPFlagFin | header.TCPFlagPsh // only the last segment ends the burst
		}
		t.SetFlags(uint8(f))
		var xsum uint16
		if gso == VnetGSOTCPv4 {
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
