package tap

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/netramp/netramp/internal/csum"
	"github.com/netramp/netramp/nic/gso"
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
	sum := csum.Sum(pkt[start:], 0)
	binary.BigEndian.PutUint16(pkt[off:], ^sum)
	return nil
}

// Segment splits one TCP GSO frame (GSOTCPv4 or GSOTCPv6) into frames that
// each carry at most h.GSOSize payload bytes, as a NIC's TSO engine would
// (gso.Segment). l3 is the offset of the IP header in frame (14 for
// Ethernet, 0 for TUN). Each segment is passed to emit, which must copy it if
// it keeps it.
func Segment(h VnetHdr, frame []byte, l3 int, emit func([]byte)) error {
	kind, err := gsoKind(h)
	if err != nil {
		return err
	}
	if h.GSOSize == 0 {
		return fmt.Errorf("%w: GSO size 0", ErrBadFrame)
	}
	if err := gso.Segment(kind, int(h.GSOSize), frame, l3, emit); err != nil {
		return fmt.Errorf("%w: %w", ErrBadFrame, err)
	}
	return nil
}

// Whole passes one TCP GSO frame on unsplit, as a receiver's GRO would
// (gso.Whole): its IP length and a complete TCP checksum made to cover the
// whole payload, in place. l3 and emit are as for Segment.
func Whole(h VnetHdr, frame []byte, l3 int, emit func([]byte)) error {
	kind, err := gsoKind(h)
	if err != nil {
		return err
	}
	if err := gso.Whole(kind, frame, l3, emit); err != nil {
		return fmt.Errorf("%w: %w", ErrBadFrame, err)
	}
	return nil
}

// gsoKind is the gso.Kind of a GSO frame's header; only TCP is split or
// joined.
func gsoKind(h VnetHdr) (gso.Kind, error) {
	switch h.GSOType &^ VnetGSOECN {
	case VnetGSOTCPv4:
		return gso.TCPv4, nil
	case VnetGSOTCPv6:
		return gso.TCPv6, nil
	}
	return 0, fmt.Errorf("%w: GSO type %#x is not TCP", ErrBadFrame, h.GSOType)
}
