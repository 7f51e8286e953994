package hosttests

import (
	"testing"
	"time"

	"github.com/netramp/netramp/nic/wire"
)

// shallowPath is issue 10 defect 5's path: 200 Mbit/s, 80 ms RTT, a
// drop-tail queue of a tenth of the BDP (200 KB, 8 ms).
func shallowPath() wire.Config {
	const rate, rtt = 200e6, 80 * time.Millisecond
	bdp := rate / 8 * rtt.Seconds()
	fwd := wire.Dir{RateBps: rate, Delay: rtt / 2, QueueBytes: int(bdp / 10)}
	back := wire.Dir{RateBps: rate, Delay: rtt / 2}
	return wire.Config{AtoB: fwd, BtoA: back, Seed: 5}
}

// TestArmBUsesAShallowBufferAtLeastAsWellAsArmA pins defect 5 of issue 10:
// on 200 Mbit/s, 80 ms and a 0.1 BDP queue, arm B's utilization over the
// first 10 s is at least arm A's less 2%. Before the fix B's ACK-clocked
// slow start sent its growth in trains at twice the bottleneck rate, which
// overflowed the queue at under half the BDP; over 10 s A used 50.1%, B
// 37.1%, P 83.4% (over 30 s: 68.3%, 59.9%, 87.2%). 10 s show the same
// order as 30 s. The default arm D is held to the same bar.
func TestArmBUsesAShallowBufferAtLeastAsWellAsArmA(t *testing.T) {
	const rate, d = 200e6, 10 * time.Second
	util := map[string]float64{}
	for _, a := range armsABP {
		r := runPath(t, shallowPath(), a, 1<<40, d+time.Second, 80*time.Millisecond, 5)
		util[a.name] = r.utilization(rate, d)
		s := r.res.Sender
		t.Logf("arm %s: utilization over %v %.1f%%, by 2 s %.1f%%; retransmitted %d KB, largest drop burst %d KB, recoveries %d, rto %d, largest cwnd %d KB",
			a.name, d, 100*util[a.name], 100*r.utilization(rate, 2*time.Second), s["tcp.retransmitted.bytes"]/1000,
			r.drops.Largest/1000, s["tcp.recoveries"], s["tcp.rto"], s["tcp.cwnd.max.bytes"]/1000)
	}
	for _, x := range []string{"B", "D"} {
		if util[x] < util["A"]-matrixTolerance {
			t.Errorf("arm %s used %.1f%% of the path, arm A %.1f%%: %s trails by more than %.0f points",
				x, 100*util[x], 100*util["A"], x, 100*matrixTolerance)
		}
	}
}
