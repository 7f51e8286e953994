package i219

import (
	"gvisor.dev/gvisor/pkg/tcpip/checksum"
	"gvisor.dev/gvisor/pkg/tcpip/header"
)

// hwChecksumOK reports whether the card validated every checksum the stack
// would check: the IPv4 header (IPCS) and the TCP or UDP checksum (TCPCS,
// UDPCS), with neither error bit set and no "ignore checksum" indication.
func hwChecksumOK(se uint32) bool {
	if se&(rxStaIXSM|rxErrIPE|rxErrTCPE) != 0 {
		return false
	}
	return se&rxStaIPCS != 0 && se&(rxStaTCPCS|rxStaUDPCS) != 0
}

// softwareChecksumOK verifies what the card did not, for a link that
// advertised RX checksum offload to the stack: the IPv4 header checksum and,
// for unfragmented TCP and UDP over IPv4, the transport checksum. Other
// frames (ARP, IPv6, ICMP) pass: the stack checks ICMP itself, and IPv6 TCP
// and UDP are left to the caller's choice of offload (a stated departure in
// Config.RXChecksumOffload).
func softwareChecksumOK(frame []byte) bool {
	eth := header.Ethernet(frame)
	if len(frame) < header.EthernetMinimumSize || eth.Type() != header.IPv4ProtocolNumber {
		return true
	}
	ip := header.IPv4(frame[header.EthernetMinimumSize:])
	if !ip.IsValid(len(ip)) || !ip.IsChecksumValid() {
		return false
	}
	if ip.More() || ip.FragmentOffset() != 0 {
		return true
	}
	payload := ip.Payload()
	switch ip.TransportProtocol() {
	case header.TCPProtocolNumber:
		if len(payload) < header.TCPMinimumSize {
			return false
		}
	case header.UDPProtocolNumber:
		if len(payload) < header.UDPMinimumSize {
			return false
		}
		if header.UDP(payload).Checksum() == 0 {
			return true // RFC 768: no checksum sent
		}
	default:
		return true
	}
	xsum := header.PseudoHeaderChecksum(ip.TransportProtocol(), ip.SourceAddress(), ip.DestinationAddress(), uint16(len(payload)))
	return checksum.Checksum(payload, xsum) == 0xFFFF
}
