//go:build linux

package linuxpeer_test

import (
	"context"
	"errors"
	"net"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/netramp/netramp/nic/linuxpeer"
	"github.com/netramp/netramp/nic/linuxpeer/peertest"
	"github.com/netramp/netramp/nic/netns"
	"github.com/netramp/netramp/nic/wire"
	"github.com/netramp/netramp/stack"
)

func skipUnlessRoot(t *testing.T) {
	t.Helper()
	if err := netns.Check(); err != nil {
		t.Skipf("skipping: the Linux kernel as peer needs root, /dev/net/tun and iproute2: %v", err)
	}
}

func startPeer(t *testing.T, cfg linuxpeer.Config) *linuxpeer.Peer {
	t.Helper()
	p, err := linuxpeer.Start(context.Background(), cfg)
	if errors.Is(err, netns.ErrUnsupported) {
		t.Skipf("skipping: %v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := p.Close(); err != nil {
			t.Errorf("peer close: %v", err)
		}
	})
	return p
}

// symmetric is a path with the same rate, delay and loss both ways, rtt
// split evenly.
func symmetric(rateBps int64, rtt time.Duration, loss float64) wire.Config {
	d := wire.Dir{RateBps: rateBps, Delay: rtt / 2, Loss: loss}
	return wire.Config{AtoB: d, BtoA: d, Seed: 1}
}

// arms are the stacks interop runs against the kernel: gVisor's TCP (the
// reference) and netramp's.
var arms = []struct {
	name   string
	gvisor bool
}{{"gvisor-tcp", true}, {"netramp-tcp", false}}

func newStack(t *testing.T, p *linuxpeer.Peer, gvisor bool) *stack.Stack {
	t.Helper()
	s, err := stack.New(stack.Options{GVisorTCP: gvisor, NICs: []stack.NIC{{Link: p.Link(), Addr: p.LocalPrefix()}}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	return s
}

// stackDialsKernel has the kernel listen on port, our stack dial it and the
// kernel accept, within timeout; both ends close when the test ends. It
// returns the stack's conn, the kernel's, and the deadline.
func stackDialsKernel(t *testing.T, p *linuxpeer.Peer, s *stack.Stack, port uint16, timeout time.Duration) (net.Conn, net.Conn, time.Time) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	dl, _ := ctx.Deadline()
	ln, err := p.Listen(port)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	c, err := s.Dial(ctx, netip.AddrPortFrom(p.Addr(), port))
	if err != nil {
		t.Fatalf("stack dial: %v", err)
	}
	t.Cleanup(func() { c.Close() })
	k, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { k.Close() })
	return c, k, dl
}

// exchange runs peertest.Exchange on both conns at once and checks n bytes
// arrived intact each way.
func exchange(t *testing.T, a, b net.Conn, n int64, deadline time.Time) {
	t.Helper()
	a.SetDeadline(deadline)
	b.SetDeadline(deadline)
	type out struct {
		r   peertest.Result
		err error
	}
	ch := make(chan out, 1)
	go func() { r, err := peertest.Exchange(b, n, 2); ch <- out{r, err} }()
	ra, erra := peertest.Exchange(a, n, 1)
	ob := <-ch
	if err := errors.Join(erra, ob.err); err != nil {
		t.Fatal(err)
	}
	if ra.Received != n || ob.r.Received != n {
		t.Fatalf("received %d and %d bytes, want %d each way", ra.Received, ob.r.Received, n)
	}
	if ra.ReceivedSum != ob.r.SentSum || ob.r.ReceivedSum != ra.SentSum {
		t.Fatalf("SHA-256 mismatch: a got %x… (b sent %x…), b got %x… (a sent %x…)",
			ra.ReceivedSum[:6], ob.r.SentSum[:6], ob.r.ReceivedSum[:6], ra.SentSum[:6])
	}
}

// TestInteropLinuxKernel64MBEachWay runs 64 MB each way between a stack in
// this process and the kernel's TCP in a namespace, with the stack dialling
// and with the kernel dialling, over an emulated 1 ms RTT path; SHA-256 must
// match both ways.
func TestInteropLinuxKernel64MBEachWay(t *testing.T) {
	skipUnlessRoot(t)
	const n = 64 << 20
	for _, arm := range arms {
		t.Run(arm.name, func(t *testing.T) {
			p := startPeer(t, linuxpeer.Config{Wire: symmetric(0, time.Millisecond, 0)})
			s := newStack(t, p, arm.gvisor)
			out, err := p.Kernel.Command(context.Background(), "ip", "-4", "-o", "addr", "show").CombinedOutput()
			if err != nil || !strings.Contains(string(out), p.Addr().String()+"/24") {
				t.Fatalf("a command run in the namespace does not see the kernel's address %v: %v: %s", p.Addr(), err, out)
			}
			// Each direction gets its own generous deadline: a loaded CI
			// machine (or -race) makes 128 MB take tens of seconds.
			t.Run("stack-dials", func(t *testing.T) {
				c, k, dl := stackDialsKernel(t, p, s, 5001, 120*time.Second)
				start := time.Now()
				exchange(t, c, k, n, dl)
				t.Logf("%d MB each way in %v", n>>20, time.Since(start).Round(time.Millisecond))
			})
			t.Run("kernel-dials", func(t *testing.T) {
				ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
				defer cancel()
				dl, _ := ctx.Deadline()
				ln, err := s.Listen(netip.AddrPortFrom(p.LocalPrefix().Addr(), 5002))
				if err != nil {
					t.Fatal(err)
				}
				defer ln.Close()
				k, err := p.Dial(ctx, netip.AddrPortFrom(p.LocalPrefix().Addr(), 5002))
				if err != nil {
					t.Fatalf("kernel dial: %v", err)
				}
				defer k.Close()
				c, err := ln.Accept()
				if err != nil {
					t.Fatal(err)
				}
				defer c.Close()
				start := time.Now()
				exchange(t, k, c, n, dl)
				t.Logf("%d MB each way in %v", n>>20, time.Since(start).Round(time.Millisecond))
			})
			ab, ba := p.Wire().Stats()
			t.Logf("wire to the kernel: %d frames, queue drops %d; %v", ab.DeliveredFrames, ab.DropQueue, ab.Lateness)
			t.Logf("wire to the stack:  %d frames, queue drops %d; %v", ba.DeliveredFrames, ba.DropQueue, ba.Lateness)
		})
	}
}
