package i219_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"io"
	"math/rand"
	"testing"
	"time"

	"github.com/netramp/netramp/nic/i219"
	"github.com/netramp/netramp/nic/i219/fake"
	"gvisor.dev/gvisor/pkg/tcpip"
	"gvisor.dev/gvisor/pkg/tcpip/adapters/gonet"
	"gvisor.dev/gvisor/pkg/tcpip/header"
	"gvisor.dev/gvisor/pkg/tcpip/network/arp"
	"gvisor.dev/gvisor/pkg/tcpip/network/ipv4"
	"gvisor.dev/gvisor/pkg/tcpip/stack"
	"gvisor.dev/gvisor/pkg/tcpip/transport/tcp"
)

// cable moves every frame one card sends into the other card, until stop.
func cable(a, b *fake.Device, stop <-chan struct{}) {
	for {
		select {
		case <-stop:
			return
		default:
		}
		moved := false
		for _, f := range a.Sent() {
			b.Inject(fake.RXFrame{Data: f})
			moved = true
		}
		for _, f := range b.Sent() {
			a.Inject(fake.RXFrame{Data: f})
			moved = true
		}
		if !moved {
			time.Sleep(20 * time.Microsecond)
		}
	}
}

func tcpStack(t *testing.T, ep stack.LinkEndpoint, ip [4]byte) *stack.Stack {
	s := stack.New(stack.Options{
		NetworkProtocols:   []stack.NetworkProtocolFactory{ipv4.NewProtocol, arp.NewProtocol},
		TransportProtocols: []stack.TransportProtocolFactory{tcp.NewProtocol},
	})
	if err := s.CreateNIC(1, ep); err != nil {
		t.Fatal(err)
	}
	s.AddProtocolAddress(1, tcpip.ProtocolAddress{Protocol: ipv4.ProtocolNumber,
		AddressWithPrefix: tcpip.AddrFrom4(ip).WithPrefix()}, stack.AddressProperties{})
	s.SetRouteTable([]tcpip.Route{{Destination: header.IPv4EmptySubnet, NIC: 1}})
	return s
}

// TestTCPBetweenTwoCardsOnACable carries 2 MiB over TCP between two gVisor
// stacks, each on its own modelled I219, their poll loops running: rings
// wrap many times, credit and reclaim run under load, bytes arrive intact.
func TestTCPBetweenTwoCardsOnACable(t *testing.T) {
	devA := fake.New(fake.Options{MAC: [6]byte{2, 0, 0, 0, 0, 0xA}})
	devB := fake.New(fake.Options{MAC: [6]byte{2, 0, 0, 0, 0, 0xB}, DeviceID: 0x10D3})
	cfg := i219.Config{PollInterval: time.Millisecond, TXDescriptors: 64, RXDescriptors: 256, RXChecksumOffload: true}
	epA, err := i219.Open(devA.Platform(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	epB, err := i219.Open(devB.Platform(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	stop := make(chan struct{})
	go cable(devA, devB, stop)
	sa, sb := tcpStack(t, epA, [4]byte{10, 1, 0, 1}), tcpStack(t, epB, [4]byte{10, 1, 0, 2})
	defer func() {
		sa.Close()
		sb.Close()
		close(stop)
		epA.Close()
		epB.Close()
		epA.Wait()
		epB.Wait()
	}()

	ln, err := gonet.ListenTCP(sb, tcpip.FullAddress{NIC: 1, Addr: tcpip.AddrFrom4([4]byte{10, 1, 0, 2}), Port: 80}, ipv4.ProtocolNumber)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	data := make([]byte, 2<<20)
	rand.New(rand.NewSource(1)).Read(data)
	got := make(chan []byte, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			got <- nil
			return
		}
		defer c.Close()
		b, _ := io.ReadAll(c)
		got <- b
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	c, err := gonet.DialContextTCP(ctx, sa, tcpip.FullAddress{NIC: 1, Addr: tcpip.AddrFrom4([4]byte{10, 1, 0, 2}), Port: 80}, ipv4.ProtocolNumber)
	if err != nil {
		t.Fatal(err)
	}
	c.SetDeadline(time.Now().Add(20 * time.Second))
	if _, err := c.Write(data); err != nil {
		t.Fatal(err)
	}
	c.Close()
	var b []byte
	select {
	case b = <-got:
	case <-time.After(25 * time.Second):
		t.Fatal("transfer did not finish")
	}
	if !bytes.Equal(b, data) {
		t.Fatalf("received %d bytes, sha %x; want %d bytes, sha %x", len(b), sha256.Sum256(b), len(data), sha256.Sum256(data))
	}
	if v := append(devA.ViolationsSoFar(), devB.ViolationsSoFar()...); len(v) > 0 {
		t.Fatal(v)
	}
	t.Logf("A: tx %d frames, retries %d, drops %d; B: rx %d frames, offloaded %d, missed %d",
		counter(epA, "nic.tx.frames"), counter(epA, "nic.tx.retries"), counter(epA, "nic.tx.drops"),
		counter(epB, "nic.rx.frames"), counter(epB, "nic.rx.csum-offloaded"), counter(epB, "nic.rx.missed"))
}
