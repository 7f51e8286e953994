package bench

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/netramp/netramp/metal/judge"
	"github.com/netramp/netramp/metal/osbench"
	"github.com/netramp/netramp/metal/report"
	"github.com/netramp/netramp/nic/wire"
)

// TestParitySuiteRunsEveryArmInRealTime: the parity suite's paths are
// presets, its rows interleave Linux cubic, Linux bbr, A, B, P and D three
// times, every arm it defines runs in real time, this TCP's arms sending to
// the kernel's receiver as the kernel's rows do, and its rules parse.
func TestParitySuiteRunsEveryArmInRealTime(t *testing.T) {
	s := ParitySuite()
	for _, p := range s.Paths {
		if _, err := wire.Preset(p.Preset); err != nil || p.Bytes <= 0 {
			t.Errorf("path %+v: %v", p, err)
		}
	}
	if got := strings.Join(s.Order, " "); got != strings.Repeat("Linux-cubic Linux-bbr A B P D ", 3)[:len(got)] || len(s.Order) != 18 {
		t.Errorf("order %s", got)
	}
	for name, def := range s.Defs {
		a, err := Build(name, def, ArmOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if a.Timebase() != Real {
			t.Errorf("arm %s (%s) runs in %s time", name, def, a.Timebase())
		}
		if !strings.HasPrefix(name, "Linux-") && def != "rtk:"+name {
			t.Errorf("arm %s is %s, want rtk:%[1]s: the kernel's receiver, as the kernel rows'", name, def)
		}
	}
	if _, err := judge.Parse("parity", s.Rules); err != nil {
		t.Fatal(err)
	}
}

// TestSuiteSmoke runs a tiny suite (kernel loopback arms, one path, a few
// kilobytes) end to end: the rules are kept, each path gets its evidence,
// and the summary shows every row and the headline verdict. It asserts no
// figure.
func TestSuiteSmoke(t *testing.T) {
	s := Suite{
		Name:    "smoke",
		Paths:   []SuitePath{{"parity-20m-10ms", 20_000}, {"pilot", 20_000}},
		Order:   []string{"L", "M", "L", "M"},
		Defs:    Definitions{"L": "loopback", "M": "loopback"},
		Conns:   1,
		Rules:   "parity: L >= slowest M on goodput, tolerance 1%\n",
		Verdict: []string{"parity"},
	}
	var out bytes.Buffer
	dir := t.TempDir()
	res, err := RunSuite(context.Background(), s, Config{Evidence: dir, Out: &out, NoPlot: true}, []string{"parity-20m-10ms"})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Results) != 1 || len(res.Results[0].Rows) != 4 {
		t.Fatalf("results %+v", res)
	}
	for _, f := range []string{"rules.txt", "summary.txt", "parity-20m-10ms/table.txt", "parity-20m-10ms/verdict.txt"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			t.Errorf("evidence: %v", err)
		}
	}
	for _, want := range []string{"parity-20m-10ms, 0.020 MB a connection: parity JUDGED:", "  4    M ", "parity: "} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("summary lacks %q:\n%s", want, out.String())
		}
	}
	if _, err := RunSuite(context.Background(), s, Config{Evidence: t.TempDir()}, []string{"nowhere"}); err == nil {
		t.Error("a path the suite does not have was accepted")
	}
}

// scriptRow is one row a scriptArm plays: its wire late or not, its
// payload (so its goodput), and whether it fails.
type scriptRow struct {
	late  bool
	bytes int64
	fail  bool
}

// scriptArm stands for a real-time emulated arm whose rows follow a script,
// so that only the rules decide what the runner does with them. It records
// the seed of every row it ran.
type scriptArm struct {
	loopbackArm
	rows  []scriptRow
	seeds []int64
}

func (s *scriptArm) RunRow(_ context.Context, spec RowSpec) ([]report.Conn, error) {
	r := s.rows[0]
	s.rows = s.rows[1:]
	s.seeds = append(s.seeds, spec.Seed)
	p99 := 100 * time.Microsecond
	if r.late {
		p99 = 2 * time.Millisecond
	}
	spec.Late(wire.Lateness{Frames: 100, P50: 10 * time.Microsecond, P99: p99, Max: 3 * time.Millisecond}, wire.Lateness{})
	if r.fail {
		return nil, errors.New("connection reset")
	}
	m := osbench.NewMeter(time.Unix(0, 0))
	m.Add(time.Unix(0, 0), 1000)
	m.Add(time.Unix(1, 0), int(r.bytes-1000))
	return []report.Conn{{Report: m.Report(time.Unix(1, 0), osbench.Upload, r.bytes)}}, nil
}

// TestLateRowIsRerunOnceInItsSlot: under rules with "rerun-late: once", a
// row rejected for lateness is run again at once, with its seed, before the
// next row of the order; the re-run stands in for it, and the summary shows
// both. A re-run that is late too leaves the rule NOT JUDGED. Without the
// line, and for a row that is slow or failed but not rejected for
// lateness, nothing is re-run.
func TestLateRowIsRerunOnceInItsSlot(t *testing.T) {
	const rule = "p: R within 1000 of S on goodput\n"
	const rerun = "rerun-late: once\n"
	ok, late, slow := scriptRow{bytes: 2000}, scriptRow{late: true, bytes: 2000}, scriptRow{bytes: 1001}
	failedLate := scriptRow{late: true, fail: true}
	for _, c := range []struct {
		name    string
		rules   string
		r       []scriptRow
		arms    string // the arm of each row run, in order
		rerunAs map[int]int
		seeds   string // the seeds R's rows ran with
		status  judge.Status
		summary []string
	}{
		{"late once", rule + rerun, []scriptRow{late, ok, ok, ok}, "R R S R S R S", map[int]int{1: 2}, "[10 10 11 12]",
			judge.Confirmed, []string{"REJECTED, re-run as row 2", "(re-run of row 1)", "parity JUDGED", "re-run a row rejected for lateness once"}},
		{"late twice", rule + rerun, []scriptRow{ok, late, late, ok}, "R S R R S R S", map[int]int{3: 4}, "[10 11 11 12]",
			judge.NotJudged, []string{"REJECTED, re-run as row 4", "REJECTED  (re-run of row 3)", "parity NOT JUDGED: 1 of 7 rows rejected"}},
		{"no rerun line", rule, []scriptRow{late, ok, ok}, "R S R S R S", nil, "[10 11 12]",
			judge.NotJudged, []string{"The rules re-run no row.", "parity NOT JUDGED: 1 of 6 rows rejected"}},
		{"slow, not late", rule + rerun, []scriptRow{slow, ok, ok}, "R S R S R S", nil, "[10 11 12]",
			judge.Confirmed, []string{"parity JUDGED"}},
		{"failed and late", rule + rerun, []scriptRow{failedLate, ok, ok}, "R S R S R S", nil, "[10 11 12]",
			judge.NotJudged, []string{"failed: connection reset"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := &scriptArm{rows: c.r}
			sArm := &scriptArm{rows: []scriptRow{ok, ok, ok}}
			cfg := Config{Order: []string{"R", "S", "R", "S", "R", "S"}, Defs: Definitions{"R": "loopback", "S": "loopback"},
				Bytes: 1, Conns: 1, Seed: 10, Rules: c.rules, Evidence: t.TempDir(), NoPlot: true}
			res, err := runWith(context.Background(), cfg, map[string]Arm{"R": r, "S": sArm})
			if err != nil {
				t.Fatal(err)
			}
			var arms []string
			for i, row := range res.Rows {
				arms = append(arms, row.Arm)
				if want := c.rerunAs[i+1]; row.RerunAs != want {
					t.Errorf("row %d: re-run as %d, want %d", i+1, row.RerunAs, want)
				}
				if from := row.RerunOf; from != 0 {
					if c.rerunAs[from] != i+1 || res.Rows[from-1].ArmRow != row.ArmRow {
						t.Errorf("row %d: a re-run of row %d, which is not the late row before it", i+1, from)
					}
				}
			}
			if got := strings.Join(arms, " "); got != c.arms {
				t.Errorf("rows %s, want %s", got, c.arms)
			}
			if got := fmt.Sprint(r.seeds); got != c.seeds {
				t.Errorf("R ran with seeds %s, want %s", got, c.seeds)
			}
			if got := res.Verdicts[0].Status; got != c.status {
				t.Errorf("verdict %v, want %v: %s", got, c.status, res.Verdicts[0].Detail)
			}
			s := Suite{Name: "t", Order: cfg.Order, Conns: 1, Rules: c.rules, Verdict: []string{"p"}}
			f, _ := judge.ParseFile("t", c.rules)
			var sum strings.Builder
			writeSuiteSummary(&sum, s, f.RerunLate, cfg, &SuiteResult{Paths: []SuitePath{{"p", 1}}, Results: []*Result{res}}, 0)
			for _, want := range c.summary {
				if !strings.Contains(sum.String(), want) {
					t.Errorf("summary lacks %q:\n%s", want, sum.String())
				}
			}
		})
	}
}
