package hosttests

import (
	"math/rand/v2"
	"testing"
	"time"

	"gvisor.dev/gvisor/pkg/tcpip"
	gstack "gvisor.dev/gvisor/pkg/tcpip/stack"

	"github.com/netramp/netramp/nic/wire"
	"github.com/netramp/netramp/stack"
	"github.com/netramp/netramp/stack/tcptest"
	"github.com/netramp/netramp/stack/vclock"
	"github.com/netramp/netramp/stack/vtest"
)

// delayer is a link endpoint between a stack and its wire end that holds a
// chosen fraction of data segments for extra before they enter the wire, so
// they arrive behind segments sent after them: reordering without loss.
type delayer struct {
	tcptest.Wrapper
	clk     tcpip.Clock
	rng     *rand.Rand
	frac    float64
	extra   time.Duration
	delayed int
}

// WritePackets passes each packet on now, or extra later for the chosen
// data segments (which count as written now).
func (d *delayer) WritePackets(pkts gstack.PacketBufferList) (int, tcpip.Error) {
	done := 0
	for _, pkt := range pkts.AsSlice() {
		var one gstack.PacketBufferList
		one.PushBack(pkt)
		if s, ok := parseOut(pkt); ok && len(s.Payload) > 0 && d.rng.Float64() < d.frac {
			d.delayed++
			pkt.IncRef()
			d.clk.AfterFunc(d.extra, func() {
				_, _ = d.LinkEndpoint.WritePackets(one)
				pkt.DecRef()
			})
			done++
			continue
		}
		n, err := d.LinkEndpoint.WritePackets(one)
		done += n
		if err != nil {
			return done, err
		}
	}
	return done, nil
}

func parseOut(pkt *gstack.PacketBuffer) (tcptest.Seg, bool) {
	var b []byte
	for _, s := range pkt.AsSlices() {
		b = append(b, s...)
	}
	return tcptest.Parse(b)
}

// TestReorderedSegmentsAreNotDroppedByPAWS: 2% of data segments arrive
// 4 ms behind the rest on a 10 ms path that also loses one segment in 500.
// When a retransmission fills a hole, TS.Recent takes its TSval, newer than
// that of a delayed original still on its way behind it; PAWS must not drop
// that original (issue 10 defect 3), or reordering becomes real loss, and a
// reduction no D-SACK can undo.
func TestReorderedSegmentsAreNotDroppedByPAWS(t *testing.T) {
	dir := wire.Dir{RateBps: 100e6, Delay: 5 * time.Millisecond, QueueBytes: 64 << 20}
	var d *delayer
	var drop *dropper
	p, err := vtest.NewPairLinks(wire.Config{AtoB: dir, BtoA: dir}, stack.Options{}, stack.Options{}, 21,
		func(s vtest.Side, ep gstack.LinkEndpoint, clk *vclock.Clock) gstack.LinkEndpoint {
			if s != vtest.SideA {
				return ep
			}
			drop = newDropper(ep, func(n int) bool { return n%500 == 250 })
			d = &delayer{Wrapper: tcptest.Wrapper{LinkEndpoint: drop}, clk: clk, rng: rand.New(rand.NewPCG(21, 4)), frac: 0.02, extra: 4 * time.Millisecond}
			return d
		})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Close)
	c, s := dial(t, p, vtest.SideA, 5001)
	if _, _, err := p.Transfer(c, s, 8<<20, 3, time.Minute); err != nil {
		t.Fatal(err)
	}
	ra, rb := p.A.Counters(), p.B.Counters()
	t.Logf("%d segments delayed, %d dropped; A:%s; B:%s", d.delayed, drop.Dropped(), tcpCounters(ra), tcpCounters(rb))
	if d.delayed < 20 {
		t.Fatalf("only %d segments delayed: the path does not reorder", d.delayed)
	}
	if n := counter(rb, "tcp.drops.paws"); n != 0 {
		t.Errorf("tcp.drops.paws = %d: reordered segments dropped", n)
	}
	if n := counter(ra, "tcp.rto"); n != 0 {
		t.Errorf("tcp.rto = %d", n)
	}
	// Each dropped segment may cost one reduction; a reordered one none
	// that stays (its D-SACK undoes a recovery RACK started early, RFC 8985
	// §6.2 step 4).
	if kept := counter(ra, "tcp.recoveries") - counter(ra, "tcp.spurious"); kept > uint64(drop.Dropped()) {
		t.Errorf("%d reductions kept for %d dropped segments", kept, drop.Dropped())
	}
}
