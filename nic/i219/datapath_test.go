package i219_test

import (
	"bytes"
	"encoding/binary"
	"testing"
	"time"

	"github.com/netramp/netramp/nic/i219"
	"github.com/netramp/netramp/nic/i219/fake"
	"gvisor.dev/gvisor/pkg/buffer"
	"gvisor.dev/gvisor/pkg/tcpip"
	"gvisor.dev/gvisor/pkg/tcpip/checksum"
	"gvisor.dev/gvisor/pkg/tcpip/header"
	"gvisor.dev/gvisor/pkg/tcpip/network/arp"
	"gvisor.dev/gvisor/pkg/tcpip/network/ipv4"
	"gvisor.dev/gvisor/pkg/tcpip/stack"
	"gvisor.dev/gvisor/pkg/tcpip/transport/udp"
	"gvisor.dev/gvisor/pkg/waiter"
)

var (
	peerMAC  = tcpip.LinkAddress("\x02\x00\x00\x00\x00\x99")
	ourMAC   = tcpip.LinkAddress("\x02\x00\x00\x00\x02\x19")
	ourIP    = tcpip.AddrFrom4([4]byte{10, 0, 0, 1})
	peerIP   = tcpip.AddrFrom4([4]byte{10, 0, 0, 2})
	peerIPv4 = [4]byte{10, 0, 0, 2}
)

func newStack(t *testing.T, ep stack.LinkEndpoint) *stack.Stack {
	t.Helper()
	s := stack.New(stack.Options{
		NetworkProtocols:   []stack.NetworkProtocolFactory{ipv4.NewProtocol, arp.NewProtocol},
		TransportProtocols: []stack.TransportProtocolFactory{udp.NewProtocol},
	})
	if err := s.CreateNIC(1, ep); err != nil {
		t.Fatalf("CreateNIC: %v", err)
	}
	if err := s.AddProtocolAddress(1, tcpip.ProtocolAddress{Protocol: ipv4.ProtocolNumber,
		AddressWithPrefix: ourIP.WithPrefix()}, stack.AddressProperties{}); err != nil {
		t.Fatalf("AddProtocolAddress: %v", err)
	}
	s.SetRouteTable([]tcpip.Route{{Destination: header.IPv4EmptySubnet, NIC: 1}})
	t.Cleanup(func() { s.Close(); s.Wait() })
	return s
}

func ethFrame(dst tcpip.LinkAddress, typ tcpip.NetworkProtocolNumber, payload []byte) []byte {
	b := make([]byte, header.EthernetMinimumSize+len(payload))
	header.Ethernet(b).Encode(&header.EthernetFields{SrcAddr: peerMAC, DstAddr: dst, Type: typ})
	copy(b[header.EthernetMinimumSize:], payload)
	return b
}

func arpRequest() []byte {
	a := header.ARP(make([]byte, header.ARPSize))
	a.SetIPv4OverEthernet()
	a.SetOp(header.ARPRequest)
	copy(a.HardwareAddressSender(), peerMAC)
	copy(a.ProtocolAddressSender(), peerIPv4[:])
	ip := ourIP.As4()
	copy(a.ProtocolAddressTarget(), ip[:])
	return ethFrame(header.EthernetBroadcastAddress, header.ARPProtocolNumber, a)
}

func ipv4Packet(proto tcpip.TransportProtocolNumber, l4 []byte) []byte {
	b := make([]byte, header.IPv4MinimumSize+len(l4))
	ip := header.IPv4(b)
	ip.Encode(&header.IPv4Fields{TotalLength: uint16(len(b)), TTL: 64, Protocol: uint8(proto),
		SrcAddr: peerIP, DstAddr: ourIP, ID: 7})
	ip.SetChecksum(^ip.CalculateChecksum())
	copy(b[header.IPv4MinimumSize:], l4)
	return ethFrame(ourMAC, header.IPv4ProtocolNumber, b)
}

func echoRequest(seq uint16, data []byte) []byte {
	b := make([]byte, header.ICMPv4MinimumSize+len(data))
	ic := header.ICMPv4(b)
	ic.SetType(header.ICMPv4Echo)
	ic.SetIdent(0x1234)
	ic.SetSequence(seq)
	copy(ic.Payload(), data)
	ic.SetChecksum(^checksum.Checksum(b, 0))
	return ipv4Packet(header.ICMPv4ProtocolNumber, b)
}

func udpDatagram(dstPort uint16, data []byte) []byte {
	b := make([]byte, header.UDPMinimumSize+len(data))
	u := header.UDP(b)
	u.Encode(&header.UDPFields{SrcPort: 5555, DstPort: dstPort, Length: uint16(len(b))})
	copy(b[header.UDPMinimumSize:], data)
	x := header.PseudoHeaderChecksum(header.UDPProtocolNumber, peerIP, ourIP, uint16(len(b)))
	u.SetChecksum(^checksum.Checksum(b, x))
	return ipv4Packet(header.UDPProtocolNumber, b)
}

// pump polls the endpoint until cond holds on the frames the card sent,
// answering ARP requests the stack makes for the peer.
func pump(t *testing.T, dev *fake.Device, poll func(), cond func(f []byte) bool) []byte {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		if poll != nil {
			poll()
		}
		for _, f := range dev.Sent() {
			if cond(f) {
				return f
			}
			eth := header.Ethernet(f)
			if eth.Type() == header.ARPProtocolNumber {
				a := header.ARP(f[header.EthernetMinimumSize:])
				if a.Op() == header.ARPRequest {
					r := header.ARP(make([]byte, header.ARPSize))
					r.SetIPv4OverEthernet()
					r.SetOp(header.ARPReply)
					copy(r.HardwareAddressSender(), peerMAC)
					copy(r.ProtocolAddressSender(), peerIPv4[:])
					copy(r.HardwareAddressTarget(), ourMAC)
					ip := ourIP.As4()
					copy(r.ProtocolAddressTarget(), ip[:])
					dev.Inject(fake.RXFrame{Data: ethFrame(ourMAC, header.ARPProtocolNumber, r)})
				}
			}
		}
		time.Sleep(time.Millisecond)
	}
	t.Fatal("expected frame never sent")
	return nil
}

func isARPReply(f []byte) bool {
	eth := header.Ethernet(f)
	return eth.Type() == header.ARPProtocolNumber && header.ARP(f[header.EthernetMinimumSize:]).Op() == header.ARPReply &&
		eth.DestinationAddress() == peerMAC
}

func isEchoReply(seq uint16, data []byte) func([]byte) bool {
	return func(f []byte) bool {
		eth := header.Ethernet(f)
		if eth.Type() != header.IPv4ProtocolNumber || eth.DestinationAddress() != peerMAC {
			return false
		}
		ip := header.IPv4(f[header.EthernetMinimumSize:])
		if ip.TransportProtocol() != header.ICMPv4ProtocolNumber || ip.DestinationAddress() != peerIP {
			return false
		}
		ic := header.ICMPv4(ip.Payload())
		return ic.Type() == header.ICMPv4EchoReply && ic.Sequence() == seq && bytes.Equal(ic.Payload(), data)
	}
}

func TestARPAndPingThroughGVisorStack(t *testing.T) {
	for _, offload := range []bool{false, true} {
		dev, ep := open(t, fake.Options{}, i219.Config{RXChecksumOffload: offload})
		newStack(t, ep)
		poll := func() { ep.Poll() }
		dev.Inject(fake.RXFrame{Data: arpRequest()})
		pump(t, dev, poll, isARPReply)
		data := []byte("netramp i219 echo")
		dev.Inject(fake.RXFrame{Data: echoRequest(1, data)})
		pump(t, dev, poll, isEchoReply(1, data))
		ep.Poll()
		c := ep.Counters()
		if c.Lookup("nic.rx.frames").Load() < 2 || c.Lookup("nic.tx.frames").Load() < 2 {
			t.Fatalf("offload=%v: counters rx %d tx %d", offload, c.Lookup("nic.rx.frames").Load(), c.Lookup("nic.tx.frames").Load())
		}
		if len(dev.Violations) > 0 {
			t.Fatal(dev.Violations)
		}
	}
}

func TestPollLoopDeliversAndStops(t *testing.T) {
	dev := fake.New(fake.Options{})
	ep, err := i219.Open(dev.Platform(), i219.Config{PollInterval: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	newStack(t, ep)
	data := []byte("via the poll goroutine")
	dev.Inject(fake.RXFrame{Data: echoRequest(9, data)})
	pump(t, dev, nil, isEchoReply(9, data))
	done := make(chan struct{})
	go func() { ep.Close(); ep.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("Close/Wait did not stop the poll loop")
	}
}

// TestStackWaitStopsThePollLoop: gVisor's Stack.Wait detaches the NIC
// (Attach(nil)) and then waits on the endpoint; the loop must end without
// an explicit Stop, and Close afterwards still works.
func TestStackWaitStopsThePollLoop(t *testing.T) {
	dev := fake.New(fake.Options{})
	ep, err := i219.Open(dev.Platform(), i219.Config{PollInterval: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	s := stack.New(stack.Options{NetworkProtocols: []stack.NetworkProtocolFactory{ipv4.NewProtocol, arp.NewProtocol}})
	if err := s.CreateNIC(1, ep); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		s.Close()
		s.Wait()
		ep.Wait()
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("Stack.Wait hung on the endpoint")
	}
	ep.Close()
	before := len(dev.Trace())
	time.Sleep(5 * time.Millisecond)
	if after := len(dev.Trace()); after != before {
		t.Fatalf("the card was still polled after Stack.Wait and Close (%d more accesses)", after-before)
	}
}

func TestInterruptDrivenLoopDelivers(t *testing.T) {
	dev := fake.New(fake.Options{})
	p := dev.Platform()
	p.IRQ = fake.Interrupt{D: dev}
	ep, err := i219.Open(p, i219.Config{PollInterval: 5 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { ep.Close(); ep.Wait() }()
	newStack(t, ep)
	data := []byte("woken by INTx")
	dev.Inject(fake.RXFrame{Data: echoRequest(3, data)})
	pump(t, dev, nil, isEchoReply(3, data))
}

func TestUDPDatagramBothWays(t *testing.T) {
	dev, ep := open(t, fake.Options{}, i219.Config{RXChecksumOffload: true})
	s := newStack(t, ep)
	var wq waiter.Queue
	uep, terr := s.NewEndpoint(udp.ProtocolNumber, ipv4.ProtocolNumber, &wq)
	if terr != nil {
		t.Fatal(terr)
	}
	defer uep.Close()
	if terr := uep.Bind(tcpip.FullAddress{Addr: ourIP, Port: 7}); terr != nil {
		t.Fatal(terr)
	}
	good := udpDatagram(7, []byte("good"))
	bad := udpDatagram(7, []byte("bad!"))
	bad[len(bad)-1] ^= 0xFF // payload corrupted after the checksum was computed
	dev.Inject(fake.RXFrame{Data: bad})
	dev.Inject(fake.RXFrame{Data: good})
	ep.Poll()
	var out bytes.Buffer
	if _, terr := uep.Read(&out, tcpip.ReadOptions{}); terr != nil {
		t.Fatalf("Read: %v", terr)
	}
	if out.String() != "good" {
		t.Fatalf("read %q, want the good datagram only", out.String())
	}
	if ep.Counters().Lookup("nic.rx.csum-offloaded").Load() != 1 {
		t.Fatal("the good datagram did not use the card's checksum validation")
	}
	out.Reset()
	if _, terr := uep.Read(&out, tcpip.ReadOptions{}); terr == nil {
		t.Fatalf("a datagram with a bad checksum was delivered: %q", out.String())
	}

	// Send one back; the stack resolves the peer with ARP first.
	var msg bytes.Reader
	msg.Reset([]byte("reply"))
	go func() {
		for i := 0; i < 100; i++ {
			msg.Seek(0, 0)
			if _, terr := uep.Write(&msg, tcpip.WriteOptions{To: &tcpip.FullAddress{Addr: peerIP, Port: 5555}}); terr == nil {
				return
			}
			time.Sleep(10 * time.Millisecond)
		}
	}()
	f := pump(t, dev, func() { ep.Poll() }, func(f []byte) bool {
		return header.Ethernet(f).Type() == header.IPv4ProtocolNumber &&
			header.IPv4(f[header.EthernetMinimumSize:]).TransportProtocol() == header.UDPProtocolNumber
	})
	u := header.UDP(header.IPv4(f[header.EthernetMinimumSize:]).Payload())
	if string(u.Payload()) != "reply" || u.DestinationPort() != 5555 {
		t.Fatalf("sent UDP %q to port %d", u.Payload(), u.DestinationPort())
	}
}

func frames(n, size int) stack.PacketBufferList {
	var l stack.PacketBufferList
	for i := 0; i < n; i++ {
		b := make([]byte, size)
		copy(b, ethFrame(peerMAC, header.IPv4ProtocolNumber, nil))
		binary.BigEndian.PutUint32(b[20:], uint32(i))
		l.PushBack(stack.NewPacketBuffer(stack.PacketBufferOptions{Payload: buffer.MakeWithData(b)}))
	}
	return l
}

func writeFrames(t *testing.T, ep *i219.Endpoint, l stack.PacketBufferList) int {
	t.Helper()
	n, _ := ep.WritePackets(l)
	l.DecRef()
	return n
}
