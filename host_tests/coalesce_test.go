package hosttests

import (
	"testing"
	"time"

	"github.com/netramp/netramp/nic/wire"
	"github.com/netramp/netramp/stack/vtest"
	"github.com/netramp/netramp/tcp"
)

// TestWireBurstsAreAckedEverySecondSegmentNotCoalesced: on a path with no
// bottleneck, each flight reaches the receiver in one instant, but the wire
// (with no GRO card, wire.GRO) hands its segments over one at a time and the receiver's writes only
// queue on it, so no segment arrives during a write: ACK coalescing
// (tcp/coalesce.go) never applies in virtual time, and every second full
// segment is acknowledged as RFC 5681 §4.2 asks.
func TestWireBurstsAreAckedEverySecondSegmentNotCoalesced(t *testing.T) {
	d := wire.Dir{Delay: 5 * time.Millisecond}
	p := newPair(t, wire.Config{AtoB: d, BtoA: d}, tcp.Options{}, tcp.Options{}, 1)
	c, s := dial(t, p, vtest.SideA, 5001)
	const n = 4 << 20
	so, si := p.Start(c, s, n, 42)
	if err := p.Run(si.Done, 60*time.Second); err != nil {
		t.Fatal(err)
	}
	if err := vtest.Check(so, si, n); err != nil {
		t.Fatal(err)
	}
	rb := p.B.Counters()
	if got := counter(rb, "tcp.acks.coalesced"); got != 0 {
		t.Fatalf("tcp.acks.coalesced = %d in virtual time, want 0;%s", got, tcpCounters(rb))
	}
	segs := counter(rb, "tcp.segments.in")
	if every := counter(rb, "tcp.acks.sent.every-second"); 4*every < segs {
		t.Fatalf("%d every-second ACKs for %d segments in, want about half;%s", every, segs, tcpCounters(rb))
	}
}
