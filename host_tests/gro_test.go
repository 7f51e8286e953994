package hosttests

import (
	"testing"
	"time"

	"github.com/netramp/netramp/nic/wire"
	"github.com/netramp/netramp/tcp"
)

// groPaths are the paths the GRO receiver is judged on: the parity suite's
// three plain paths at its bytes a connection, with the receiving card's
// poll a quarter of the base RTT, and t14 (250 MB, as osbench sends) with a
// 1 ms poll. A poll that long is what it takes for one to hold several
// 64 KB aggregates at these rates (at 100 Mbit/s a 64 KB aggregate is 5 ms
// of line); on t14's gigabit line 1 ms holds about 81 frames, merged into
// 2 to 6 aggregates (timestamps, of 1 ms granularity, end each).
var groPaths = []struct {
	preset string
	bytes  int64
	rtt    time.Duration
	poll   time.Duration
}{
	{"parity-20m-10ms", 5e6, 10 * time.Millisecond, 10 * time.Millisecond / 4},
	{"parity-50m-40ms", 12e6, 40 * time.Millisecond, 40 * time.Millisecond / 4},
	{"parity-100m-100ms", 20e6, 100 * time.Millisecond, 100 * time.Millisecond / 4},
	{"t14", 250e6, 2 * time.Millisecond, time.Millisecond},
}

// groMarks are the receiver's ramp marks the GRO receiver is judged at.
var groMarks = []time.Duration{100 * time.Millisecond, 300 * time.Millisecond, time.Second}

// groAggregate is the tolerance of a mark: one aggregate's worth of bytes
// (wire.GRO's default bound, 64 KB). A burst's ACK is held to the burst's
// end (tcp/coalesce.go), so data the sender would have sent on a mid-burst
// every-second ACK leaves up to one poll later; a receiver that is behind
// by less than one aggregate at a mark has had its data shifted within a
// poll, by more its ramp is slower.
const groAggregate = 64 << 10

// TestDefaultArmRampsNoSlowerOverAGROReceiver: with the receiving card
// polling and merging (wire.GRO: several aggregates a poll, each poll one
// delivery burst, so netramp's receiver holds one ACK per burst, up to
// 256 KB of aggregates), the default arm's ramp marks at 100 ms, 300 ms and
// 1 s are at least those of the same card without GRO (the same poll, each
// frame handed over alone, every second one ACKed), less one aggregate;
// its transfer takes at most two polls longer (the last burst's ACK waits
// for its poll's end, its data for the next poll); and it retransmits no
// more. The GRO side must really have handed over several aggregates in at
// least a quarter of its polls, or the test proves nothing.
//
// Our TCP sets PSH on every data segment, so Linux's GRO rule (PSH ends an
// aggregate) would merge none of them: the card here merges across PSH
// (wire.GRO.MergePSH), as Linux's does for a sender that marks only a
// write's last segment.
func TestDefaultArmRampsNoSlowerOverAGROReceiver(t *testing.T) {
	d := arm{"D", tcp.Options{}}
	for _, p := range groPaths {
		plain := preset(t, p.preset)
		plain.AtoB.GRO = wire.GRO{Poll: p.poll, NoMerge: true, NoBurst: true}
		gro := preset(t, p.preset)
		gro.AtoB.GRO = wire.GRO{Poll: p.poll, MergePSH: true}
		rw := runPath(t, preset(t, p.preset), d, p.bytes, time.Minute, p.rtt, 1) // no card model, for the log
		rp := runPath(t, plain, d, p.bytes, time.Minute, p.rtt, 1)
		rg := runPath(t, gro, d, p.bytes, time.Minute, p.rtt, 1)
		if !rp.res.Done || !rg.res.Done {
			t.Fatalf("%s: a transfer did not finish in a minute", p.preset)
		}
		st := rg.res.AtoB
		t.Logf("%s, poll %v: GRO %d polls, %d with several aggregates (at most %d), %d aggregates of %d frames",
			p.preset, p.poll, st.GROPolls, st.GROPollsSeveral, st.GROPollHighAggregates, st.GROAggregates, st.GROFramesMerged)
		if st.GROPollsSeveral < 10 || 4*st.GROPollsSeveral < st.GROPolls {
			t.Errorf("%s: %d of %d polls handed over several aggregates, want at least 10 and a quarter",
				p.preset, st.GROPollsSeveral, st.GROPolls)
		}
		for _, m := range groMarks {
			gp, gg := rp.res.ReceivedBy(m), rg.res.ReceivedBy(m)
			t.Logf("%s by %v: GRO %s, without %s (GRO %+d bytes); no card model %s",
				p.preset, m, mb(gg), mb(gp), gg-gp, mb(rw.res.ReceivedBy(m)))
			if gg < gp-groAggregate {
				t.Errorf("%s: over GRO the receiver had %d bytes by %v, without %d: more than one aggregate (%d) behind",
					p.preset, gg, m, gp, groAggregate)
			}
		}
		dp, dg := rp.res.Duration, rg.res.Duration
		xp, xg := rp.res.Sender["tcp.retransmitted.bytes"], rg.res.Sender["tcp.retransmitted.bytes"]
		t.Logf("%s: GRO %v (%.2f Mbit/s), retransmitted %d; without %v (%.2f Mbit/s), retransmitted %d; no card model %v (%.2f Mbit/s), retransmitted %d",
			p.preset, dg, mbps(p.bytes, dg), xg, dp, mbps(p.bytes, dp), xp,
			rw.res.Duration, mbps(p.bytes, rw.res.Duration), rw.res.Sender["tcp.retransmitted.bytes"])
		if dg > dp+2*p.poll {
			t.Errorf("%s: the transfer took %v over GRO, %v without: more than two polls (%v) longer", p.preset, dg, dp, 2*p.poll)
		}
		if xg > xp {
			t.Errorf("%s: %d bytes retransmitted over GRO, %d without", p.preset, xg, xp)
		}
	}
}

func mbps(n int64, d time.Duration) float64 { return float64(n) * 8 / d.Seconds() / 1e6 }
