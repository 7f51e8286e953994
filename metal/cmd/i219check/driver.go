//go:build linux

package main

import (
	"errors"
	"fmt"
	"net/netip"
	"sync"
	"time"

	"gvisor.dev/gvisor/pkg/buffer"
	"gvisor.dev/gvisor/pkg/tcpip"
	"gvisor.dev/gvisor/pkg/tcpip/header"
	gstack "gvisor.dev/gvisor/pkg/tcpip/stack"

	"github.com/netramp/netramp/counters"
	"github.com/netramp/netramp/metal/cmd/internal/guestnet"
	"github.com/netramp/netramp/nic/i219"
)

// Slirp's fixed addresses, as the guest network uses them.
var (
	gatewayIP = guestnet.GatewayIP
	guestIP   = guestnet.GuestIP
)

// openEndpoint opens the platform and the driver on it.
func openEndpoint(backend string, cfg i219.Config) (*i219.Endpoint, error) {
	return guestnet.OpenEndpoint(backend, pciAddr, cfg)
}

var nicCounters = guestnet.NICCounters

// frameTap is a NetworkDispatcher that keeps what the checks look for: ARP
// replies from the gateway and UDP datagrams to port 9.
type frameTap struct {
	mu       sync.Mutex
	arpFrom  map[netip.Addr]tcpip.LinkAddress // sender IP -> sender MAC, replies to us only
	udp9     int
	other    int
	wantTHA  tcpip.LinkAddress
	received chan struct{}
}

func newFrameTap(mac tcpip.LinkAddress) *frameTap {
	return &frameTap{arpFrom: map[netip.Addr]tcpip.LinkAddress{}, wantTHA: mac, received: make(chan struct{}, 1)}
}

func (t *frameTap) DeliverNetworkPacket(proto tcpip.NetworkProtocolNumber, pkt *gstack.PacketBuffer) {
	b := pkt.Data().AsRange().ToSlice()
	t.mu.Lock()
	defer t.mu.Unlock()
	switch proto {
	case header.ARPProtocolNumber:
		a := header.ARP(b)
		if a.IsValid() && a.Op() == header.ARPReply && tcpip.LinkAddress(a.HardwareAddressTarget()) == t.wantTHA {
			ip, _ := netip.AddrFromSlice(a.ProtocolAddressSender())
			t.arpFrom[ip] = tcpip.LinkAddress(a.HardwareAddressSender())
			select {
			case t.received <- struct{}{}:
			default:
			}
			return
		}
	case header.IPv4ProtocolNumber:
		ip := header.IPv4(b)
		if ip.IsValid(len(b)) && ip.TransportProtocol() == header.UDPProtocolNumber && len(b) >= int(ip.HeaderLength())+header.UDPMinimumSize {
			if header.UDP(b[ip.HeaderLength():]).DestinationPort() == 9 {
				t.udp9++
				return
			}
		}
	}
	t.other++
}

func (t *frameTap) DeliverLinkPacket(tcpip.NetworkProtocolNumber, *gstack.PacketBuffer) {}

func (t *frameTap) gatewayMAC() (tcpip.LinkAddress, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	m, ok := t.arpFrom[gatewayIP]
	return m, ok
}

func (t *frameTap) udpCount() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.udp9
}

// sendARPRequest writes one Ethernet broadcast "who-has 10.0.2.2 tell spa".
func sendARPRequest(ep *i219.Endpoint, spa netip.Addr) error {
	mac := ep.LinkAddress()
	f := make([]byte, header.EthernetMinimumSize+header.ARPSize)
	header.Ethernet(f).Encode(&header.EthernetFields{SrcAddr: mac, DstAddr: header.EthernetBroadcastAddress, Type: header.ARPProtocolNumber})
	a := header.ARP(f[header.EthernetMinimumSize:])
	a.SetIPv4OverEthernet()
	a.SetOp(header.ARPRequest)
	copy(a.HardwareAddressSender(), mac)
	copy(a.ProtocolAddressSender(), spa.AsSlice())
	copy(a.ProtocolAddressTarget(), gatewayIP.AsSlice())
	pkt := gstack.NewPacketBuffer(gstack.PacketBufferOptions{Payload: buffer.MakeWithData(f)})
	// WritePackets takes the list's references (it resets the list).
	var l gstack.PacketBufferList
	l.PushBack(pkt)
	n, terr := ep.WritePackets(l)
	if terr != nil || n != 1 {
		return fmt.Errorf("WritePackets wrote %d frames: %v", n, terr)
	}
	return nil
}

// resolveGateway sends ARP requests from spa, one a second, until the
// gateway answers or timeout passes; it returns the gateway's MAC.
func resolveGateway(ep *i219.Endpoint, tap *frameTap, spa netip.Addr, timeout time.Duration) (tcpip.LinkAddress, int, error) {
	deadline := time.Now().Add(timeout)
	sent := 0
	for time.Now().Before(deadline) {
		if err := sendARPRequest(ep, spa); err != nil {
			return "", sent, err
		}
		sent++
		select {
		case <-tap.received:
		case <-time.After(time.Second):
		}
		if m, ok := tap.gatewayMAC(); ok {
			return m, sent, nil
		}
	}
	return "", sent, fmt.Errorf("no ARP reply from %v after %d requests in %v", gatewayIP, sent, timeout)
}

// smokeIP is the sender address each backend's ARP request uses, so the
// host can tell the backends apart in one boot's pcap.
func smokeIP(backend string) netip.Addr {
	switch backend {
	case "uio":
		return netip.MustParseAddr("10.0.2.22")
	case "vfio":
		return netip.MustParseAddr("10.0.2.23")
	}
	return netip.MustParseAddr("10.0.2.21")
}

// checkSmoke opens the card through the backend, waits for link, reads the
// MAC, resolves the gateway by ARP, and requires the driver to have counted
// the frames both ways.
func checkSmoke(backend string) (string, error) {
	reg := counters.NewRegistry()
	ep, err := openEndpoint(backend, i219.Config{Counters: reg})
	if err != nil {
		return "", err
	}
	closeAfter(ep.Close)
	tap := newFrameTap(ep.LinkAddress())
	ep.Attach(tap)
	if !ep.WaitLink(10 * time.Second) {
		return "", fmt.Errorf("link not up after 10s; %s", nicCounters(reg))
	}
	mac := ep.LinkAddress()
	if mac != wantMAC {
		return "", fmt.Errorf("MAC %v, QEMU was given %v", mac, wantMAC)
	}
	spa := smokeIP(backend)
	gw, sent, err := resolveGateway(ep, tap, spa, 8*time.Second)
	if err != nil {
		return "", fmt.Errorf("%w; %s", err, nicCounters(reg))
	}
	// The statistics fold in every 100 ms; wait for the frames to show.
	var rx, tx uint64
	for i := 0; i < 50; i++ {
		rx, tx = reg.Lookup("nic.rx.frames").Load(), reg.Lookup("nic.tx.frames").Load()
		if rx > 0 && tx > 0 {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if rx == 0 || tx == 0 {
		return "", fmt.Errorf("ARP answered but counters show rx=%d tx=%d", rx, tx)
	}
	return fmt.Sprintf("%v (%04x, PHY %08x) link up, MAC %v, ARP %v from %v answered by %v after %d request(s); %s",
		ep.Variant(), ep.DeviceID(), ep.PHYID(), mac, gatewayIP, spa, gw, sent, nicCounters(reg)), nil
}

// checkRXFlood exhausts a small RX ring: with polling stopped the host
// floods UDP at the guest; the driver must then drain what the card
// delivered, count what it could not, and carry traffic again.
func checkRXFlood(backend string) (string, error) {
	const ring = 64
	reg := counters.NewRegistry()
	ep, err := openEndpoint(backend, i219.Config{Counters: reg, ManualPoll: true, RXDescriptors: ring})
	if err != nil {
		return "", err
	}
	closeAfter(ep.Close)
	tap := newFrameTap(ep.LinkAddress())
	ep.Attach(tap)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	var pollMu sync.Mutex // held while reaping is paused
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			select {
			case <-stop:
				return
			default:
			}
			pollMu.Lock()
			n := ep.Poll()
			pollMu.Unlock()
			if n == 0 {
				time.Sleep(100 * time.Microsecond)
			}
		}
	}()
	defer func() { close(stop); wg.Wait() }()
	if !ep.WaitLink(10 * time.Second) {
		return "", fmt.Errorf("link not up after 10s; %s", nicCounters(reg))
	}
	// Slirp forwards to 10.0.2.15 only once it knows that address's MAC.
	if _, _, err := resolveGateway(ep, tap, guestIP, 8*time.Second); err != nil {
		return "", err
	}
	const flood = 2000
	pollMu.Lock()
	fmt.Printf("SYNC flood %d\n", flood)
	time.Sleep(5 * time.Second)
	pollMu.Unlock()
	// Drain: wait until the count stops growing for a second.
	last, stable := -1, time.Now()
	for time.Since(stable) < time.Second {
		if c := tap.udpCount(); c != last {
			last, stable = c, time.Now()
		}
		time.Sleep(50 * time.Millisecond)
	}
	got := tap.udpCount()
	tap.mu.Lock()
	delete(tap.arpFrom, gatewayIP)
	tap.mu.Unlock()
	if _, _, err := resolveGateway(ep, tap, guestIP, 8*time.Second); err != nil {
		return "", fmt.Errorf("after the flood: %w; %s", err, nicCounters(reg))
	}
	detail := fmt.Sprintf("%d of %d datagrams received through a %d-slot ring left unreaped for 5s, then ARP again; %s",
		got, flood, ring, nicCounters(reg))
	if got <= ring {
		return "", errors.New("the ring never filled: " + detail)
	}
	return detail, nil
}

var wantMAC = tcpip.LinkAddress([]byte{0x52, 0x54, 0x00, 0x12, 0x34, 0x56})
