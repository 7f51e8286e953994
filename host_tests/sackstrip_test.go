package hosttests

import (
	"testing"
	"time"

	"gvisor.dev/gvisor/pkg/tcpip"
	"gvisor.dev/gvisor/pkg/tcpip/header"
	gstack "gvisor.dev/gvisor/pkg/tcpip/stack"

	"github.com/netramp/netramp/nic/wire"
	"github.com/netramp/netramp/stack"
	"github.com/netramp/netramp/stack/tcptest"
	"github.com/netramp/netramp/stack/vclock"
	"github.com/netramp/netramp/stack/vtest"
)

// sackStripper rewrites the SACK option of every pure ACK its stack sends
// into NOPs: a receiver that negotiated SACK but reports no blocks on its
// duplicate ACKs (as gVisor's TCP does once its own write side is shut).
type sackStripper struct {
	tcptest.Wrapper
	stripped int
}

func (s *sackStripper) WritePackets(pkts gstack.PacketBufferList) (int, tcpip.Error) {
	return writeRewritten(s.LinkEndpoint, pkts, func(tc header.TCP) bool {
		return len(tc.Payload()) == 0 && s.strip(tc.Options())
	})
}

// strip turns SACK options (kind 5) into NOPs in place.
func (s *sackStripper) strip(o []byte) bool {
	did := false
	for i := 0; i < len(o); {
		switch o[i] {
		case 0:
			return did
		case 1:
			i++
			continue
		}
		if i+1 >= len(o) || o[i+1] < 2 || i+int(o[i+1]) > len(o) {
			return did
		}
		l := int(o[i+1])
		if o[i] == 5 {
			for k := i; k < i+l; k++ {
				o[k] = 1
			}
			s.stripped++
			did = true
		}
		i += l
	}
	return did
}

func TestDupAcksWithoutSACKBlocksStillTriggerFastRetransmit(t *testing.T) {
	// SACK is negotiated, but the receiver's duplicate ACKs carry no blocks.
	// One lost segment must still be repaired on the third duplicate ACK
	// (RFC 5681 §3.2), not by a retransmission timeout.
	dir := wire.Dir{RateBps: 100e6, Delay: 10 * time.Millisecond}
	cfg := wire.Config{AtoB: dir, BtoA: dir}
	var d *dropper
	var st *sackStripper
	p, err := vtest.NewPairLinks(cfg, stack.Options{}, stack.Options{}, 1,
		func(side vtest.Side, ep gstack.LinkEndpoint, _ *vclock.Clock) gstack.LinkEndpoint {
			if side == vtest.SideA {
				d = newDropper(ep, func(n int) bool { return n == 500 || n == 2000 })
				return d
			}
			st = &sackStripper{Wrapper: tcptest.Wrapper{LinkEndpoint: ep}}
			return st
		})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Close)
	c, s := dial(t, p, vtest.SideA, 5001)
	_, si, err := p.Transfer(c, s, 8<<20, 5, 60*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	rto := counter(p.A.Counters(), "tcp.rto")
	t.Logf("%d segments dropped, %d SACK options stripped; %v; %d RTOs;%s", d.Dropped(), st.stripped, si.Duration(), rto, tcpCounters(p.A.Counters()))
	if d.Dropped() != 2 || st.stripped == 0 {
		t.Fatalf("dropped %d, stripped %d: the scenario did not happen", d.Dropped(), st.stripped)
	}
	if rto != 0 {
		t.Errorf("%d retransmission timeouts: duplicate ACKs without SACK blocks did not trigger fast retransmit", rto)
	}
}
