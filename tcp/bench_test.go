package tcp_test

import (
	"context"
	"io"
	"net/netip"
	"testing"
	"time"

	"gvisor.dev/gvisor/pkg/tcpip/link/pipe"

	"github.com/netramp/netramp/stack"
)

// BenchmarkBulkTransfer measures the data path's cost per byte (and its
// allocations, with -benchmem) for one bulk transfer between two stacks of
// one process over an in-memory link, at the two MTUs the CPU bench uses.
func BenchmarkBulkTransfer(b *testing.B) {
	for _, mtu := range []uint32{1500, 9000} {
		b.Run(map[uint32]string{1500: "mtu1500", 9000: "mtu9000"}[mtu], func(b *testing.B) {
			benchTransfer(b, mtu, 16<<20)
		})
	}
}

func benchTransfer(b *testing.B, mtu uint32, n int64) {
	src4 := netip.MustParsePrefix("10.9.0.1/24")
	dst4 := netip.MustParsePrefix("10.9.0.2/24")
	b.SetBytes(n)
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		la, lb := pipe.New("", "", mtu)
		src, err := stack.New(stack.Options{NICs: []stack.NIC{{Link: la, Addr: src4}}})
		if err != nil {
			b.Fatal(err)
		}
		dst, err := stack.New(stack.Options{NICs: []stack.NIC{{Link: lb, Addr: dst4}}})
		if err != nil {
			b.Fatal(err)
		}
		ln, err := dst.Listen(netip.AddrPortFrom(dst4.Addr(), 5202))
		if err != nil {
			b.Fatal(err)
		}
		got := make(chan int64, 1)
		go func() {
			c, err := ln.Accept()
			if err != nil {
				got <- -1
				return
			}
			k, _ := io.Copy(io.Discard, c)
			c.Close()
			got <- k
		}()
		b.StartTimer()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		c, err := src.Dial(ctx, netip.AddrPortFrom(dst4.Addr(), 5202))
		cancel()
		if err != nil {
			b.Fatal(err)
		}
		buf := make([]byte, 64<<10)
		for left := n; left > 0; {
			k := min(int64(len(buf)), left)
			m, err := c.Write(buf[:k])
			if err != nil {
				b.Fatal(err)
			}
			left -= int64(m)
		}
		c.Close()
		if k := <-got; k != n {
			b.Fatalf("%d of %d bytes arrived", k, n)
		}
		b.StopTimer()
		ln.Close()
		src.Close()
		dst.Close()
		b.StartTimer()
	}
}
