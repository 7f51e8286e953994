package hosttests

import (
	"testing"
	"time"

	"github.com/netramp/netramp/nic/wire"
	"github.com/netramp/netramp/stack/vtest"
	"github.com/netramp/netramp/tcp"
)

// TestPathMTUDropMidTransferLowersTheMSSAndTheBytesArrive narrows the path
// under a transfer in flight: to 1000 bytes (the sender hears a
// fragmentation-needed and lowers its MSS) and then to 500, below IPv4's
// 576-byte floor (the MSS stays at the floor and segments go without DF, so
// the path fragments them). Every byte arrives, in order.
func TestPathMTUDropMidTransferLowersTheMSSAndTheBytesArrive(t *testing.T) {
	d := wire.Dir{RateBps: 100e6, Delay: 5 * time.Millisecond}
	p := newPair(t, wire.Config{AtoB: d, BtoA: d}, tcp.Options{}, tcp.Options{}, 3)
	c, s := dial(t, p, vtest.SideA, 80)
	const n = 8 << 20
	so, si := p.Start(c, s, n, 5)
	narrow := func(mtu int) func() {
		return func() {
			nd := d
			nd.PathMTU = mtu
			if err := p.Wire.SetDir(wire.SideA, nd); err != nil {
				t.Error(err)
			}
		}
	}
	p.Clock.AfterFunc(100*time.Millisecond, narrow(1000))
	p.Clock.AfterFunc(400*time.Millisecond, narrow(500))
	if err := p.Run(si.Done, 5*time.Minute); err != nil {
		t.Fatalf("%v: received %d of %d;\nA:%s", err, si.Bytes(), n, tcpCounters(p.A.Counters()))
	}
	if err := vtest.Check(so, si, n); err != nil {
		t.Fatal(err)
	}
	ab, _ := p.Wire.Stats()
	if lowered := counter(p.A.Counters(), "tcp.pmtu.lowered"); lowered < 2 || ab.FragNeeded < 2 || ab.Fragmented == 0 {
		t.Fatalf("tcp.pmtu.lowered %d, wire: %d fragmentation-needed sent, %d packets fragmented; want at least 2, 2 and 1",
			lowered, ab.FragNeeded, ab.Fragmented)
	}
}
