package i219_test

import (
	"fmt"

	"github.com/netramp/netramp/nic/i219"
	"github.com/netramp/netramp/nic/i219/fake"
	"gvisor.dev/gvisor/pkg/tcpip"
	"gvisor.dev/gvisor/pkg/tcpip/header"
	"gvisor.dev/gvisor/pkg/tcpip/network/arp"
	"gvisor.dev/gvisor/pkg/tcpip/network/ipv4"
	"gvisor.dev/gvisor/pkg/tcpip/stack"
)

// Example opens a card through a Platform and answers a peer's ARP request
// through a gVisor stack. A hobby OS passes its own Platform (BAR0 access,
// PCI config space, DMA memory); here the register-level fake stands in for
// an I219-V.
func Example() {
	card := fake.New(fake.Options{DeviceID: 0x15B8})
	ep, err := i219.Open(card.Platform(), i219.Config{ManualPoll: true})
	if err != nil {
		fmt.Println("open:", err)
		return
	}
	defer ep.Close()
	fmt.Println(ep.Variant(), ep.LinkAddress(), "link up:", ep.LinkUp())

	s := stack.New(stack.Options{NetworkProtocols: []stack.NetworkProtocolFactory{ipv4.NewProtocol, arp.NewProtocol}})
	defer s.Close()
	s.CreateNIC(1, ep)
	s.AddProtocolAddress(1, tcpip.ProtocolAddress{Protocol: ipv4.ProtocolNumber,
		AddressWithPrefix: tcpip.AddrFrom4([4]byte{10, 0, 0, 1}).WithPrefix()}, stack.AddressProperties{})

	// A peer asks who has 10.0.0.1; one poll receives it, the stack
	// answers through the TX ring, the next poll reclaims the descriptor.
	card.Inject(fake.RXFrame{Data: arpRequest()})
	ep.Poll()
	ep.Poll()
	for _, f := range card.Sent() {
		a := header.ARP(f[header.EthernetMinimumSize:])
		fmt.Printf("sent ARP op %d: %v is at %v\n", a.Op(),
			tcpip.AddrFromSlice(a.ProtocolAddressSender()), tcpip.LinkAddress(a.HardwareAddressSender()))
	}
	fmt.Println("frames received:", ep.Counters().Lookup("nic.rx.frames").Load(),
		"sent:", ep.Counters().Lookup("nic.tx.frames").Load())
	// Output:
	// I219 (SPT) 02:00:00:00:02:19 link up: true
	// sent ARP op 2: 10.0.0.1 is at 02:00:00:00:02:19
	// frames received: 1 sent: 1
}
