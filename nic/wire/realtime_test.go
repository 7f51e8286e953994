package wire

import (
	"context"
	"crypto/sha256"
	"io"
	"math/rand/v2"
	"testing"
	"time"

	"gvisor.dev/gvisor/pkg/tcpip"
	"gvisor.dev/gvisor/pkg/tcpip/adapters/gonet"
	"gvisor.dev/gvisor/pkg/tcpip/network/ipv4"
	"gvisor.dev/gvisor/pkg/tcpip/stack"
	"gvisor.dev/gvisor/pkg/tcpip/transport/tcp"
)

// gvisorStack is a gVisor stack with its own TCP, one NIC on ep at addr.
func gvisorStack(t *testing.T, ep stack.LinkEndpoint, addr tcpip.Address) *stack.Stack {
	t.Helper()
	s := stack.New(stack.Options{
		NetworkProtocols:   []stack.NetworkProtocolFactory{ipv4.NewProtocol},
		TransportProtocols: []stack.TransportProtocolFactory{tcp.NewProtocol},
	})
	for _, opt := range []tcpip.SettableTransportProtocolOption{
		&tcpip.TCPSendBufferSizeRangeOption{Min: 4096, Default: 1 << 20, Max: 8 << 20},
		&tcpip.TCPReceiveBufferSizeRangeOption{Min: 4096, Default: 1 << 20, Max: 8 << 20},
	} {
		if err := s.SetTransportProtocolOption(tcp.ProtocolNumber, opt); err != nil {
			t.Fatalf("tcp option: %v", err)
		}
	}
	sack := tcpip.TCPSACKEnabled(true)
	s.SetTransportProtocolOption(tcp.ProtocolNumber, &sack)
	cc := tcpip.CongestionControlOption("cubic")
	s.SetTransportProtocolOption(tcp.ProtocolNumber, &cc)
	if err := s.CreateNIC(1, ep); err != nil {
		t.Fatalf("CreateNIC: %v", err)
	}
	if err := s.AddProtocolAddress(1, tcpip.ProtocolAddress{
		Protocol:          ipv4.ProtocolNumber,
		AddressWithPrefix: tcpip.AddressWithPrefix{Address: addr, PrefixLen: 15},
	}, stack.AddressProperties{}); err != nil {
		t.Fatalf("AddProtocolAddress: %v", err)
	}
	subnet, _ := tcpip.NewSubnet(tcpip.AddrFrom4([4]byte{198, 18, 0, 0}), tcpip.MaskFromBytes([]byte{255, 254, 0, 0}))
	s.SetRouteTable([]tcpip.Route{{Destination: subnet, NIC: 1}})
	t.Cleanup(func() { s.Close(); s.Wait() })
	return s
}

// TestGvisorTCPCarries64MBOverT14InRealTime shows the wire carries real
// traffic: gVisor's own TCP, two stacks, the t14 path (1 Gbit/s, 2 ms RTT,
// ACKs aggregated per 34 segments, a 256-frame TX ring) on the wall clock.
// It reports figures; it asserts only that every byte arrives intact. Its
// bound, hangBound, is for a hang, not a timing claim: on a loaded host
// gVisor's RTO backoff has stretched the transfer past a minute (CI, load
// of a parallel go test), where it takes a second or two idle.
func TestGvisorTCPCarries64MBOverT14InRealTime(t *testing.T) {
	const hangBound = 5 * time.Minute
	if testing.Short() {
		t.Skip("real-time transfer of 64 MB")
	}
	const size = 64 << 20
	cfg, err := Preset("t14")
	if err != nil {
		t.Fatal(err)
	}
	w, err := New(tcpip.NewStdClock(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	sa := gvisorStack(t, w.A(), addrA)
	sb := gvisorStack(t, w.B(), addrB)

	ln, err := gonet.ListenTCP(sb, tcpip.FullAddress{NIC: 1, Addr: addrB, Port: 5001}, ipv4.ProtocolNumber)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	type result struct {
		sum [32]byte
		n   int64
		err error
	}
	got := make(chan result, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			got <- result{err: err}
			return
		}
		defer c.Close()
		h := sha256.New()
		n, err := io.Copy(h, c)
		var r result
		copy(r.sum[:], h.Sum(nil))
		r.n, r.err = n, err
		got <- r
	}()

	payload := make([]byte, size)
	rng := rand.New(rand.NewPCG(1, 2))
	for i := 0; i+8 <= len(payload); i += 8 {
		v := rng.Uint64()
		for j := 0; j < 8; j++ {
			payload[i+j] = byte(v >> (8 * j))
		}
	}
	want := sha256.Sum256(payload)

	ctx, cancel := context.WithTimeout(context.Background(), hangBound)
	defer cancel()
	start := time.Now()
	c, err := gonet.DialContextTCP(ctx, sa, tcpip.FullAddress{NIC: 1, Addr: addrB, Port: 5001}, ipv4.ProtocolNumber)
	if err != nil {
		t.Fatal(err)
	}
	c.SetDeadline(time.Now().Add(hangBound))
	if _, err := c.Write(payload); err != nil {
		t.Fatalf("write: %v", err)
	}
	c.CloseWrite()
	var r result
	select {
	case r = <-got:
	case <-time.After(hangBound):
		t.Fatalf("receiver did not finish in %v", hangBound)
	}
	el := time.Since(start)
	c.Close()
	if r.err != nil {
		t.Fatalf("receive: %v", r.err)
	}
	if r.n != size || r.sum != want {
		t.Fatalf("received %d bytes, sha256 match %v", r.n, r.sum == want)
	}
	a2b, b2a := w.Stats()
	t.Logf("64 MB in %v (%.1f MB/s); a2b %+v; b2a %+v", el.Round(time.Millisecond), float64(size)/1e6/el.Seconds(), a2b, b2a)
	if b2a.AckReleases == 0 || a2b.DeliveredFrames < size/1500 {
		t.Fatalf("the path was not exercised: a2b %+v b2a %+v", a2b, b2a)
	}
}

// TestSpinBudgetFallsBackToTheShortSpin: the releasing thread spins rtSpin
// before a deadline until it has spun rtSpinBudget in the current
// rtSpinWindow, then only rtSpinShort, and a new window restores rtSpin.
// Time is passed in: nothing here is measured.
func TestSpinBudgetFallsBackToTheShortSpin(t *testing.T) {
	var b spinBudget
	now := time.Second
	if got := b.window(now); got != rtSpin {
		t.Fatalf("fresh budget: spin %v, want %v", got, rtSpin)
	}
	for spun := time.Duration(0); spun < rtSpinBudget; spun += rtSpin {
		if got := b.window(now); got != rtSpin {
			t.Fatalf("after spinning %v of %v: spin %v, want %v", spun, rtSpinBudget, got, rtSpin)
		}
		b.add(rtSpin)
		now += rtSpin
	}
	if got := b.window(now); got != rtSpinShort {
		t.Errorf("budget spent: spin %v, want %v", got, rtSpinShort)
	}
	if got := b.window(b.start + rtSpinWindow); got != rtSpin {
		t.Errorf("next window: spin %v, want %v", got, rtSpin)
	}
}
