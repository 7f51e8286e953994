package nic

import (
	"gvisor.dev/gvisor/pkg/tcpip"
	"gvisor.dev/gvisor/pkg/tcpip/header"
)

// PacketType classifies a received Ethernet frame by its destination, as
// gVisor's stack expects in PacketBuffer.PktType: broadcast, multicast, this
// host (own), or another host (a frame seen in promiscuous mode).
func PacketType(dst, own tcpip.LinkAddress) tcpip.PacketType {
	switch {
	case dst == header.EthernetBroadcastAddress:
		return tcpip.PacketBroadcast
	case header.IsMulticastEthernetAddress(dst):
		return tcpip.PacketMulticast
	case dst == own:
		return tcpip.PacketHost
	}
	return tcpip.PacketOtherHost
}
