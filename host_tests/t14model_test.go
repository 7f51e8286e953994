package hosttests

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/netramp/netramp/metal/bench"
	"github.com/netramp/netramp/metal/judge"
	"github.com/netramp/netramp/metal/osbench"
	"github.com/netramp/netramp/metal/report"
)

// metalRow is one arm of the HyStart++ field report's T14 A/B on metal
// (three rows an arm, each the mean of five connections): the range over its
// rows of the upload goodput (MB/s) and of the MB received by each of
// osbench.DefaultMarks, and of the counters the model must reproduce.
type metalRow struct {
	arm         string
	goodput     [2]float64
	by          [4][2]float64
	css         [2]uint64 // tcp.hystart.css a row
	lossProbes  [2]uint64 // tcp.loss-probes a row
	cssExitsMax uint64
}

// t14Metal is the report's table: "A (3) 87, 87, 87 | 0.33–0.34 MB |
// 2.0–2.1 MB | 34–38 MB | 144–149 MB" and "B (3) 112, 112, 112 | 2.1–3.3 MB |
// 23.9–25.4 MB | 106–107 MB | 222–223 MB"; B's rows entered CSS 590–702
// times and never exited, sent no loss probe; A1 sent 2.
var t14Metal = []metalRow{
	{arm: "A", goodput: [2]float64{87, 87}, by: [4][2]float64{{0.33, 0.34}, {2.0, 2.1}, {34, 38}, {144, 149}},
		lossProbes: [2]uint64{0, 2}},
	{arm: "B", goodput: [2]float64{112, 112}, by: [4][2]float64{{2.1, 3.3}, {23.9, 25.4}, {106, 107}, {222, 223}},
		css: [2]uint64{590, 702}},
}

// fitTolerance is the issue's ±25%: a virtual figure fits when it lies
// within [0.75·lowest, 1.25·highest] of the metal rows' range.
const fitTolerance = 0.25

// cssOrder is how far the CSS entry count may stray and still be "of the same
// order" as metal's: within a factor of two of its range.
const cssOrder = 2

// t14KnownMisses are figures the model cannot reach because of this TCP, not
// the path, each with why. The test logs them instead of failing, and fails
// if one starts to hold, so the list stays true.
var t14KnownMisses = map[string]string{}

type fitCheck struct {
	name string
	got  string
	want string
	ok   bool
}

func bandOK(v float64, r [2]float64) bool {
	return v >= r[0]*(1-fitTolerance) && v <= r[1]*(1+fitTolerance)
}

func rng(r [2]float64) string {
	if r[0] == r[1] {
		return fmt.Sprintf("%.3g", r[0])
	}
	return fmt.Sprintf("%.3g–%.3g", r[0], r[1])
}

// t14Checks compares one virtual row with its metal row.
func t14Checks(m metalRow, row report.Row) []fitCheck {
	var out []fitCheck
	add := func(name string, v float64, r [2]float64) {
		out = append(out, fitCheck{name: m.arm + " " + name, got: fmt.Sprintf("%.3g", v),
			want: fmt.Sprintf("%s (fit %.3g–%.3g)", rng(r), r[0]*(1-fitTolerance), r[1]*(1+fitTolerance)),
			ok:   bandOK(v, r)})
	}
	for i, d := range osbench.DefaultMarks {
		v, measured := row.Recv(d)
		add("MB by "+d.String(), v, m.by[i])
		out[len(out)-1].ok = out[len(out)-1].ok && measured
	}
	add("goodput MB/s", row.Goodput(), m.goodput)
	ctr := func(name string) uint64 { v, _ := row.Counter(name); return v }
	if m.css[1] > 0 {
		css := ctr("tcp.hystart.css")
		out = append(out, fitCheck{name: m.arm + " CSS entries", got: fmt.Sprint(css),
			want: fmt.Sprintf("%d–%d (within ×%d)", m.css[0], m.css[1], cssOrder),
			ok:   css*cssOrder >= m.css[0] && css <= m.css[1]*cssOrder})
	}
	exits := ctr("tcp.hystart.exits")
	out = append(out, fitCheck{name: m.arm + " CSS exits", got: fmt.Sprint(exits), want: fmt.Sprint(m.cssExitsMax), ok: exits <= m.cssExitsMax})
	lp := ctr("tcp.loss-probes")
	out = append(out, fitCheck{name: m.arm + " loss probes", got: fmt.Sprint(lp),
		want: fmt.Sprintf("%d–%d", m.lossProbes[0], m.lossProbes[1]), ok: lp <= m.lossProbes[1]})
	for _, c := range []string{"tcp.retransmitted.bytes", "tcp.rto", "tcp.recoveries"} {
		v := ctr(c)
		out = append(out, fitCheck{name: m.arm + " " + strings.TrimPrefix(c, "tcp."), got: fmt.Sprint(v), want: "0", ok: v == 0})
	}
	return out
}

// TestT14ModelMatchesMetal runs arms A and B on the t14 preset as the
// field report ran them on metal (osbench-lan/3 upload, five connections of
// 250 MB a row, marks at the receiver from its first payload byte), through
// the bench's own virtual-time arm, and holds every received-by mark and the
// goodput within ±25% of the metal rows, B's CSS entries within a factor of
// two, and no CSS exit and no loss. Run with -v for the table.
func TestT14ModelMatchesMetal(t *testing.T) {
	if testing.Short() {
		t.Skip("ten virtual connections of 250 MB")
	}
	if raceEnabled {
		t.Skip("ten virtual connections of 250 MB: tens of minutes under the race detector")
	}
	var out strings.Builder
	res, err := bench.Run(context.Background(), bench.Config{
		Order: []string{"A", "B"}, Preset: "t14", Dir: osbench.Upload, Bytes: 250_000_000, Conns: 5, Seed: 1,
		Rules: judge.DefaultRules, Evidence: t.TempDir(), Out: &out, NoPlot: true,
	})
	if err != nil {
		t.Fatalf("bench: %v\n%s", err, out.String())
	}
	rows := map[string]report.Row{}
	for _, r := range res.Rows {
		if r.Err != "" || len(r.Conns) != 5 {
			t.Fatalf("row %s: %d connections, error %q", r.Arm, len(r.Conns), r.Err)
		}
		rows[r.Arm] = r
	}
	var b strings.Builder
	fmt.Fprintf(&b, "\n%-22s %-10s %-28s %s\n", "t14 virtual vs metal", "virtual", "metal rows", "verdict")
	for _, m := range t14Metal {
		for _, c := range t14Checks(m, rows[m.arm]) {
			verdict := "fits"
			why, known := t14KnownMisses[c.name]
			switch {
			case !c.ok && known:
				verdict = "KNOWN MISS (tcp, see above)"
				t.Logf("%s: %s, metal %s: known miss, %s", c.name, c.got, c.want, why)
			case !c.ok:
				verdict = "MISS"
				t.Errorf("%s: virtual %s, metal %s", c.name, c.got, c.want)
			case known:
				t.Errorf("%s now fits (%s against %s): remove it from t14KnownMisses", c.name, c.got, c.want)
			}
			fmt.Fprintf(&b, "%-22s %-10s %-28s %s\n", c.name, c.got, c.want, verdict)
		}
	}
	t.Log(b.String())
}
