package i219

import (
	"testing"

	"gvisor.dev/gvisor/pkg/tcpip"
	"gvisor.dev/gvisor/pkg/tcpip/checksum"
	"gvisor.dev/gvisor/pkg/tcpip/header"
)

func udpFrame(v6 bool, data []byte, corrupt, zeroSum, fragment bool) []byte {
	u := make([]byte, header.UDPMinimumSize+len(data))
	copy(u[header.UDPMinimumSize:], data)
	header.UDP(u).Encode(&header.UDPFields{SrcPort: 1, DstPort: 2, Length: uint16(len(u))})
	var ip []byte
	var src, dst tcpip.Address
	typ := header.IPv4ProtocolNumber
	if v6 {
		typ = header.IPv6ProtocolNumber
		src = tcpip.AddrFrom16([16]byte{0xfd, 15: 1})
		dst = tcpip.AddrFrom16([16]byte{0xfd, 15: 2})
		ip = make([]byte, header.IPv6MinimumSize+len(u))
		header.IPv6(ip).Encode(&header.IPv6Fields{PayloadLength: uint16(len(u)), TransportProtocol: header.UDPProtocolNumber,
			HopLimit: 64, SrcAddr: src, DstAddr: dst})
	} else {
		src, dst = tcpip.AddrFrom4([4]byte{10, 0, 0, 1}), tcpip.AddrFrom4([4]byte{10, 0, 0, 2})
		ip = make([]byte, header.IPv4MinimumSize+len(u))
		f := &header.IPv4Fields{TotalLength: uint16(len(ip)), TTL: 64, Protocol: uint8(header.UDPProtocolNumber), SrcAddr: src, DstAddr: dst}
		if fragment {
			f.Flags = header.IPv4FlagMoreFragments
		}
		header.IPv4(ip).Encode(f)
		header.IPv4(ip).SetChecksum(^header.IPv4(ip).CalculateChecksum())
	}
	if !zeroSum {
		x := header.PseudoHeaderChecksum(header.UDPProtocolNumber, src, dst, uint16(len(u)))
		header.UDP(u).SetChecksum(^checksum.Checksum(u, x))
	}
	if corrupt {
		u[len(u)-1] ^= 1
	}
	copy(ip[len(ip)-len(u):], u)
	fr := make([]byte, header.EthernetMinimumSize+len(ip))
	header.Ethernet(fr).Encode(&header.EthernetFields{Type: typ})
	copy(fr[header.EthernetMinimumSize:], ip)
	return fr
}

func TestSoftwareChecksum(t *testing.T) {
	for _, c := range []struct {
		name                              string
		v6, corrupt, zero, fragment, want bool
	}{
		{"ipv4 udp good", false, false, false, false, true},
		{"ipv4 udp corrupt", false, true, false, false, false},
		{"ipv4 udp no checksum (RFC 768)", false, false, true, false, true},
		{"ipv4 fragment not checked (departure)", false, true, false, true, true},
		{"ipv6 udp good", true, false, false, false, true},
		{"ipv6 udp corrupt", true, true, false, false, false},
		{"ipv6 udp zero checksum (RFC 8200 forbids)", true, false, true, false, false},
	} {
		if got := softwareChecksumOK(udpFrame(c.v6, []byte("payload!"), c.corrupt, c.zero, c.fragment)); got != c.want {
			t.Errorf("%s: %v, want %v", c.name, got, c.want)
		}
	}
	bad := udpFrame(false, []byte("x"), false, false, false)
	bad[header.EthernetMinimumSize+10] ^= 0xFF // IPv4 header checksum
	if softwareChecksumOK(bad) {
		t.Error("bad IPv4 header checksum accepted")
	}
}

func TestHardwareChecksumBits(t *testing.T) {
	v4 := udpFrame(false, nil, false, false, false)
	v6 := udpFrame(true, nil, false, false, false)
	for _, c := range []struct {
		name  string
		frame []byte
		se    uint32
		want  bool
	}{
		{"v4 ip+udp validated", v4, rxStaIPCS | rxStaUDPCS, true},
		{"v4 udp only", v4, rxStaUDPCS, false},
		{"v4 ignore checksum", v4, rxStaIPCS | rxStaUDPCS | rxStaIXSM, false},
		{"v4 l4 error", v4, rxStaIPCS | rxStaUDPCS | rxErrTCPE, false},
		{"v4 ip error", v4, rxStaIPCS | rxStaUDPCS | rxErrIPE, false},
		{"v6 udp validated", v6, rxStaUDPCS, true},
		{"v6 nothing validated", v6, 0, false},
	} {
		if got := hwChecksumOK(c.frame, c.se); got != c.want {
			t.Errorf("%s: %v, want %v", c.name, got, c.want)
		}
	}
}
