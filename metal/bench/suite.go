package bench

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/netramp/netramp/metal/judge"
	"github.com/netramp/netramp/metal/report"
)

// Suite is a set of bench runs with one row order and one rule file, a run
// per path.
type Suite struct {
	Name  string
	Paths []SuitePath
	Order []string
	Defs  Definitions
	Conns int
	Rules string
	// Verdict names the rules that make a path's headline verdict: met if
	// all are CONFIRMED, not judged if any is NOT JUDGED, missed otherwise.
	Verdict []string
}

// SuitePath is one path of a suite: a nic/wire preset and the payload per
// connection, sized so a row takes a couple of seconds.
type SuitePath struct {
	Preset string
	Bytes  int64
}

// ParitySuite is osbench -suite parity: on each path this 2-core host can
// emulate punctually, the kernel's TCP (cubic and bbr) and this TCP's arms
// A, B, P and D (the default), all in real time on one nic/wire,
// interleaved three times (ABABAB), one connection a row, judged by
// judge.ParityRules. Every row's receiver is the kernel's: this TCP's arms
// send to it (rtk:), so a row of ours and a kernel row differ only in the
// sender, the side the rules judge.
func ParitySuite() Suite {
	return Suite{
		Name: "parity",
		Paths: []SuitePath{
			{"parity-20m-10ms", 5_000_000}, {"parity-20m-10ms-stretch", 5_000_000},
			{"parity-50m-40ms", 12_000_000}, {"parity-50m-40ms-stretch", 12_000_000},
			{"parity-100m-100ms", 20_000_000}, {"parity-100m-100ms-stretch", 20_000_000},
			{"pilot", 8_000_000},
		},
		Order: repeat([]string{"Linux-cubic", "Linux-bbr", "A", "B", "P", "D"}, 3),
		Defs: Definitions{"Linux-cubic": "linux:cubic", "Linux-bbr": "linux:bbr",
			"A": "rtk:A", "B": "rtk:B", "P": "rtk:P", "D": "rtk:D"},
		Conns:   1,
		Rules:   judge.ParityRules,
		Verdict: judge.ParityRuleNames,
	}
}

// Suites are the suites osbench -suite knows.
var Suites = map[string]func() Suite{"parity": ParitySuite}

func repeat(s []string, n int) []string {
	var out []string
	for i := 0; i < n; i++ {
		out = append(out, s...)
	}
	return out
}

// SuiteResult is one Result per path, in the suite's order.
type SuiteResult struct {
	Paths   []SuitePath
	Results []*Result
	Dir     string
}

// RunSuite runs s: the rule file goes into the evidence folder first, then
// each path is a bench run (base gives the evidence root, seed, late limit
// and output) into its own sub-folder, and the summary (every row's goodput
// and lateness, each path's verdicts) is printed and kept as summary.txt.
// only, if set, keeps the paths whose preset it names.
func RunSuite(ctx context.Context, s Suite, base Config, only []string) (*SuiteResult, error) {
	start := time.Now()
	if base.Evidence == "" {
		base.Evidence = filepath.Join("evidence", "suite-"+s.Name+"-"+start.UTC().Format("20060102T150405Z"))
	}
	if err := os.MkdirAll(base.Evidence, 0o755); err != nil {
		return nil, fmt.Errorf("bench: evidence folder: %w", err)
	}
	if err := os.WriteFile(filepath.Join(base.Evidence, "rules.txt"), []byte(s.Rules), 0o644); err != nil {
		return nil, err
	}
	file, err := judge.ParseFile(s.Name+" suite's rules", s.Rules)
	if err != nil {
		return nil, err
	}
	out := base.Out
	if out == nil {
		out = io.Discard
	}
	paths, err := selectPaths(s.Paths, only)
	if err != nil {
		return nil, err
	}
	res := &SuiteResult{Dir: base.Evidence}
	for _, p := range paths {
		cfg := base
		cfg.Order, cfg.Defs, cfg.Conns, cfg.Rules = s.Order, s.Defs, s.Conns, s.Rules
		cfg.RulesName = "the " + s.Name + " suite's rules"
		cfg.Preset, cfg.Bytes, cfg.ArmBytes = p.Preset, p.Bytes, nil
		cfg.Evidence = filepath.Join(base.Evidence, p.Preset)
		cfg.Out = io.Discard
		r, err := Run(ctx, cfg)
		if err != nil {
			return res, fmt.Errorf("bench: suite %s, path %s: %w", s.Name, p.Preset, err)
		}
		res.Paths = append(res.Paths, p)
		res.Results = append(res.Results, r)
		fmt.Fprintf(out, "%s: %s (%s)\n", p.Preset, headline(r, s.Verdict), r.Elapsed.Round(time.Second))
	}
	var sum strings.Builder
	writeSuiteSummary(&sum, s, file.RerunLate, base, res, time.Since(start))
	if err := os.WriteFile(filepath.Join(base.Evidence, "summary.txt"), []byte(sum.String()), 0o644); err != nil {
		return res, err
	}
	fmt.Fprint(out, "\n"+sum.String())
	return res, nil
}

func selectPaths(all []SuitePath, only []string) ([]SuitePath, error) {
	if len(only) == 0 {
		return all, nil
	}
	var out []SuitePath
	for _, name := range only {
		found := false
		for _, p := range all {
			if p.Preset == name {
				out = append(out, p)
				found = true
			}
		}
		if !found {
			var names []string
			for _, p := range all {
				names = append(names, p.Preset)
			}
			return nil, fmt.Errorf("bench: the suite has no path %q (it has %s)", name, strings.Join(names, ", "))
		}
	}
	return out, nil
}

// headline is a path's verdict from the named rules: MET, MISSED, or NOT
// JUDGED with the reason (rows rejected for lateness, or the first rule's).
func headline(r *Result, names []string) string {
	want := map[string]bool{}
	for _, n := range names {
		want[n] = true
	}
	met := true
	for _, v := range r.Verdicts {
		if !want[v.Rule.Name] {
			continue
		}
		switch v.Status {
		case judge.NotJudged:
			late := 0
			for _, row := range r.Rows {
				if row.Rejected != "" && row.RerunAs == 0 {
					late++
				}
			}
			if late > 0 {
				return fmt.Sprintf("parity NOT JUDGED: %d of %d rows rejected, their wire ran late", late, len(r.Rows))
			}
			return "parity NOT JUDGED: " + v.Rule.Name + ": " + v.Detail
		case judge.NotConfirmed:
			met = false
		}
	}
	if met {
		return "parity JUDGED: MET"
	}
	return "parity JUDGED: MISSED"
}

func writeSuiteSummary(w io.Writer, s Suite, rerunLate bool, base Config, res *SuiteResult, elapsed time.Duration) {
	fmt.Fprintf(w, "osbench -suite %s: %d path(s), rows %s, %d connection(s) a row;\n",
		s.Name, len(res.Paths), strings.Join(s.Order, " "), s.Conns)
	fmt.Fprintf(w, "a row is rejected when its wire's p99 lateness exceeds %s.\n", ms3(base.lateLimit()))
	if rerunLate {
		fmt.Fprintf(w, "The rules (%s: once) re-run a row rejected for lateness once, at once, in its slot;\n"+
			"the re-run stands in for it, and if it is late too its rules are NOT JUDGED. Goodput never triggers a re-run.\n",
			judge.RerunLateDirective)
	} else {
		fmt.Fprintln(w, "The rules re-run no row.")
	}
	for i, p := range res.Paths {
		r := res.Results[i]
		fmt.Fprintf(w, "\n%s, %s MB a connection: %s\n", p.Preset, report.Num(float64(p.Bytes)/1e6), headline(r, s.Verdict))
		fmt.Fprintf(w, "  %-4s %-12s %10s %9s  %s\n", "row", "arm", "goodput", "recv 1 s", "wire lateness p50 / p99 / max")
		for j, row := range r.Rows {
			fmt.Fprintf(w, "  %-4d %-12s %s\n", j+1, row.Arm, rowCells(row))
		}
		for _, l := range judge.Lines(r.Verdicts) {
			fmt.Fprintf(w, "  %s\n", l)
		}
		for _, st := range judge.Standings(r.Verdicts) {
			fmt.Fprintf(w, "  standing %s\n", st)
		}
	}
	fmt.Fprintf(w, "\nevidence: %s (%s)\n", res.Dir, elapsed.Round(time.Second))
}

// rowCells is a row's goodput, 1 s mark and lateness, or why it has none.
func rowCells(r report.Row) string {
	switch {
	case r.Unavailable != "":
		return "unavailable: " + r.Unavailable
	case r.Err != "":
		return "failed: " + r.Err
	}
	recv := "-"
	if v, ok := r.Recv(time.Second); ok {
		recv = report.Num(v) + " MB"
	}
	late := "-"
	if l := r.Lateness; l != nil {
		late = fmt.Sprintf("%s / %s / %s", ms3(l.P50), ms3(l.P99), ms3(l.Max))
	}
	line := fmt.Sprintf("%5s MB/s %9s  %s", report.Num(r.Goodput()), recv, late)
	if r.Rejected != "" {
		line += "  REJECTED"
	}
	if r.RerunAs != 0 {
		line += fmt.Sprintf(", re-run as row %d", r.RerunAs)
	}
	if r.RerunOf != 0 {
		line += fmt.Sprintf("  (re-run of row %d)", r.RerunOf)
	}
	return line
}
