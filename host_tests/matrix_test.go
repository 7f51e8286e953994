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
	// seeds is how many wire seeds (11, 12, ...) the row runs, each arm's
	// figures summed over them; 0 means one. Where loss is random, one
	// seed's draws fall on different segments for each arm, a lottery that
	// moved B against A by ±5% on a single seed.
	seeds int
	// knownMiss says why this row may miss an assertion (a defect not yet
	// fixed): B trailing A, an RTO, or spurious retransmissions past 1%. The
	// row is then reported, not asserted, and fails once it misses nothing.
	knownMiss string
}

// matrixRun is one arm's figures on a row, summed over the row's seeds.
type matrixRun struct {
	time    time.Duration     // first byte to EOF
	largest int               // the largest loss episode of any seed, bytes
	sender  map[string]uint64 // the sender's counters
}

// run sends the row's bytes with arm a once per seed; every transfer must
// complete with the bytes sent (runPath checks their SHA-256).
func (m matrixPath) run(t *testing.T, a arm) matrixRun {
	r := matrixRun{sender: map[string]uint64{}}
	for i := range max(m.seeds, 1) {
		cfg := m.config()
		cfg.Seed += int64(i)
		p := runPath(t, cfg, a, m.n, 5*time.Minute, m.rtt, 11)
		if !p.res.Done {
			t.Fatalf("%s, arm %s, wire seed %d: transfer did not finish", m.name, a.name, cfg.Seed)
		}
		r.time += p.res.Duration
		r.largest = max(r.largest, p.drops.Largest)
		for k, v := range p.res.Sender {
			r.sender[k] += v
		}
	}
	return r
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

// matrixPaths spans rates 10 Mbit/s–1 Gbit/s, RTTs 0.5–600 ms, queues 0.1–4
// BDP, jitter, reordering, stretch ACKs, a narrow return path, random loss
// of 0.1% and 1% (data, and ACKs), and burst loss; rows with loss run four
// wire seeds. Sizes keep the whole matrix under a minute of CPU on two
// cores; -short runs the first rows.
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
		{name: "1G 20ms shallow", rate: 1e9, rtt: 20 * ms, queue: 0.1, n: 64 << 20},
		{name: "20M 600ms deep", rate: 20e6, rtt: 600 * ms, queue: 1, n: 16 << 20},
		{name: "100M 20ms bloat 4BDP", rate: 100e6, rtt: 20 * ms, queue: 4, n: 16 << 20},
		{name: "1G 2ms deep", rate: 1e9, rtt: 2 * ms, queue: 1, n: 48 << 20},
		{name: "100M 20ms loss 0.1%", rate: 100e6, rtt: 20 * ms, queue: 1, n: 16 << 20, seeds: 4,
			edit: func(c *wire.Config) { c.AtoB.Loss = 0.001 }},
		{name: "10M 40ms loss 1%", rate: 10e6, rtt: 40 * ms, queue: 1, n: 4 << 20, seeds: 4,
			edit: func(c *wire.Config) { c.AtoB.Loss = 0.01 }},
		{name: "100M 20ms burst 0.2%x8", rate: 100e6, rtt: 20 * ms, queue: 1, n: 16 << 20, seeds: 4,
			edit: func(c *wire.Config) { c.AtoB.Burst = wire.BurstLoss(0.002, 8) }},
		{name: "20M 600ms loss 1%", rate: 20e6, rtt: 600 * ms, queue: 1, n: 4 << 20, seeds: 4,
			edit: func(c *wire.Config) { c.AtoB.Loss = 0.01 }},
		{name: "100M 200ms loss 1%", rate: 100e6, rtt: 200 * ms, queue: 1, n: 4 << 20, seeds: 4,
			edit: func(c *wire.Config) { c.AtoB.Loss = 0.01 }},
		{name: "100M 20ms ACK loss 1%", rate: 100e6, rtt: 20 * ms, queue: 1, n: 16 << 20, seeds: 4,
			edit: func(c *wire.Config) { c.BtoA.Loss = 0.01 }},
	}
}

// matrixTolerance is how far B's goodput may fall under A's on a row before
// the matrix fails: 2%, issue 10's figure.
const matrixTolerance = 0.02

// matrixSpurious is the share of a transfer's bytes an arm may retransmit
// needlessly (D-SACK or timestamp evidence): 1%, issue 10's figure.
const matrixSpurious = 0.01

// TestPathMatrixArmBIsNoWorseThanArmA runs arms A, B, P and D over the path
// matrix in virtual time. Every transfer must complete with the bytes sent
// (SHA-256); on every row not listed as a known miss, no arm may retransmit
// more than 1% of its bytes spuriously or take an RTO (no row has a
// blackout, so a timeout is a recovery that failed), and the goodput of B
// and of the default arm D must be at least A's less 2%. Run with -v for the table.
func TestPathMatrixArmBIsNoWorseThanArmA(t *testing.T) {
	paths := matrixPaths()
	// Under the race detector the whole matrix takes over 20 minutes on 2
	// cores: the first rows, as with -short.
	if testing.Short() || raceEnabled {
		paths = paths[:4]
	}
	var b strings.Builder
	fmt.Fprintf(&b, "\n%-22s %-3s %9s %7s %7s %7s %8s %4s %4s %4s %4s %4s %4s\n", "path", "arm", "time", "util",
		"rtx KB", "spur KB", "burst KB", "tlp", "rto", "rec", "css", "exit", "res")
	for _, m := range paths {
		good := map[string]float64{}
		var misses []string
		bytes := float64(m.n) * float64(max(m.seeds, 1))
		blackout := len(m.config().AtoB.Blackouts)+len(m.config().BtoA.Blackouts) != 0
		for _, a := range armsABP {
			r := m.run(t, a)
			good[a.name] = bytes / r.time.Seconds()
			s := r.sender
			spurious := s["tcp.retransmitted.spurious.bytes"]
			fmt.Fprintf(&b, "%-22s %-3s %9v %6.1f%% %7d %7d %8d %4d %4d %4d %4d %4d %4d\n", m.name, a.name,
				r.time.Round(time.Millisecond), 100*good[a.name]*8/float64(m.rate),
				s["tcp.retransmitted.bytes"]/1000, spurious/1000, r.largest/1000, s["tcp.loss-probes"],
				s["tcp.rto"], s["tcp.recoveries"], s["tcp.hystart.css"], s["tcp.hystart.exits"], s["tcp.hystart.resumed"])
			if float64(spurious) > matrixSpurious*bytes {
				misses = append(misses, fmt.Sprintf("arm %s retransmitted %d bytes spuriously, more than %.0f%% of %.0f",
					a.name, spurious, 100*matrixSpurious, bytes))
			}
			if n := s["tcp.rto"]; n != 0 && !blackout {
				misses = append(misses, fmt.Sprintf("arm %s took %d RTOs on a path without blackout", a.name, n))
			}
		}
		for _, x := range []string{"B", "D"} {
			if good[x] < good["A"]*(1-matrixTolerance) {
				misses = append(misses, fmt.Sprintf("%s's goodput %.2f MB/s trails A's %.2f MB/s by more than %.0f%%",
					x, good[x]/1e6, good["A"]/1e6, 100*matrixTolerance))
			}
		}
		switch {
		case len(misses) != 0 && m.knownMiss == "":
			for _, s := range misses {
				t.Errorf("%s: %s", m.name, s)
			}
		case len(misses) != 0:
			t.Logf("%s: known miss (%s): %s", m.name, m.knownMiss, strings.Join(misses, "; "))
		case m.knownMiss != "":
			t.Errorf("%s: no longer misses (B %.2f against A %.2f MB/s, no RTO, spurious within bounds): drop its known miss",
				m.name, good["B"]/1e6, good["A"]/1e6)
		}
	}
	t.Log(b.String())
}
