package hosttests

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"strings"
	"sync"
	"testing"

	"github.com/netramp/netramp/metal/arms"
	"github.com/netramp/netramp/metal/bench"
	"github.com/netramp/netramp/metal/judge"
	"github.com/netramp/netramp/metal/osbench"
	"github.com/netramp/netramp/metal/report"
)

// The kernel's bar: its rows of osbench -suite parity (Linux cubic and
// bbr, real time, nic/wire), recorded with their date, commit and host by
// `osbench figures` (report.Figures). The bar on each parity path is that
// the default arm's worst row in virtual time reaches the kernel's worst
// recorded row on every metric the kernel has, for each kernel algorithm.
// Worst against worst is the judge's own line: a ramp rule says BEHIND only
// when the kernel's worst row beats our best by more than the spread, and
// our virtual rows are exact, so our worst is our best; reaching the
// kernel's worst leaves it nothing to beat us by, whatever its spread, and
// does not ask us to match a lucky kernel row. Real and virtual time are two
// emulations of one preset, so this is a regression bar (a change that
// loses the lead fails), not the judged comparison, which stays osbench's.
const kernelFiguresFile = "testdata/kernel-parity-20261204.json"

// kernelArms are the kernel's arms in the figures.
var kernelArms = []string{"Linux-cubic", "Linux-bbr"}

// barSeeds are the seeds of our rows on each path (the suite's three
// rows). The parity paths draw nothing at random (no loss, no jitter), so
// the rows agree; under the race detector one row stands for them.
func barSeeds() []int64 {
	if raceEnabled {
		return []int64{1}
	}
	return []int64{1, 2, 3}
}

// barMetrics are the judge's metrics, in its order.
var barMetrics = append(append([]string(nil), report.MarkMetrics...), "goodput", "retrans")

// shortfall is one metric on which our worst row falls short of the
// kernel's worst: Ours is NaN where our rows lack it.
type shortfall struct {
	Kernel, Metric string
	Ours, Theirs   float64
}

func (s shortfall) String() string {
	return fmt.Sprintf("%s %s: ours %.6g, the kernel's worst %.6g %s", s.Kernel, s.Metric, s.Ours, s.Theirs, judge.Metrics[s.Metric])
}

// worst is rows' worst figure on metric (the least, or the most where lower
// is better), and whether every row has it.
func worst(rows []map[string]float64, metric string) (float64, bool) {
	if len(rows) == 0 {
		return 0, false
	}
	w := 0.0
	for i, r := range rows {
		v, ok := r[metric]
		if !ok {
			return 0, false
		}
		if i == 0 || (judge.LowerIsBetter[metric] && v > w) || (!judge.LowerIsBetter[metric] && v < w) {
			w = v
		}
	}
	return w, true
}

// shortfalls compares our rows on a path with each kernel arm's recorded
// rows there, on every metric the kernel's rows all have.
func shortfalls(ours []map[string]float64, kernel report.PathFigures) []shortfall {
	var out []shortfall
	for _, k := range kernel.Arms {
		for _, m := range barMetrics {
			theirs, ok := worst(k.Rows, m)
			if !ok {
				continue
			}
			our, ok := worst(ours, m)
			if !ok {
				out = append(out, shortfall{k.Arm, m, math.NaN(), theirs})
				continue
			}
			// control:host-kernel-bar-always-met
			if behind(our, theirs, m) {
				out = append(out, shortfall{k.Arm, m, our, theirs})
			}
		}
	}
	return out
}

// behind reports whether our figure falls short of theirs on metric.
func behind(our, theirs float64, metric string) bool {
	// control:host-kernel-bar-retrans-higher-better
	if judge.LowerIsBetter[metric] {
		return our > theirs
	}
	return our < theirs
}

var (
	figuresOnce sync.Once
	figures     report.Figures
	figuresErr  error
)

// kernelFigures reads the recorded figures and checks they cover every
// parity path at the suite's payload, for both kernel algorithms.
func kernelFigures(t *testing.T) report.Figures {
	t.Helper()
	figuresOnce.Do(func() {
		b, err := os.ReadFile(kernelFiguresFile)
		if err != nil {
			figuresErr = err
			return
		}
		figuresErr = json.Unmarshal(b, &figures)
	})
	if figuresErr != nil {
		t.Fatalf("%s: %v", kernelFiguresFile, figuresErr)
	}
	return figures
}

// suiteParityPaths are the suite's paths the figures are kept for: its parity-*
// presets, at the suite's payload.
func suiteParityPaths(t *testing.T) []bench.SuitePath {
	t.Helper()
	var out []bench.SuitePath
	for _, p := range bench.ParitySuite().Paths {
		if strings.HasPrefix(p.Preset, "parity-") {
			out = append(out, p)
		}
	}
	if len(out) != 6 {
		t.Fatalf("the parity suite has %d parity-* paths, the figures 6", len(out))
	}
	return out
}

// barRows runs arm's rows on path in virtual time: the bench's own virtual
// arm (metal/bench, the receiver's marks of osbench's Meter), one connection
// of the suite's payload a row, a row a seed. Each (arm, preset) runs once
// per test binary.
func barRows(t *testing.T, arm string, path bench.SuitePath) []map[string]float64 {
	t.Helper()
	key := arm + "/" + path.Preset
	if v, ok := barCache.Load(key); ok {
		return v.([]map[string]float64)
	}
	a, err := bench.Build(arm, arm, bench.ArmOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var rows []map[string]float64
	for _, seed := range barSeeds() {
		conns, err := a.RunRow(context.Background(), bench.RowSpec{Preset: path.Preset, Dir: osbench.Upload, Bytes: path.Bytes, Conns: 1, Seed: seed})
		if err != nil {
			t.Fatalf("%s on %s, seed %d: %v", arm, path.Preset, seed, err)
		}
		rows = append(rows, report.Row{Arm: arm, Conns: conns}.Metrics())
	}
	barCache.Store(key, rows)
	return rows
}

var barCache sync.Map

// pathFigures returns the kernel's figures for path, checking they were
// recorded at the suite's payload (goodput and marks depend on it).
func pathFigures(t *testing.T, path bench.SuitePath) report.PathFigures {
	t.Helper()
	f := kernelFigures(t)
	p := f.Path(path.Preset)
	if p == nil {
		t.Fatalf("%s has no figures for %s", kernelFiguresFile, path.Preset)
	}
	if p.Bytes != path.Bytes {
		t.Fatalf("%s: figures recorded at %d bytes a connection, the suite runs %d", path.Preset, p.Bytes, path.Bytes)
	}
	for _, k := range kernelArms {
		if a := p.Arm(k); a == nil || len(a.Rows) == 0 {
			t.Fatalf("%s: no figures of %s", path.Preset, k)
		}
	}
	return *p
}

// barKey names one metric of one kernel arm on one path.
type barKey struct{ Path, Kernel, Metric string }

// knownShortArm is the default arm knownShort describes. While the default
// is this arm, a shortfall listed here is allowed and one not listed fails;
// a listed one that is no longer short fails too, so the list only shrinks.
// Once the default is another arm the list no longer applies: every
// shortfall fails until the list is emptied (or re-measured for that arm)
// along with the change of default.
const knownShortArm = "D"

// knownShort are the default arm D's shortfalls in virtual time against the
// figures of 2026-12-04: none. (B, the default before D, had 22: every mark
// and goodput on parity-50m-40ms-stretch and parity-100m-100ms-stretch, its
// 1 s mark on parity-50m-40ms, its 100 ms mark on parity-20m-10ms-stretch.)
var knownShort = map[barKey]bool{}

// gate splits a path's shortfalls by the known list: those not on it
// (the lead lost), and the listed pairs of the path no longer short
// (stale entries, to be removed). known nil means none is allowed.
func gate(path string, found []shortfall, known map[barKey]bool) (lost []shortfall, stale []barKey) {
	short := map[barKey]bool{}
	for _, s := range found {
		k := barKey{path, s.Kernel, s.Metric}
		short[k] = true
		if !known[k] {
			lost = append(lost, s)
		}
	}
	for k := range known {
		// control:host-kernel-bar-stale-kept
		if k.Path == path && !short[k] {
			stale = append(stale, k)
		}
	}
	return lost, stale
}

// TestDefaultArmKeepsUpWithTheKernel runs the default arm (arms.Default)
// on each parity path in virtual time and holds its worst row to the
// kernel's worst recorded row on every metric (see kernelFiguresFile),
// allowing only knownShort while the default is knownShortArm.
func TestDefaultArmKeepsUpWithTheKernel(t *testing.T) {
	def := arms.Default()
	known := knownShort
	if def != knownShortArm {
		known = nil
	}
	for _, p := range suiteParityPaths(t) {
		t.Run(p.Preset, func(t *testing.T) {
			k := pathFigures(t, p)
			ours := barRows(t, def, p)
			found := shortfalls(ours, k)
			for _, s := range found {
				t.Logf("%s short: %v", def, s)
			}
			lost, stale := gate(p.Preset, found, known)
			for _, s := range lost {
				t.Errorf("default arm %s falls short of the kernel's recorded worst row: %v", def, s)
			}
			for _, s := range stale {
				t.Errorf("default arm %s is no longer short on %s against %s: remove it from knownShort", def, s.Metric, s.Kernel)
			}
		})
	}
}

// TestKernelBarFindsBsShortfallsOn100m100msStretch runs B itself on
// parity-100m-100ms-stretch: its 1 s mark in virtual time (about 2.1 MB)
// falls far short of the kernel's cubic rows (4.88 MB at worst), and the
// bar must say so, with both figures.
func TestKernelBarFindsBsShortfallsOn100m100msStretch(t *testing.T) {
	p := bench.SuitePath{}
	for _, q := range suiteParityPaths(t) {
		if q.Preset == "parity-100m-100ms-stretch" {
			p = q
		}
	}
	k := pathFigures(t, p)
	found := shortfalls(barRows(t, "B", p), k)
	for _, s := range found {
		if s.Kernel == "Linux-cubic" && s.Metric == "recv_1s" {
			t.Logf("found: %v", s)
			if !(s.Ours < 3 && s.Theirs > 4.5) {
				t.Errorf("B's 1 s mark %v against cubic's %v MB: want about 2.1 against 4.88", s.Ours, s.Theirs)
			}
			return
		}
	}
	t.Errorf("B's 1 s mark on parity-100m-100ms-stretch is not found short of cubic's; shortfalls %v", found)
}

// TestKernelBarComparesWorstRows pins the rule on figures made up for it:
// rows that reach the kernel's worst on every metric meet the bar, one
// row below it on one metric is one shortfall, retrans is held the other
// way up, and a metric our rows lack is short.
func TestKernelBarComparesWorstRows(t *testing.T) {
	kernel := report.PathFigures{Preset: "p", Arms: []report.ArmFigures{
		{Arm: "K", Rows: []map[string]float64{
			{"recv_1s": 2.0, "goodput": 5.0, "retrans": 1000},
			{"recv_1s": 3.0, "goodput": 5.5, "retrans": 4000},
		}},
		// A kernel arm without retrans is not compared on it.
		{Arm: "L", Rows: []map[string]float64{{"recv_1s": 2.5}}},
	}}
	row := func(recv, gp, rt float64) map[string]float64 {
		return map[string]float64{"recv_1s": recv, "goodput": gp, "retrans": rt}
	}
	for _, c := range []struct {
		name string
		ours []map[string]float64
		want []string // Kernel/Metric of each shortfall
	}{
		{"meets", []map[string]float64{row(2.5, 5.0, 4000), row(2.6, 6, 0)}, nil},
		{"the kernel's worst row exactly", []map[string]float64{row(2.5, 5.0, 4000)}, nil},
		{"one row short on recv_1s", []map[string]float64{row(2.6, 5.2, 0), row(2.4, 5.2, 0)}, []string{"L/recv_1s"}},
		{"goodput short", []map[string]float64{row(3, 4.9, 0)}, []string{"K/goodput"}},
		{"more retransmitted than the kernel's worst", []map[string]float64{row(3, 6, 4001)}, []string{"K/retrans"}},
		{"below every kernel row", []map[string]float64{row(1.9, 6, 0)}, []string{"K/recv_1s", "L/recv_1s"}},
		{"a mark our rows lack", []map[string]float64{{"goodput": 6, "retrans": 0}}, []string{"K/recv_1s", "L/recv_1s"}},
	} {
		var got []string
		for _, s := range shortfalls(c.ours, kernel) {
			got = append(got, s.Kernel+"/"+s.Metric)
		}
		if fmt.Sprint(got) != fmt.Sprint(c.want) {
			t.Errorf("%s: shortfalls %v, want %v", c.name, got, c.want)
		}
	}
}

// TestKernelBarGateOnlyShrinks pins the known list's gate: a shortfall not
// listed is lost ground, a listed pair no longer short is stale, and a
// listed pair still short passes; another path's entries do not count.
func TestKernelBarGateOnlyShrinks(t *testing.T) {
	known := map[barKey]bool{{"p", "K", "recv_1s"}: true, {"p", "K", "goodput"}: true, {"q", "K", "recv_1s"}: true}
	lost, stale := gate("p", []shortfall{{"K", "recv_1s", 1, 2}, {"K", "recv_2s", 1, 2}}, known)
	if len(lost) != 1 || lost[0].Metric != "recv_2s" {
		t.Errorf("lost %v, want recv_2s alone", lost)
	}
	if len(stale) != 1 || stale[0] != (barKey{"p", "K", "goodput"}) {
		t.Errorf("stale %v, want p/K/goodput alone", stale)
	}
	if lost, stale := gate("p", []shortfall{{"K", "recv_1s", 1, 2}}, nil); len(lost) != 1 || len(stale) != 0 {
		t.Errorf("with no list: lost %v, stale %v; want the shortfall lost", lost, stale)
	}
}
