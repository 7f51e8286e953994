package wire

import (
	"time"

	"gvisor.dev/gvisor/pkg/tcpip/checksum"
	"gvisor.dev/gvisor/pkg/tcpip/header"
)

// tooBigLocked handles a packet larger than the path MTU at the bottleneck's
// entry at t: an IPv4 packet with DF is dropped and answered with a
// fragmentation-needed, one without is cut into fragments that take its
// place; anything else is dropped.
func (d *direction) tooBigLocked(frame []byte, t time.Duration) {
	w := d.w
	m := d.cfg.PathMTU
	ip := header.IPv4(frame)
	if len(frame) < header.IPv4MinimumSize || frame[0]>>4 != 4 || !ip.IsValid(len(frame)) {
		d.dropTooBigLocked(frame, t)
		return
	}
	if ip.Flags()&header.IPv4FlagDontFragment != 0 {
		icmp := fragNeeded(w.getBufLocked, ip, m)
		d.dropTooBigLocked(frame, t)
		d.stats.FragNeeded++
		d.ctr.add(&d.ctr.fragNeeded, 1)
		r := d.reverse
		w.pushLocked(w.eventLocked(t+r.cfg.Delay, evDeliver, r, icmp), t)
		return
	}
	hl := int(ip.HeaderLength())
	step := (m - hl) &^ 7 // every fragment but the last carries a multiple of 8 bytes
	if step <= 0 {
		d.dropTooBigLocked(frame, t)
		return
	}
	d.stats.Fragmented++
	d.ctr.add(&d.ctr.fragmented, 1)
	body := frame[hl:ip.TotalLength()]
	base := int(ip.FragmentOffset()) // a fragment may be cut again
	more := ip.Flags()&header.IPv4FlagMoreFragments != 0
	for off := 0; off < len(body); off += step {
		n := min(step, len(body)-off)
		f := w.getBufLocked(hl + n)
		copy(f, frame[:hl])
		copy(f[hl:], body[off:off+n])
		fh := header.IPv4(f)
		fh.SetTotalLength(uint16(hl + n))
		var flags uint8
		if off+n < len(body) || more {
			flags = header.IPv4FlagMoreFragments
		}
		fh.SetFlagsFragmentOffset(flags, uint16(base+off))
		fh.SetChecksum(0)
		fh.SetChecksum(^fh.CalculateChecksum())
		d.bottleneckLocked(f, t)
	}
	w.putBufLocked(frame)
}

func (d *direction) dropTooBigLocked(frame []byte, t time.Duration) {
	d.stats.DropTooBig++
	d.ctr.add(&d.ctr.dropTooBig, 1)
	d.w.traceLocked(t, d, TraceDropTooBig, frame)
	d.w.putBufLocked(frame)
}

// fragNeeded builds the ICMPv4 destination-unreachable, fragmentation
// needed and DF set (RFC 1191 §4), for a datagram dg too big for a next hop
// of mtu bytes: from dg's destination to its source, quoting its IP header
// and the first 8 bytes after it (RFC 792).
func fragNeeded(get func(int) []byte, dg header.IPv4, mtu int) []byte {
	quote := dg[:min(len(dg), int(dg.HeaderLength())+8)]
	b := get(header.IPv4MinimumSize + header.ICMPv4MinimumSize + len(quote))
	clear(b)
	ip := header.IPv4(b)
	ip.Encode(&header.IPv4Fields{TotalLength: uint16(len(b)), TTL: 64, Protocol: uint8(header.ICMPv4ProtocolNumber),
		SrcAddr: dg.DestinationAddress(), DstAddr: dg.SourceAddress()})
	ip.SetChecksum(^ip.CalculateChecksum())
	ic := header.ICMPv4(b[header.IPv4MinimumSize:])
	ic.SetType(header.ICMPv4DstUnreachable)
	ic.SetCode(header.ICMPv4FragmentationNeeded)
	ic.SetMTU(uint16(mtu))
	copy(ic[header.ICMPv4MinimumSize:], quote)
	ic.SetChecksum(^checksum.Checksum(ic, 0))
	return b
}
