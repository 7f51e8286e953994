package i219

import (
	"gvisor.dev/gvisor/pkg/tcpip"
	"gvisor.dev/gvisor/pkg/tcpip/header"

	"github.com/netramp/netramp/internal/csum"
)

// hwChecksumOK reports whether the card validated every checksum the stack
// would check for this frame: the IPv4 header (IPCS; IPv6 has none) and the
// TCP or UDP checksum (TCPCS, UDPCS), with neither error bit set and no
// "ignore checksum" indication.
func hwChecksumOK(frame []byte, se uint32) bool {
	if se&(rxStaIXSM|rxErrIPE|rxErrTCPE) != 0 || se&(rxStaTCPCS|rxStaUDPCS) == 0 {
		return false
	}
	switch header.Ethernet(frame).Type() {
	case header.IPv4ProtocolNumber:
		return se&rxStaIPCS != 0
	case header.IPv6ProtocolNumber:
		return true
	}
	return false
}

// softwareChecksumOK verifies what the card did not, for a link that
// advertised RX checksum offload to the stack: the IPv4 header checksum and
// the TCP or UDP checksum of unfragmented IPv4 and of IPv6 without
// extension headers. ARP and ICMP pass (the stack checks ICMP itself);
// the transport checksum of an IPv4 fragment or behind IPv6 extension
// headers is not verified (the departure stated at Config.RXChecksumOffload).
func softwareChecksumOK(frame []byte) bool {
	if len(frame) < header.EthernetMinimumSize {
		return false
	}
	pkt := frame[header.EthernetMinimumSize:]
	var (
		proto    tcpip.TransportProtocolNumber
		payload  []byte
		src, dst tcpip.Address
	)
	switch header.Ethernet(frame).Type() {
	case header.IPv4ProtocolNumber:
		ip := header.IPv4(pkt)
		if !ip.IsValid(len(pkt)) || !ip.IsChecksumValid() {
			return false
		}
		if ip.More() || ip.FragmentOffset() != 0 {
			return true
		}
		proto, payload, src, dst = ip.TransportProtocol(), ip.Payload(), ip.SourceAddress(), ip.DestinationAddress()
	case header.IPv6ProtocolNumber:
		ip := header.IPv6(pkt)
		if !ip.IsValid(len(pkt)) {
			return false
		}
		proto, payload, src, dst = ip.TransportProtocol(), ip.Payload(), ip.SourceAddress(), ip.DestinationAddress()
		if proto != header.TCPProtocolNumber && proto != header.UDPProtocolNumber {
			return true // ICMPv6 (checked by the stack) or extension headers
		}
	default:
		return true
	}
	switch proto {
	case header.TCPProtocolNumber:
		if len(payload) < header.TCPMinimumSize {
			return false
		}
	case header.UDPProtocolNumber:
		if len(payload) < header.UDPMinimumSize {
			return false
		}
		if header.UDP(payload).Checksum() == 0 && src.Len() == 4 {
			return true // RFC 768: no checksum sent (IPv4 only; RFC 8200 §8.1)
		}
	default:
		return true
	}
	xsum := header.PseudoHeaderChecksum(proto, src, dst, uint16(len(payload)))
	return csum.Sum(payload, xsum) == 0xFFFF
}
