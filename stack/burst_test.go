package stack

import (
	"net/netip"
	"testing"

	"github.com/netramp/netramp/nic/gso"
)

// TestBurstPipeCarriesEitherTCP: over nic/gso's pipe, which reports each
// write as a delivery burst, both TCPs carry a transfer intact; ours sees
// the link's GSO through the stack's wrapper and ACKs at the bursts' ends.
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
		held := b.Counters().Snapshot()["tcp.acks.sent.burst-end"]
		if !gv && held == 0 {
			t.Error("our TCP sent no ACK at a burst's end")
		}
		a.Close()
		b.Close()
	}
}
