package hosttests

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/netramp/netramp/nic/wire"
)

// matrixPath is one row of the path matrix: a forward bottleneck and a
// return path, and the bytes each arm sends across it.
type matrixPath struct {
	name  string
	rate  int64         // forward bottleneck, bits per second
	rtt   time.Duration // base round trip
	queue float64       // forward drop-tail queue in BDPs
	n     int64         // bytes a transfer sends
	edit  func(c *wire.Config)
	// knownMiss says why B may trail A on this row (a defect not yet fixed):
	// the row is then reported, not asserted, and fails if B stops trailing.
	knownMiss string
}

func (m matrixPath) config() wire.Config {
	bdp := float64(m.rate) / 8 * m.rtt.Seconds()
	fwd := wire.Dir{RateBps: m.rate, Delay: m.rtt / 2, QueueBytes: int(m.queue * bdp)}
	back := wire.Dir{RateBps: m.rate, Delay: m.rtt / 2}
	c := wire.Config{AtoB: fwd, BtoA: back, Seed: 11}
	if m.edit != nil {
		m.edit(&c)
	}
	return c
}

const shallowMiss = "issue 10 defect 5: B's ACK-clocked slow start doubles its trains, whose burst queue overflows a " +
	"queue under an eighth of the BDP at a smaller window than A's (1.5x a round), before any RTT rise; " +
	"the later CUBIC epoch starts lower"

// matrixPaths spans rates 10 Mbit/s–1 Gbit/s, RTTs 0.5–80 ms, shallow (0.1
// and 0.5 BDP) and deep (2 BDP) queues, jitter, reordering, stretch ACKs and a
// narrow return path. Sizes keep the whole matrix near a minute on two cores.
func matrixPaths() []matrixPath {
	ms := time.Millisecond
	return []matrixPath{
		{name: "10M 20ms deep", rate: 10e6, rtt: 20 * ms, queue: 2, n: 2 << 20},
		{name: "10M 80ms shallow", rate: 10e6, rtt: 80 * ms, queue: 0.1, n: 4 << 20},
		{name: "100M 1ms deep", rate: 100e6, rtt: 1 * ms, queue: 2, n: 16 << 20},
		{name: "100M 20ms shallow", rate: 100e6, rtt: 20 * ms, queue: 0.1, n: 24 << 20},
		{name: "100M 80ms deep", rate: 100e6, rtt: 80 * ms, queue: 2, n: 24 << 20},
		{name: "100M 20ms jitter 2ms", rate: 100e6, rtt: 20 * ms, queue: 2, n: 16 << 20,
			edit: func(c *wire.Config) { c.AtoB.Jitter, c.BtoA.Jitter = 2*ms, 2*ms }},
		{name: "100M 20ms reordering", rate: 100e6, rtt: 20 * ms, queue: 2, n: 16 << 20,
			edit: func(c *wire.Config) { c.AtoB.Jitter, c.AtoB.Reorder = time.Millisecond, true }},
		{name: "100M 50ms stretch/16", rate: 100e6, rtt: 50 * ms, queue: 1, n: 24 << 20,
			edit: func(c *wire.Config) {
				c.BtoA.AckAggSegments, c.BtoA.AckAggHold, c.BtoA.AckAggCoalesce = 16, 10*ms, true
			}},
		{name: "100M 20ms return 5M", rate: 100e6, rtt: 20 * ms, queue: 2, n: 16 << 20,
			edit: func(c *wire.Config) { c.BtoA.RateBps = 5e6 }},
		{name: "1G 1ms deep", rate: 1e9, rtt: 1 * ms, queue: 2, n: 48 << 20},
		// Around "100M 1ms deep", where a lost fast retransmission at the
		// tail of a transfer waited for the 200 ms RTO. The jitter row's
		// draws (wire seed 4) bring the probe's ACK back 9 µs under min_RTT.
		{name: "100M 0.5ms deep", rate: 100e6, rtt: ms / 2, queue: 2, n: 16 << 20},
		{name: "100M 1ms deep jit 10us", rate: 100e6, rtt: 1 * ms, queue: 2, n: 16 << 20,
			edit: func(c *wire.Config) { c.AtoB.Jitter, c.Seed = 10*time.Microsecond, 4 }},
		{name: "1G 1ms shallow", rate: 1e9, rtt: 1 * ms, queue: 0.5, n: 48 << 20},
		// A one-frame queue (2 BDP is 2500 bytes): every arm loses the
		// second of each back-to-back pair and reaches about half the rate.
		{name: "10M 1ms deep", rate: 10e6, rtt: 1 * ms, queue: 2, n: 4 << 20},
		{name: "1G 20ms shallow", rate: 1e9, rtt: 20 * ms, queue: 0.1, n: 64 << 20, knownMiss: shallowMiss},
	}
}

// matrixTolerance is how far B's goodput may fall under A's on a row before
// the matrix fails: 2%, issue 10's figure.
const matrixTolerance = 0.02

// TestPathMatrixArmBIsNoWorseThanArmA runs arms A, B and P over the path
// matrix in virtual time. Every transfer must complete with the bytes sent
// (SHA-256), and B's goodput must be at least A's less 2% on every row not
// listed as a known miss. Run with -v for the table.
func TestPathMatrixArmBIsNoWorseThanArmA(t *testing.T) {
	paths := matrixPaths()
	if testing.Short() {
		paths = paths[:4]
	}
	var b strings.Builder
	fmt.Fprintf(&b, "\n%-22s %-3s %9s %7s %9s %9s %6s %4s %4s %4s %4s %4s\n", "path", "arm", "time", "util",
		"rtx KB", "burst KB", "tlp", "rto", "rec", "css", "exit", "res")
	for _, m := range paths {
		cfg := m.config()
		good := map[string]float64{}
		for _, a := range armsABP {
			r := runPath(t, cfg, a, m.n, 5*time.Minute, m.rtt, 11)
			if !r.res.Done {
				t.Fatalf("%s, arm %s: transfer did not finish", m.name, a.name)
			}
			d := r.res.Duration.Seconds()
			good[a.name] = float64(m.n) / d
			s := r.res.Sender
			fmt.Fprintf(&b, "%-22s %-3s %9v %6.1f%% %9d %9d %6d %4d %4d %4d %4d %4d\n", m.name, a.name,
				r.res.Duration.Round(time.Millisecond), 100*good[a.name]*8/float64(m.rate),
				s["tcp.retransmitted.bytes"]/1000, r.drops.Largest/1000, s["tcp.loss-probes"], s["tcp.rto"],
				s["tcp.recoveries"], s["tcp.hystart.css"], s["tcp.hystart.exits"], s["tcp.hystart.resumed"])
		}
		behind := good["B"] < good["A"]*(1-matrixTolerance)
		switch {
		case behind && m.knownMiss == "":
			t.Errorf("%s: B's goodput %.2f MB/s trails A's %.2f MB/s by more than %.0f%%", m.name,
				good["B"]/1e6, good["A"]/1e6, 100*matrixTolerance)
		case behind:
			t.Logf("%s: known miss (%s): B %.2f MB/s, A %.2f MB/s", m.name, m.knownMiss, good["B"]/1e6, good["A"]/1e6)
		case m.knownMiss != "":
			t.Errorf("%s: B no longer trails A (%.2f against %.2f MB/s): drop its known miss", m.name, good["B"]/1e6, good["A"]/1e6)
		}
	}
	t.Log(b.String())
}
