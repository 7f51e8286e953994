package stack_test

import (
	"context"
	"fmt"
	"io"
	"net/netip"
	"time"

	"gvisor.dev/gvisor/pkg/tcpip"

	"github.com/netramp/netramp/nic/wire"
	"github.com/netramp/netramp/stack"
	"github.com/netramp/netramp/tcp"
)

// Two stacks running netramp's TCP on an emulated 1 ms path: one listens,
// the other dials, and the bytes come back with the counters to explain them.
func Example() {
	clk := tcpip.NewStdClock()
	w, err := wire.New(clk, wire.Config{
		AtoB: wire.Dir{RateBps: 1e9, Delay: time.Millisecond},
		BtoA: wire.Dir{RateBps: 1e9, Delay: time.Millisecond},
	})
	if err != nil {
		panic(err)
	}
	defer w.Close()
	a, err := stack.New(stack.Options{
		NICs: []stack.NIC{{Link: w.A(), Addr: netip.MustParsePrefix("198.18.0.1/24")}},
		TCP:  tcp.Options{}, // arm B: HyStart++ and the half-window card rule
	})
	if err != nil {
		panic(err)
	}
	defer a.Close()
	b, err := stack.New(stack.Options{
		NICs: []stack.NIC{{Link: w.B(), Addr: netip.MustParsePrefix("198.18.0.2/24")}},
	})
	if err != nil {
		panic(err)
	}
	defer b.Close()

	ln, err := b.Listen(netip.MustParseAddrPort("198.18.0.2:80"))
	if err != nil {
		panic(err)
	}
	defer ln.Close()
	go func() {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		io.Copy(c, c) // echo until the client half-closes
	}()

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	conn, err := a.Dial(ctx, netip.MustParseAddrPort("198.18.0.2:80"))
	if err != nil {
		panic(err)
	}
	defer conn.Close()
	conn.Write([]byte("hello, netramp"))
	conn.(interface{ CloseWrite() error }).CloseWrite()
	got, _ := io.ReadAll(conn)
	fmt.Println(string(got))
	fmt.Println("segments sent:", a.Counters().Lookup("tcp.segments.out").Load() > 0)
	// Output:
	// hello, netramp
	// segments sent: true
}
