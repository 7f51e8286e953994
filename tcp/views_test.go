package tcp_test

import (
	"context"
	"io"
	"net/netip"
	"testing"
	"time"

	"gvisor.dev/gvisor/pkg/tcpip"
	"gvisor.dev/gvisor/pkg/tcpip/link/nested"
	"gvisor.dev/gvisor/pkg/tcpip/link/pipe"
	gstack "gvisor.dev/gvisor/pkg/tcpip/stack"

	"github.com/netramp/netramp/stack"
)

// viewCount counts the data packets a link is given and those whose
// payload lies in more than one view.
type viewCount struct {
	nested.Endpoint
	data, split int
}

func (l *viewCount) WritePackets(pkts gstack.PacketBufferList) (int, tcpip.Error) {
	for _, p := range pkts.AsSlice() {
		if p.Data().Size() > 0 {
			l.data++
			if len(p.AsSlices()) > 2 { // the headers' view and the payload's
				l.split++
			}
		}
	}
	return l.Endpoint.WritePackets(pkts)
}

// Issue 12: in a bulk transfer each data segment's payload is one view of
// the send queue, as gVisor's TCP sends it. Every further view is paid per
// packet in every layer: cloned from the queue, cloned again by the link,
// summed, released twice and kept by the receiver. A payload spans two views
// only where it crosses from one of the queue's chunks into the next (about
// 1% of segments with 64 KB writes over an in-memory link); chunks as small
// as segments would split most of them.
func TestBulkDataSegmentsCarryOnePayloadView(t *testing.T) {
	pa, pb := pipe.New("", "", 1500)
	l := &viewCount{}
	l.Endpoint.Init(pa, l)
	src4, dst4 := netip.MustParsePrefix("10.9.0.1/24"), netip.MustParsePrefix("10.9.0.2/24")
	src, err := stack.New(stack.Options{NICs: []stack.NIC{{Link: l, Addr: src4}}})
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	dst, err := stack.New(stack.Options{NICs: []stack.NIC{{Link: pb, Addr: dst4}}})
	if err != nil {
		t.Fatal(err)
	}
	defer dst.Close()
	ln, err := dst.Listen(netip.AddrPortFrom(dst4.Addr(), 5202))
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	const total = 16 << 20
	got := make(chan int64, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			got <- -1
			return
		}
		n, _ := io.Copy(io.Discard, c)
		c.Close()
		got <- n
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := src.Dial(ctx, netip.AddrPortFrom(dst4.Addr(), 5202))
	if err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 64<<10)
	for left := total; left > 0; left -= len(buf) {
		if _, err := c.Write(buf); err != nil {
			t.Fatal(err)
		}
	}
	c.Close()
	if n := <-got; n != total {
		t.Fatalf("%d of %d bytes arrived", n, total)
	}
	if l.data < total/1500 {
		t.Fatalf("%d data packets for %d bytes", l.data, total)
	}
	if l.split*20 > l.data {
		t.Fatalf("%d of %d data packets carry their payload in more than one view, want at most 5%%", l.split, l.data)
	}
	t.Logf("%d of %d data packets span two views", l.split, l.data)
}
