package nic

import (
	"testing"

	"gvisor.dev/gvisor/pkg/tcpip"
	"gvisor.dev/gvisor/pkg/tcpip/header"
)

func TestPacketTypeByDestination(t *testing.T) {
	own := tcpip.LinkAddress("\x52\x54\x00\x12\x34\x56")
	for _, tc := range []struct {
		dst  tcpip.LinkAddress
		want tcpip.PacketType
	}{
		{header.EthernetBroadcastAddress, tcpip.PacketBroadcast},
		{tcpip.LinkAddress("\x01\x00\x5e\x00\x00\x01"), tcpip.PacketMulticast},
		{own, tcpip.PacketHost},
		{tcpip.LinkAddress("\x52\x54\x00\x12\x34\x57"), tcpip.PacketOtherHost},
	} {
		if got := PacketType(tc.dst, own); got != tc.want {
			t.Errorf("PacketType(%x) = %v, want %v", []byte(tc.dst), got, tc.want)
		}
	}
}
