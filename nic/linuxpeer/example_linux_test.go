//go:build linux

package linuxpeer_test

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"time"

	"github.com/netramp/netramp/nic/linuxpeer"
	"github.com/netramp/netramp/stack"
)

// A stack in this process talks to the kernel's TCP over an emulated
// 100 Mbit/s, 10 ms RTT path (root only).
func ExampleStart() {
	ctx := context.Background()
	p, err := linuxpeer.Start(ctx, linuxpeer.Config{Path: linuxpeer.Symmetric(100e6, 10*time.Millisecond, 0)})
	if err != nil {
		fmt.Println(err) // errors.Is(err, netns.ErrUnsupported) when not root
		return
	}
	defer p.Close()
	s, err := stack.New(stack.Options{NICs: []stack.NIC{{Link: p.Link(), Addr: p.LocalPrefix()}}})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer s.Close()
	ln, _ := p.Listen(5001) // a kernel socket in the namespace, cubic
	defer ln.Close()
	r, err := linuxpeer.MeasureRamp(ctx, func(ctx context.Context) (net.Conn, error) {
		return s.Dial(ctx, netip.AddrPortFrom(p.Addr(), 5001))
	}, ln, nil)
	fmt.Println(r, err, p.Stats().Out.Lateness)
}

// Both ends are kernel sockets, each in its own namespace: the bench's
// Linux arm over the same emulated path.
func ExampleStartPair() {
	ctx := context.Background()
	pr, err := linuxpeer.StartPair(ctx, linuxpeer.Config{Path: linuxpeer.Symmetric(1e9, 2*time.Millisecond, 0)})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer pr.Close()
	ln, _ := pr.B.Listen(5001)
	defer ln.Close()
	r, err := linuxpeer.MeasureRamp(ctx, func(ctx context.Context) (net.Conn, error) {
		return pr.A.Dial(ctx, netip.AddrPortFrom(pr.B.Addr(), 5001))
	}, ln, nil)
	fmt.Println(r, err, pr.Stats().Out.Lateness)
}
