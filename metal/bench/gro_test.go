package bench

import (
	"context"
	"crypto/sha256"
	"io"
	"math/rand/v2"
	"net/netip"
	"testing"
	"time"

	"gvisor.dev/gvisor/pkg/tcpip/link/pipe"

	"github.com/netramp/netramp/counters"
	"github.com/netramp/netramp/nic/gso"
	"github.com/netramp/netramp/stack"
)

// A bulk transfer over links that offer TSO and deliver each GSO packet
// whole (GRO) carries every byte in order, whichever TCP sends and
// receives: the receiver takes 64 KB aggregates. Real time, but it asserts
// bytes, not speed.
func TestGROTransferCarriesEveryByte(t *testing.T) {
	for _, c := range []struct {
		name       string
		srcGV, dst bool
	}{
		{"netramp to netramp", false, false},
		{"gVisor to netramp", true, false},
		{"gVisor to gVisor", true, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			const n = 8 << 20
			pa, pb := pipe.New("", "", 1500)
			ra := counters.NewRegistry()
			la, err := gso.NewLink(pa, gso.LinkOptions{MaxSize: 64 << 10, GRO: true, Counters: ra})
			if err != nil {
				t.Fatal(err)
			}
			lb, err := gso.NewLink(pb, gso.LinkOptions{MaxSize: 64 << 10, GRO: true})
			if err != nil {
				t.Fatal(err)
			}
			src, err := stack.New(stack.Options{GVisorTCP: c.srcGV, NICs: []stack.NIC{{Link: la, Addr: sourcePrefix}}})
			if err != nil {
				t.Fatal(err)
			}
			defer src.Close()
			dst, err := stack.New(stack.Options{GVisorTCP: c.dst, NICs: []stack.NIC{{Link: lb, Addr: sinkPrefix}}})
			if err != nil {
				t.Fatal(err)
			}
			defer dst.Close()
			ln, err := dst.Listen(netip.AddrPortFrom(sinkPrefix.Addr(), 5203))
			if err != nil {
				t.Fatal(err)
			}
			defer ln.Close()
			type result struct {
				n   int64
				sum [32]byte
				err error
			}
			got := make(chan result, 1)
			go func() {
				conn, err := ln.Accept()
				if err != nil {
					got <- result{err: err}
					return
				}
				defer conn.Close()
				h := sha256.New()
				k, err := io.Copy(h, conn)
				var r result
				r.n, r.err = k, err
				h.Sum(r.sum[:0])
				got <- r
			}()
			data := make([]byte, n)
			rng := rand.NewChaCha8([32]byte{7})
			rng.Read(data)
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			conn, err := src.Dial(ctx, netip.AddrPortFrom(sinkPrefix.Addr(), 5203))
			cancel()
			if err != nil {
				t.Fatal(err)
			}
			if _, err := conn.Write(data); err != nil {
				t.Fatal(err)
			}
			conn.Close()
			select {
			case r := <-got:
				if r.err != nil || r.n != n || r.sum != sha256.Sum256(data) {
					t.Fatalf("received %d of %d bytes (%v), hash equal %v", r.n, n, r.err, r.sum == sha256.Sum256(data))
				}
			case <-time.After(2 * time.Minute):
				t.Fatal("the transfer did not finish")
			}
			s := ra.Snapshot()
			if s["nic.gso.whole"] == 0 || s["nic.gso.drops"] != 0 || s["nic.gso.frames"] != 0 {
				t.Errorf("the sender's link passed %d aggregates, dropped %d, cut %d frames: want aggregates only",
					s["nic.gso.whole"], s["nic.gso.drops"], s["nic.gso.frames"])
			}
			t.Logf("%d aggregates", s["nic.gso.whole"])
		})
	}
}
