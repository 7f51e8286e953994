//go:build linux

package linuxpeer_test

import (
	"context"
	"fmt"
	"net"
	"net/netip"

	"github.com/netramp/netramp/nic/linuxpeer"
	"github.com/netramp/netramp/nic/wire"
	"github.com/netramp/netramp/stack"
)

// A stack in this process talks to the kernel's TCP over nic/wire's pilot
// preset in real time (root only).
func ExampleStart() {
	ctx := context.Background()
	path, _ := wire.Preset("pilot")
	p, err := linuxpeer.Start(ctx, linuxpeer.Config{Wire: path})
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
	toKernel, _ := p.Wire().Stats()
	fmt.Println(r, err, toKernel.Lateness)
}

// Both ends are kernel sockets, each in its own namespace: the bench's
// Linux arm on the same wire as its other arms.
func ExampleStartPair() {
	ctx := context.Background()
	path, _ := wire.Preset("t14")
	path.AtoB.TxRing = 0 // the kernel's device queue is its card
	pr, err := linuxpeer.StartPair(ctx, linuxpeer.Config{Wire: path})
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
	ab, _ := pr.Wire().Stats()
	fmt.Println(r, err, ab.Lateness)
}
