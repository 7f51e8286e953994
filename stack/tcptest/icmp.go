package tcptest

import (
	"gvisor.dev/gvisor/pkg/tcpip"
	"gvisor.dev/gvisor/pkg/tcpip/checksum"
	"gvisor.dev/gvisor/pkg/tcpip/header"
)

// FragNeeded builds the ICMPv4 "fragmentation needed and DF set" message
// (RFC 1191 §4) a router at src sends to dst when a datagram of dst's was
// too big for a next hop of mtu bytes; it quotes that datagram's IP header
// and the first 8 bytes after it, as RFC 792 asks.
func FragNeeded(src, dst tcpip.Address, datagram []byte, mtu uint16) []byte {
	quote := datagram[:min(len(datagram), int(header.IPv4(datagram).HeaderLength())+8)]
	b := make([]byte, header.IPv4MinimumSize+header.ICMPv4MinimumSize+len(quote))
	ip := header.IPv4(b)
	ip.Encode(&header.IPv4Fields{TotalLength: uint16(len(b)), TTL: 64, Protocol: uint8(header.ICMPv4ProtocolNumber),
		SrcAddr: src, DstAddr: dst})
	ip.SetChecksum(^ip.CalculateChecksum())
	m := header.ICMPv4(b[header.IPv4MinimumSize:])
	m.SetType(header.ICMPv4DstUnreachable)
	m.SetCode(header.ICMPv4FragmentationNeeded)
	m.SetMTU(mtu)
	copy(m[header.ICMPv4MinimumSize:], quote)
	m.SetChecksum(^checksum.Checksum(m, 0))
	return b
}

// InjectFragNeeded delivers to the host a router's FragNeeded for s, a
// segment the host sent to the peer.
func (h *Host) InjectFragNeeded(s Seg, mtu uint16) {
	h.InjectFrame(FragNeeded(addr(RouterAddr), addr(HostAddr), Frame(addr(HostAddr), addr(PeerAddr), s), mtu))
}
