package hosttests

import (
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/netramp/netramp/nic/wire"
)

// sweepPath is one row of the shallow-queue sweep: a bottleneck, its RTT and
// a drop-tail queue of a fraction of the BDP.
type sweepPath struct {
	rate  int64
	rtt   time.Duration
	queue float64 // BDPs
	// knownMiss says why B may trail A here (a defect not yet fixed); the
	// row is then reported, not asserted, and fails once B no longer trails.
	knownMiss string
}

func (s sweepPath) name() string {
	return fmt.Sprintf("%dM %v %.1f BDP", s.rate/1e6, s.rtt, s.queue)
}

func (s sweepPath) config() wire.Config {
	return matrixPath{rate: s.rate, rtt: s.rtt, queue: s.queue}.config()
}

// sweepPaths are rows of a 3x3x2 sweep (100-400 Mbit/s, 40-150 ms, 0.1 and
// 0.2 BDP) where arm B trailed A or moved most; the whole sweep (fullSweep)
// costs a minute of CPU, too much for CI, and -run with SWEEP=all runs it.
func sweepPaths() []sweepPath {
	ms := time.Millisecond
	if os.Getenv("SWEEP") == "all" {
		return fullSweep()
	}
	return []sweepPath{
		{rate: 200e6, rtt: 150 * ms, queue: 0.1},
		{rate: 400e6, rtt: 150 * ms, queue: 0.1},
		{rate: 100e6, rtt: 80 * ms, queue: 0.2},
		{rate: 200e6, rtt: 40 * ms, queue: 0.2},
	}
}

// fullSweep is the whole 3x3x2 sweep.
func fullSweep() []sweepPath {
	var r []sweepPath
	for _, rate := range []int64{100e6, 200e6, 400e6} {
		for _, rtt := range []time.Duration{40 * time.Millisecond, 80 * time.Millisecond, 150 * time.Millisecond} {
			for _, q := range []float64{0.1, 0.2} {
				r = append(r, sweepPath{rate: rate, rtt: rtt, queue: q})
			}
		}
	}
	return r
}

// sweepDuration is how long each arm runs on a sweep row.
const sweepDuration = 5 * time.Second

// TestShallowSweepArmBIsNoWorseThanArmA runs arms A and B for 5 s of
// virtual time on each sweep row and asserts that B's utilization is at
// least A's less 2 points. Run with -v for the table. 200 Mbit/s, 150 ms,
// 0.1 BDP pins the pacer's credit per ACK (tcp.creditClock): when it was
// SND.UNA's advance, the ACK that filled a recovery's hole credited the
// SACKed bytes behind it again and released a whole window at once; B used
// 13.5% against A's 29.0%, now 57.8%. 100 Mbit/s, 80 ms and 200 Mbit/s, 40 ms,
// both 0.2 BDP, pin cc.ClockPacing's top-up after slow start (72.2% and
// 73.5% against A's 79.4% and 83.6% when it paced at cwnd/min_rtt on top
// of the ACK clock; now 80.8% and 85.2%).
func TestShallowSweepArmBIsNoWorseThanArmA(t *testing.T) {
	var b strings.Builder
	fmt.Fprintf(&b, "\n%-20s %7s %7s %5s %5s %5s %5s\n", "path", "A", "B", "recA", "recB", "rtoA", "rtoB")
	for _, s := range sweepPaths() {
		util, rec, rto := map[string]float64{}, map[string]uint64{}, map[string]uint64{}
		for _, a := range armsABP[:2] {
			r := runPath(t, s.config(), a, 1<<40, sweepDuration+time.Second, s.rtt, 11)
			util[a.name] = r.utilization(s.rate, sweepDuration)
			rec[a.name], rto[a.name] = r.res.Sender["tcp.recoveries"], r.res.Sender["tcp.rto"]
		}
		fmt.Fprintf(&b, "%-20s %6.1f%% %6.1f%% %5d %5d %5d %5d\n", s.name(), 100*util["A"], 100*util["B"],
			rec["A"], rec["B"], rto["A"], rto["B"])
		miss := util["B"] < util["A"]-matrixTolerance
		switch {
		case miss && s.knownMiss == "":
			t.Errorf("%s: arm B used %.1f%%, arm A %.1f%%", s.name(), 100*util["B"], 100*util["A"])
		case miss:
			t.Logf("%s: known miss (%s): B %.1f%%, A %.1f%%", s.name(), s.knownMiss, 100*util["B"], 100*util["A"])
		case s.knownMiss != "":
			t.Errorf("%s: no longer misses (B %.1f%%, A %.1f%%): drop its known miss", s.name(), 100*util["B"], 100*util["A"])
		}
	}
	t.Log(b.String())
}
