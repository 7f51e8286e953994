package tcp_test

import (
	"context"
	"net/netip"
	"sync/atomic"
	"testing"
	"time"

	"gvisor.dev/gvisor/pkg/tcpip"
	"gvisor.dev/gvisor/pkg/tcpip/link/nested"
	"gvisor.dev/gvisor/pkg/tcpip/link/pipe"
	gstack "gvisor.dev/gvisor/pkg/tcpip/stack"

	"github.com/netramp/netramp/stack"
)

// Issue 12: what one stack's TCP asks of the layers below it per packet, in
// a bulk transfer between two stacks over an in-memory link, as the CPU
// bench runs it.

// countLink counts what a stack does to its link: packets written, data
// packets whose payload lies in more than one view, and MTU queries
// (atomic: the writer, the reader and timers all write).
type countLink struct {
	nested.Endpoint
	pkts, data, split, mtus atomic.Int64
}

func (l *countLink) WritePackets(pkts gstack.PacketBufferList) (int, tcpip.Error) {
	for _, p := range pkts.AsSlice() {
		l.pkts.Add(1)
		if p.Data().Size() > 0 {
			l.data.Add(1)
			if len(p.AsSlices()) > 2 { // the headers' view and the payload's
				l.split.Add(1)
			}
		}
	}
	return l.Endpoint.WritePackets(pkts)
}

func (l *countLink) MTU() uint32 {
	l.mtus.Add(1)
	return l.Endpoint.MTU()
}

// bulkTransfer sends total bytes in 64 KB writes from a stack on link src
// to one on dst and reads them all, as metal/bench's cpu rows do. The
// counters are read once the transfer is over (both stacks closed).
func bulkTransfer(t *testing.T, total int) (src, dst *countLink) {
	pa, pb := pipe.New("", "", 1500)
	src, dst = &countLink{}, &countLink{}
	src.Endpoint.Init(pa, src)
	dst.Endpoint.Init(pb, dst)
	src4, dst4 := netip.MustParsePrefix("10.9.0.1/24"), netip.MustParsePrefix("10.9.0.2/24")
	ss, err := stack.New(stack.Options{NICs: []stack.NIC{{Link: src, Addr: src4}}})
	if err != nil {
		t.Fatal(err)
	}
	defer ss.Close()
	ds, err := stack.New(stack.Options{NICs: []stack.NIC{{Link: dst, Addr: dst4}}})
	if err != nil {
		t.Fatal(err)
	}
	defer ds.Close()
	ln, err := ds.Listen(netip.AddrPortFrom(dst4.Addr(), 5202))
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	got := drain(ln)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := ss.Dial(ctx, netip.AddrPortFrom(dst4.Addr(), 5202))
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
	if n := <-got; n != int64(total) {
		t.Fatalf("%d of %d bytes arrived", n, total)
	}
	if n := src.data.Load(); n < int64(total/1500) {
		t.Fatalf("%d data packets for %d bytes", n, total)
	}
	return src, dst
}

// Each data segment's payload is one view of the send queue, as gVisor's
// TCP sends it. Every further view is paid per packet in every layer:
// cloned from the queue, cloned again by the link, summed, released twice
// and kept by the receiver. A payload spans two views only where it crosses
// from one of the queue's chunks into the next (about 1% of segments with
// 64 KB writes); chunks as small as segments would split most of them.
func TestBulkDataSegmentsCarryOnePayloadView(t *testing.T) {
	src, _ := bulkTransfer(t, 16<<20)
	split, data := src.split.Load(), src.data.Load()
	if split*20 > data {
		t.Fatalf("%d of %d data packets carry their payload in more than one view, want at most 5%%", split, data)
	}
	t.Logf("%d of %d data packets span two views", split, data)
}

// The link's MTU is asked once per packet written, by gVisor's IPv4 on its
// way out (writePacketPostRouting); the TCP asks it per route (path), not
// per segment it builds or takes in order, which cost a network endpoint
// lookup and three interface calls each.
func TestBulkTransferAsksTheMTUOncePerPacket(t *testing.T) {
	src, dst := bulkTransfer(t, 16<<20)
	for _, l := range []struct {
		name string
		*countLink
	}{{"sender", src}, {"receiver", dst}} {
		mtus, pkts := l.mtus.Load(), l.pkts.Load()
		if mtus > pkts+64 {
			t.Errorf("%s: the link's MTU asked %d times for %d packets written", l.name, mtus, pkts)
		}
		t.Logf("%s: %d MTU queries, %d packets", l.name, mtus, pkts)
	}
}
