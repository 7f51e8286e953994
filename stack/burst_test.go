package stack

import (
	"net/netip"
	"testing"

	"github.com/netramp/netramp/nic/gso"
)

// TestBurstPipeCarriesEitherTCP: over nic/gso's pipe, which reports each
// write as a delivery burst, both TCPs carry a transfer intact; ours sees
// the link's GSO through the stack's wrapper and ACKs once for many of a
// burst's frames (coalesce.go): at the burst's end, or, where the sender's
// next burst arrives nested in the receiver's own ACK write (the pipe
// delivers inline, and the sender's write waits for no other goroutine's),
// when that write ends.
func TestBurstPipeCarriesEitherTCP(t *testing.T) {
	for _, gv := range []bool{false, true} {
		la, lb, err := gso.NewPipe(1500, gso.LinkOptions{})
		if err != nil {
			t.Fatal(err)
		}
		a, err := New(Options{GVisorTCP: gv, NICs: []NIC{{Link: la, Addr: netip.MustParsePrefix("198.18.0.1/24")}}})
		if err != nil {
			t.Fatal(err)
		}
		b, err := New(Options{GVisorTCP: gv, NICs: []NIC{{Link: lb, Addr: netip.MustParsePrefix("198.18.0.2/24")}}})
		if err != nil {
			t.Fatal(err)
		}
		transfer(t, a, b, 4<<20)
		if la.Counters().Packets.Load() == 0 {
			t.Errorf("gVisor TCP %v: no GSO packet reached the link", gv)
		}
		c := b.Counters().Snapshot()
		acks := c["tcp.acks.sent.burst-end"] + c["tcp.acks.sent.every-second"]
		if frames := la.Counters().Frames.Load(); !gv && (c["tcp.acks.coalesced"] == 0 || acks > frames/8) {
			t.Errorf("our TCP sent %d ACKs for %d frames (%d coalesced), want one for many", acks, frames, c["tcp.acks.coalesced"])
		}
		a.Close()
		b.Close()
	}
}
