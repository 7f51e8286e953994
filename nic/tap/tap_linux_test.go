//go:build linux

package tap_test

import (
	"bytes"
	"context"
	"errors"
	"net"
	"net/netip"
	"os"
	"testing"
	"time"

	"github.com/netramp/netramp/counters"
	"github.com/netramp/netramp/nic/linuxpeer/peertest"
	"github.com/netramp/netramp/nic/netns"
	"github.com/netramp/netramp/nic/netns/netnstest"
	"github.com/netramp/netramp/nic/tap"
	"github.com/netramp/netramp/stack"
	"gvisor.dev/gvisor/pkg/tcpip"
	"gvisor.dev/gvisor/pkg/tcpip/checksum"
	"gvisor.dev/gvisor/pkg/tcpip/header"
)

var (
	ourMAC    = net.HardwareAddr{0x02, 0, 0x5e, 0, 0, 1}
	kernelMAC = net.HardwareAddr{0x02, 0, 0x5e, 0, 0, 2}
	ourAddr   = netip.MustParseAddr("198.18.0.1")
	kernAddr  = netip.MustParseAddr("198.18.0.2")
)

// kernelSide makes a namespace with IPv6 off, opens a TAP inside it on a
// locked thread, and gives the kernel's side address .2 and a permanent
// neighbour entry for ours.
func kernelSide(t *testing.T, cfg tap.Config) (*netns.NS, *tap.Device) {
	t.Helper()
	ns := netnstest.New(t, "tap")
	cfg.Name, cfg.Netns = "nrtap0", ns.Path()
	dev, err := tap.Open(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { dev.Close() })
	lc := netns.LinkConfig{Dev: "nrtap0", MAC: kernelMAC.String(), Addr: kernAddr.String() + "/24",
		Peer: ourAddr.String(), PeerMAC: ourMAC.String()}
	if cfg.TUN {
		lc = netns.LinkConfig{Dev: "nrtap0", Addr: kernAddr.String() + "/24"} // no link layer
	}
	if err := ns.SetupLink(lc); err != nil {
		t.Fatal(err)
	}
	return ns, dev
}

// echoRequest is an Ethernet frame with an ICMP echo request from us to the
// kernel's address.
func echoRequest(id uint16, data []byte) []byte {
	b := make([]byte, header.EthernetMinimumSize+header.IPv4MinimumSize+header.ICMPv4MinimumSize+len(data))
	header.Ethernet(b).Encode(&header.EthernetFields{SrcAddr: tcpip.LinkAddress(ourMAC), DstAddr: tcpip.LinkAddress(kernelMAC), Type: header.IPv4ProtocolNumber})
	ip := header.IPv4(b[header.EthernetMinimumSize:])
	ip.Encode(&header.IPv4Fields{TotalLength: uint16(len(ip)), TTL: 64, Protocol: uint8(header.ICMPv4ProtocolNumber),
		SrcAddr: tcpip.AddrFrom4(ourAddr.As4()), DstAddr: tcpip.AddrFrom4(kernAddr.As4())})
	ip.SetChecksum(^ip.CalculateChecksum())
	icmp := header.ICMPv4(ip.Payload())
	icmp.SetType(header.ICMPv4Echo)
	icmp.SetIdent(id)
	icmp.SetSequence(1)
	copy(icmp.Payload(), data)
	icmp.SetChecksum(^checksum.Checksum(icmp, 0))
	return b
}

// TestTAPFrameWrittenReachesKernelAndReplyIsRead writes an ICMP echo request
// into the TAP and reads the kernel's echo reply back from it: one frame each
// way through a device inside a namespace.
func TestTAPFrameWrittenReachesKernelAndReplyIsRead(t *testing.T) {
	for _, c := range []struct {
		name string
		cfg  tap.Config
	}{{"plain", tap.Config{}}, {"vnet-hdr", tap.Config{VnetHdr: true, Offload: true}}, {"tun", tap.Config{TUN: true}}} {
		t.Run(c.name, func(t *testing.T) {
			_, dev := kernelSide(t, c.cfg)
			data := []byte("netramp tap round trip")
			frame := echoRequest(0x4e52, data)
			l2 := header.EthernetMinimumSize
			if c.cfg.TUN {
				frame, l2 = frame[header.EthernetMinimumSize:], 0
			}
			if c.cfg.VnetHdr {
				frame = append(make([]byte, tap.VnetHdrLen), frame...)
			}
			if _, err := dev.Write(frame); err != nil {
				t.Fatalf("write: %v", err)
			}
			buf := make([]byte, 70000)
			deadline := time.Now().Add(3 * time.Second)
			for {
				if time.Now().After(deadline) {
					t.Fatal("no echo reply from the kernel within 3 s")
				}
				n, err := readTimeout(dev, buf, time.Until(deadline))
				if err != nil {
					t.Fatalf("read: %v", err)
				}
				f := buf[dev.HeaderLen():n]
				if len(f) < l2+header.IPv4MinimumSize+header.ICMPv4MinimumSize {
					continue
				}
				if l2 > 0 {
					eth := header.Ethernet(f)
					if eth.Type() != header.IPv4ProtocolNumber || eth.DestinationAddress() != tcpip.LinkAddress(ourMAC) {
						continue
					}
				} else if header.IPVersion(f) != header.IPv4Version {
					continue
				}
				ip := header.IPv4(f[l2:])
				if ip.Protocol() != uint8(header.ICMPv4ProtocolNumber) {
					continue
				}
				icmp := header.ICMPv4(ip.Payload())
				if icmp.Type() != header.ICMPv4EchoReply || icmp.Ident() != 0x4e52 {
					continue
				}
				if !bytes.Equal(icmp.Payload(), data) {
					t.Fatalf("echo reply carries %q, want %q", icmp.Payload(), data)
				}
				if ip.SourceAddress() != tcpip.AddrFrom4(kernAddr.As4()) {
					t.Fatalf("echo reply from %v", ip.SourceAddress())
				}
				return
			}
		})
	}
}

// exchangeWithKernel dials ln from a kernel socket in ns, accepts, and sends
// n bytes each way at once (30 s limit); it fails the test unless every
// byte arrives intact both ways. The caller closes the accepted conn; the
// kernel's closes when the test ends.
func exchangeWithKernel(t *testing.T, ns *netns.NS, ln net.Listener, n int64) (sc net.Conn, stackRes, kernelRes peertest.Result) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	var kc net.Conn
	if err := ns.Do(func() error {
		var err error
		kc, err = (&net.Dialer{}).DialContext(ctx, "tcp4", ln.Addr().String())
		return err
	}); err != nil {
		t.Fatalf("kernel dial: %v", err)
	}
	t.Cleanup(func() { kc.Close() })
	sc, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	dl, _ := ctx.Deadline()
	kc.SetDeadline(dl)
	sc.SetDeadline(dl)
	type out struct {
		r   peertest.Result
		err error
	}
	kch := make(chan out, 1)
	go func() { r, err := peertest.Exchange(kc, n, 1); kch <- out{r, err} }()
	sr, serr := peertest.Exchange(sc, n, 2)
	ko := <-kch
	if err := errors.Join(serr, ko.err); err != nil {
		sc.Close()
		t.Fatal(err)
	}
	if sr.Received != n || ko.r.Received != n {
		sc.Close()
		t.Fatalf("received %d (stack) and %d (kernel), want %d each", sr.Received, ko.r.Received, n)
	}
	if sr.ReceivedSum != ko.r.SentSum || ko.r.ReceivedSum != sr.SentSum {
		sc.Close()
		t.Fatalf("SHA-256 mismatch: kernel→stack %x vs %x, stack→kernel %x vs %x",
			ko.r.SentSum[:4], sr.ReceivedSum[:4], sr.SentSum[:4], ko.r.ReceivedSum[:4])
	}
	return sc, sr, ko.r
}

func readTimeout(dev *tap.Device, b []byte, d time.Duration) (int, error) {
	type res struct {
		n   int
		err error
	}
	ch := make(chan res, 1)
	go func() { n, err := dev.Read(b); ch <- res{n, err} }()
	select {
	case r := <-ch:
		return r.n, r.err
	case <-time.After(d):
		dev.Close()
		<-ch
		return 0, os.ErrDeadlineExceeded
	}
}

// TestTAPEndpointCarriesKernelTCPBothWays runs a gVisor stack on the TAP
// endpoint and exchanges 8 MB each way with a kernel socket in the
// namespace; with offload on the kernel sends GSO frames, which the endpoint
// must split into segments the stack accepts, or with GRO hand up whole as
// aggregates the stack accepts.
func TestTAPEndpointCarriesKernelTCPBothWays(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  tap.Config
		gro  bool
	}{
		{"plain", tap.Config{}, false},
		{"offload", tap.Config{VnetHdr: true, Offload: true}, false},
		{"tun-offload", tap.Config{TUN: true, VnetHdr: true, Offload: true}, false},
		{"offload-gro", tap.Config{VnetHdr: true, Offload: true}, true},
		{"tun-offload-gro", tap.Config{TUN: true, VnetHdr: true, Offload: true}, true},
	} {
		offload, gro := tc.cfg.Offload, tc.gro
		t.Run(tc.name, func(t *testing.T) {
			ns, dev := kernelSide(t, tc.cfg)
			reg := counters.NewRegistry()
			ep, err := tap.New(dev, tap.Options{MAC: ourMAC, Counters: reg, GRO: gro})
			if err != nil {
				t.Fatal(err)
			}
			var neigh []peertest.Neighbour
			if !tc.cfg.TUN {
				neigh = append(neigh, peertest.Neighbour{Addr: kernAddr, MAC: kernelMAC})
			}
			g, err := peertest.NewGVisor(ep, netip.PrefixFrom(ourAddr, 24), neigh...)
			if err != nil {
				t.Fatal(err)
			}
			defer g.Close()
			ln, err := g.Listen(netip.AddrPortFrom(ourAddr, 5001))
			if err != nil {
				t.Fatal(err)
			}
			defer ln.Close()
			const n = 8 << 20
			sc, sr, _ := exchangeWithKernel(t, ns, ln, n)
			defer sc.Close()
			c := ep.Counters()
			t.Logf("rx %d frames (%d GSO split, %d whole), tx %d frames, drops rx %d tx %d, sha256 %x… / %x…",
				c.RxFrames.Load(), c.RxGSO.Load(), c.RxWhole.Load(), c.TxFrames.Load(), c.RxDrops.Load(), c.TxDrops.Load(),
				sr.SentSum[:4], sr.ReceivedSum[:4])
			if c.TxFrames.Load() < n/1500 || (!gro && c.RxFrames.Load() < n/1500) {
				t.Errorf("counters: rx %d, tx %d frames; a transfer of %d bytes needs more", c.RxFrames.Load(), c.TxFrames.Load(), n)
			}
			switch {
			case gro && (c.RxWhole.Load() == 0 || c.RxGSO.Load() != 0):
				t.Errorf("GRO on: %d GSO frames delivered whole and %d split, want whole only", c.RxWhole.Load(), c.RxGSO.Load())
			case offload && !gro && (c.RxGSO.Load() == 0 || c.RxWhole.Load() != 0):
				t.Errorf("offload on: %d GSO frames split and %d delivered whole, want split only", c.RxGSO.Load(), c.RxWhole.Load())
			}
		})
	}
}

// TestTAPEndpointUnderNetrampStack puts netramp's stack (its own TCP) on
// the TAP endpoint, exchanges 4 MB each way with a kernel socket, and
// checks that closing the stack stops the endpoint's reader; with GSO, our
// TCP's GSO packets go to the kernel whole and the kernel segments them;
// with GRO as well, our TCP takes the kernel's GSO frames whole.
func TestTAPEndpointUnderNetrampStack(t *testing.T) {
	for _, tc := range []struct {
		name     string
		gso, gro bool
	}{{"per-segment", false, false}, {"gso", true, false}, {"gso-gro", true, true}} {
		gso, gro := tc.gso, tc.gro
		t.Run(tc.name, func(t *testing.T) {
			ns, dev := kernelSide(t, tap.Config{VnetHdr: true, Offload: true})
			ep, err := tap.New(dev, tap.Options{MAC: ourMAC, GSO: gso, GRO: gro})
			if err != nil {
				t.Fatal(err)
			}
			s, err := stack.New(stack.Options{NICs: []stack.NIC{{Link: ep, Addr: netip.PrefixFrom(ourAddr, 24)}}})
			if err != nil {
				t.Fatal(err)
			}
			closed := false
			defer func() {
				if !closed {
					s.Close()
				}
			}()
			if err := s.Gvisor().AddStaticNeighbor(1, header.IPv4ProtocolNumber, tcpip.AddrFrom4(kernAddr.As4()), tcpip.LinkAddress(kernelMAC)); err != nil {
				t.Logf("no static neighbour (%v): ARP resolves it", err)
			}
			ln, err := s.Listen(netip.AddrPortFrom(ourAddr, 5001))
			if err != nil {
				t.Fatal(err)
			}
			sc, _, _ := exchangeWithKernel(t, ns, ln, 4<<20)
			if c := ep.Counters().TxGSO.Load(); gso != (c > 0) {
				t.Errorf("GSO %v, but %d GSO packets went to the kernel whole", gso, c)
			}
			if c := ep.Counters().RxWhole.Load(); gro != (c > 0) {
				t.Errorf("GRO %v, but %d GSO frames from the kernel reached our TCP whole", gro, c)
			}
			sc.Close()
			ln.Close()
			done := make(chan struct{})
			go func() { s.Close(); close(done) }()
			select {
			case <-done:
				closed = true
			case <-time.After(5 * time.Second):
				closed = true // do not call Close again from the deferred func
				t.Fatal("stack.Close did not return within 5 s: the TAP reader was not stopped")
			}
		})
	}
}
