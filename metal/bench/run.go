package bench

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/netramp/netramp/metal/arms"
	"github.com/netramp/netramp/metal/judge"
	"github.com/netramp/netramp/metal/osbench"
	"github.com/netramp/netramp/metal/report"
	"github.com/netramp/netramp/nic/wire"
)

// RealDefault names the default arm's real-time row ("rt:" and
// arms.Default()): this TCP with the zero options, in process, on the same
// real-time wire as the kernel's and gVisor's rows, so that the default
// rules compare it with them on one time base.
var RealDefault = "rt:" + arms.Default()

// KernelSinkDefault names the default arm's real-time row that sends to the
// kernel's receiver ("rtk:" and arms.Default()), the sink the Linux rows
// read from: held against Linux, it differs from a Linux row only in the
// sender, where RealDefault, this TCP at both ends, differs at both. It
// needs root and a Linux host, as the Linux rows do.
var KernelSinkDefault = "rtk:" + arms.Default()

// DefaultOrder is the row order of the default bench: three real-time
// quartets of the kernel, the default arm sending to the kernel's receiver,
// the default arm at both ends and gVisor, each in a different order,
// alternate with three virtual-time A/B/P triples. P (B with pacing,
// HyStart++ with L = infinity) runs by default so that measurement, not
// argument, decides whether pacing should become the default arm.
var DefaultOrder = []string{
	// control:bench-default-order-without-real-default
	"Linux", KernelSinkDefault, RealDefault, "gVisor", "A", "B", "P",
	"gVisor", RealDefault, KernelSinkDefault, "Linux", "A", "B", "P",
	"Linux", "gVisor", KernelSinkDefault, RealDefault, "A", "B", "P",
}

// ErrNoRules is returned when a run is asked to start without a rule file.
var ErrNoRules = errors.New("bench: no rule file: the rules must be written before the run")

// Config is one bench run.
type Config struct {
	Order  []string    // arm names in row order
	Defs   Definitions // name -> definition; nil = DefaultDefinitions
	Preset string      // nic/wire preset
	Dir    osbench.Direction
	Bytes  int64 // payload per connection
	// ArmBytes overrides Bytes for named arms (a slow real-time arm that
	// would take minutes at the full size); the table notes every override.
	ArmBytes map[string]int64
	Conns    int   // connections per row
	Seed     int64 // base path seed; the i-th row of each arm uses Seed+i

	Rules     string // the rule file's text (required)
	RulesName string // where it came from, for messages

	Evidence string // evidence folder; "" = ./evidence/<UTC timestamp>
	Repo     string // repository root (host facts, rev: arms); "" = none
	Out      io.Writer
	Progress io.Writer // a terminal for the progress line; nil = quiet
	NoPlot   bool
	// LateLimit rejects a real-time emulated row whose wire handed frames
	// over later than this at the 99th percentile; 0 = DefaultLateLimit.
	LateLimit time.Duration
}

func (c Config) lateLimit() time.Duration {
	if c.LateLimit > 0 {
		return c.LateLimit
	}
	return DefaultLateLimit
}

func ms3(d time.Duration) string {
	return strconv.FormatFloat(float64(d)/1e6, 'f', 3, 64) + " ms"
}

// Result is what a run produced.
type Result struct {
	Rows     []report.Row
	Verdicts []judge.Verdict
	Dir      string
	Elapsed  time.Duration
}

// Run runs the bench: it parses the rules and copies them into the
// evidence before any row runs, runs the rows in order, and writes the
// table, the verdict and the plot.
func Run(ctx context.Context, cfg Config) (*Result, error) {
	return runWith(ctx, cfg, nil)
}

// runWith is Run with some arms given ready-made (tests substitute arms).
func runWith(ctx context.Context, cfg Config, given map[string]Arm) (*Result, error) {
	start := time.Now()
	if strings.TrimSpace(cfg.Rules) == "" {
		return nil, ErrNoRules
	}
	if cfg.RulesName == "" {
		cfg.RulesName = "rules"
	}
	file, err := judge.ParseFile(cfg.RulesName, cfg.Rules)
	if err != nil {
		return nil, err
	}
	rules := file.Rules
	if cfg.Defs == nil {
		cfg.Defs = DefaultDefinitions()
	}
	if len(cfg.Order) == 0 {
		return nil, errors.New("bench: no rows to run")
	}
	if cfg.Conns <= 0 || cfg.Bytes <= 0 {
		return nil, fmt.Errorf("bench: %d connections of %d bytes: both must be positive", cfg.Conns, cfg.Bytes)
	}
	if cfg.Dir == "" {
		cfg.Dir = osbench.Upload
	}
	if cfg.Out == nil {
		cfg.Out = io.Discard
	}
	if cfg.Evidence == "" {
		cfg.Evidence = filepath.Join("evidence", start.UTC().Format("20060102T150405Z"))
	}
	if err := os.MkdirAll(cfg.Evidence, 0o755); err != nil {
		return nil, fmt.Errorf("bench: evidence folder: %w", err)
	}
	ev := cfg.Evidence
	// The rule is fixed before the first row runs.
	if err := os.WriteFile(filepath.Join(ev, "rules.txt"), []byte(cfg.Rules), 0o644); err != nil {
		return nil, err
	}
	work, err := os.MkdirTemp("", "osbench-work-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(work)
	arms := map[string]Arm{}
	armInfo := map[string]map[string]string{}
	for _, name := range cfg.Order {
		if _, ok := arms[name]; ok {
			continue
		}
		if a, ok := given[name]; ok {
			arms[name] = a
			continue
		}
		def, ok := cfg.Defs[name]
		if !ok {
			return nil, fmt.Errorf("%w %q (defined: %s)", ErrUnknownArm, name, strings.Join(sortedKeys(map[string]string(cfg.Defs)), ", "))
		}
		a, err := Build(name, def, ArmOptions{Repo: cfg.Repo, WorkDir: work})
		if err != nil {
			return nil, err
		}
		arms[name] = a
	}
	for name, a := range arms {
		info := map[string]string{"definition": cfg.Defs[name], "timebase": a.Timebase(), "path": a.PathName(cfg.Preset)}
		if why := a.Unavailable(); why != "" {
			info["unavailable"] = why
		}
		for k, v := range a.Describe() {
			info[k] = v
		}
		armInfo[name] = info
	}
	plan := map[string]any{"order": cfg.Order, "preset": cfg.Preset, "direction": cfg.Dir, "bytes": cfg.Bytes, "arm_bytes": cfg.ArmBytes,
		"conns": cfg.Conns, "seed": cfg.Seed, "rules": cfg.RulesName, "start": start.UTC().Format(time.RFC3339)}
	if err := writeJSON(filepath.Join(ev, "plan.json"), plan); err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(ev, "host.txt"), []byte(hostFacts(cfg.Repo)), 0o644); err != nil {
		return nil, err
	}
	raw, err := os.Create(filepath.Join(ev, "connections.jsonl"))
	if err != nil {
		return nil, err
	}
	defer raw.Close()

	prog := newProgress(cfg.Progress, len(cfg.Order), cfg.Conns, start)
	defer prog.stop()
	var rows []report.Row
	armRow := map[string]int{}
	// runRow runs row i of the order (arm name, its k-th row) and records
	// its connections as row len(rows) of the run.
	runRow := func(i int, name string, k int) (report.Row, error) {
		a := arms[name]
		row := report.Row{Arm: name, ArmRow: k, Timebase: a.Timebase(), Path: a.PathName(cfg.Preset)}
		if why := a.Unavailable(); why != "" {
			row.Unavailable = why
			return row, nil
		}
		prog.row(i, name, a.Timebase())
		nb := cfg.Bytes
		if b, ok := cfg.ArmBytes[name]; ok && b > 0 {
			nb = b
		}
		spec := RowSpec{Preset: cfg.Preset, Dir: cfg.Dir, Bytes: nb, Conns: cfg.Conns, Seed: cfg.Seed + int64(k),
			Progress: func(c int) { prog.conn(c) }}
		var late *report.Lateness
		spec.Late = func(l, lag wire.Lateness) { late = rowLateness(l, lag) }
		conns, err := a.RunRow(ctx, spec)
		if late != nil {
			judgeLateness(&row, late, cfg.lateLimit())
		}
		if err != nil {
			row.Err = err.Error()
			conns = nil // a row is whole or absent: partial rows would bias the means
		}
		if len(conns) > 0 && conns[0].Timebase != "" {
			row.Timebase = conns[0].Timebase
		}
		for j := range conns {
			c := &conns[j]
			c.Arm, c.Row, c.ArmRow, c.Conn, c.Path = name, len(rows), k, j, row.Path
			c.Timebase = row.Timebase
			b, _ := json.Marshal(c)
			if _, err := raw.Write(append(b, '\n')); err != nil {
				return row, err
			}
		}
		row.Conns = conns
		return row, ctx.Err()
	}
	for i, name := range cfg.Order {
		k := armRow[name]
		armRow[name]++
		row, err := runRow(i, name, k)
		rows = append(rows, row)
		if err != nil {
			return nil, err
		}
		// The rules re-run a row rejected for lateness once, at once, in
		// its slot, with the same seed; the re-run stands in for it.
		// control:metal-late-row-not-rerun
		if file.RerunLate && lateRejected(row) {
			rows[len(rows)-1].RerunAs = len(rows) + 1
			again, err := runRow(i, name, k)
			again.RerunOf = len(rows)
			rows = append(rows, again)
			if err != nil {
				return nil, err
			}
		}
	}
	prog.stop()
	for i, r := range rows {
		if r.Err != "" {
			armInfo[r.Arm][fmt.Sprintf("row %d failed", i)] = r.Err
		}
	}
	if err := writeJSON(filepath.Join(ev, "arms.json"), armInfo); err != nil {
		return nil, err
	}
	var rowInfo []map[string]any
	for i, r := range rows {
		rowInfo = append(rowInfo, map[string]any{"row": i, "arm": r.Arm, "arm_row": r.ArmRow, "timebase": r.Timebase, "path": r.Path,
			"connections": len(r.Conns), "unavailable": r.Unavailable, "error": r.Err, "note": r.Note, "rejected": r.Rejected, "lateness": r.Lateness,
			"rerun_as": r.RerunAs, "rerun_of": r.RerunOf})
	}
	if err := writeJSON(filepath.Join(ev, "rows.json"), rowInfo); err != nil {
		return nil, err
	}

	// Judge: an arm with any row unavailable, failed or rejected is not
	// judged; a rejected row that was re-run counts as its re-run.
	jrows := make([]judge.Row, 0, len(rows))
	lr := lineRate(cfg.Preset, cfg.Dir)
	why := map[string][]string{}
	for i, r := range rows {
		switch {
		case r.RerunAs != 0:
			continue
		case r.RerunOf != 0 && r.Rejected != "":
			why[r.Arm] = append(why[r.Arm], fmt.Sprintf("row %d rejected and its re-run, row %d, too: %s%s", r.RerunOf, i+1, r.Rejected, lateFigures(r)))
		case r.Unavailable != "":
			why[r.Arm] = append(why[r.Arm], "unavailable: "+r.Unavailable)
		case r.Err != "":
			why[r.Arm] = append(why[r.Arm], fmt.Sprintf("row %d failed: %s", i+1, r.Err))
		case r.Rejected != "":
			why[r.Arm] = append(why[r.Arm], fmt.Sprintf("row %d rejected: %s%s", i+1, r.Rejected, lateFigures(r)))
		default:
			jr := judge.Row{Arm: r.Arm, Values: r.Metrics(), Timebase: r.Timebase}
			if onPreset(r.Path, cfg.Preset) {
				jr.LineRate = lr
			}
			jrows = append(jrows, jr)
		}
	}
	missing := map[string]string{}
	for arm, w := range why {
		seen := map[string]bool{}
		var uniq []string
		for _, x := range w {
			if !seen[x] {
				seen[x] = true
				uniq = append(uniq, x)
			}
		}
		missing[arm] = strings.Join(uniq, "; ")
	}
	verdicts := judge.Judge(rules, jrows, missing)
	elapsed := time.Since(start)
	if err := writeReport(cfg, rows, verdicts, elapsed); err != nil {
		return nil, err
	}
	return &Result{Rows: rows, Verdicts: verdicts, Dir: ev, Elapsed: elapsed}, nil
}

func writeReport(cfg Config, rows []report.Row, verdicts []judge.Verdict, elapsed time.Duration) error {
	ev := cfg.Evidence
	var text, md strings.Builder
	fmt.Fprintf(&text, "osbench %s, preset %s, %d connection(s) of %s a row, order %s\n\n", cfg.Dir, cfg.Preset, cfg.Conns,
		report.Num(float64(cfg.Bytes)/1e6)+" MB", strings.Join(cfg.Order, " "))
	if err := report.WriteText(&text, cfg.Dir, rows); err != nil {
		return err
	}
	text.WriteString("\n")
	report.WriteCounters(&text, rows, false)
	var paths []string
	for i, r := range rows {
		line := fmt.Sprintf("row %d %s: %s time, %s", i+1, r.Arm, r.Timebase, r.Path)
		if r.Note != "" {
			line += "; " + r.Note
		}
		if r.Rejected != "" {
			line += "; REJECTED for the verdict: " + r.Rejected
		}
		if r.RerunAs != 0 {
			line += fmt.Sprintf("; re-run as row %d", r.RerunAs)
		}
		if r.RerunOf != 0 {
			line += fmt.Sprintf("; re-run of row %d", r.RerunOf)
		}
		paths = append(paths, line)
	}
	for _, arm := range report.ArmOrder(rows) {
		if b, ok := cfg.ArmBytes[arm]; ok && b > 0 && b != cfg.Bytes {
			paths = append(paths, fmt.Sprintf("%s: %s MB a connection (not %s MB)", arm, report.Num(float64(b)/1e6), report.Num(float64(cfg.Bytes)/1e6)))
		}
	}
	text.WriteString("\n" + strings.Join(paths, "\n") + "\n")
	fmt.Fprintf(&md, "osbench %s, preset %s, %d connection(s) of %s MB a row\n\n", cfg.Dir, cfg.Preset, cfg.Conns, report.Num(float64(cfg.Bytes)/1e6))
	report.WriteMarkdown(&md, cfg.Dir, rows)
	md.WriteString("\n")
	report.WriteCounters(&md, rows, true)
	var vt strings.Builder
	fmt.Fprintf(&vt, "verdict (rules from %s, fixed before the run):\n", cfg.RulesName)
	for _, l := range judge.Lines(verdicts) {
		fmt.Fprintf(&vt, "  %s\n", l)
	}
	if st := judge.Standings(verdicts); len(st) > 0 {
		fmt.Fprintf(&vt, "standing (AHEAD or BEHIND only beyond the margin, the larger spread of either arm's rows):\n")
		for _, s := range st {
			fmt.Fprintf(&vt, "  %s\n", s)
		}
		md.WriteString("\n")
		writeStandingsMarkdown(&md, st)
	}
	md.WriteString("\n```\n" + vt.String() + "```\n")
	for name, body := range map[string]string{"table.txt": text.String(), "table.md": md.String(), "verdict.txt": vt.String()} {
		if err := os.WriteFile(filepath.Join(ev, name), []byte(body), 0o644); err != nil {
			return err
		}
	}
	if !cfg.NoPlot {
		title := fmt.Sprintf("osbench %s on %s: received bytes per row (mean of %d connections)", cfg.Dir, cfg.Preset, cfg.Conns)
		if err := report.Plot(rows, title, 0, filepath.Join(ev, "ramp.png"), filepath.Join(ev, "ramp.svg")); err != nil {
			return err
		}
	}
	fmt.Fprint(cfg.Out, text.String())
	fmt.Fprintf(cfg.Out, "\n%s\nevidence: %s (%s)\n", vt.String(), ev, elapsed.Round(time.Second))
	return os.WriteFile(filepath.Join(ev, "elapsed.txt"), []byte(elapsed.String()+"\n"), 0o644)
}

// writeStandingsMarkdown writes the comparison lines as a table: a row per
// compared pair, a column per metric any of them compares.
func writeStandingsMarkdown(w io.Writer, st []judge.Standing) {
	order := append(append([]string(nil), report.MarkMetrics...), "goodput", "retrans")
	used := map[string]bool{}
	for _, s := range st {
		for _, m := range s.Metrics {
			used[m] = true
		}
	}
	var cols []string
	for _, m := range order {
		if used[m] {
			cols = append(cols, m)
			delete(used, m)
		}
	}
	for _, s := range st { // metrics the order above does not know, as the rules give them
		for _, m := range s.Metrics {
			if used[m] {
				cols = append(cols, m)
				delete(used, m)
			}
		}
	}
	fmt.Fprintf(w, "| standing | %s |\n|%s\n", strings.Join(cols, " | "), strings.Repeat("---|", len(cols)+1))
	for _, s := range st {
		cells := make([]string, len(cols))
		for i, c := range cols {
			for k, m := range s.Metrics {
				if m == c {
					cells[i] = s.Status[k].String()
				}
			}
		}
		fmt.Fprintf(w, "| %s vs %s | %s |\n", s.X, s.Y, strings.Join(cells, " | "))
	}
}

func writeJSON(path string, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(b, '\n'), 0o644)
}

// hostFacts records what the figures depend on: kernel, cores, Go, revision.
func hostFacts(repo string) string {
	var b strings.Builder
	run := func(label string, name string, args ...string) {
		out, err := exec.Command(name, args...).CombinedOutput()
		if err != nil {
			fmt.Fprintf(&b, "%s: (%v)\n", label, err)
			return
		}
		fmt.Fprintf(&b, "%s: %s\n", label, strings.TrimSpace(string(out)))
	}
	run("uname", "uname", "-a")
	fmt.Fprintf(&b, "nproc: %d (GOMAXPROCS %d)\n", runtime.NumCPU(), runtime.GOMAXPROCS(0))
	fmt.Fprintf(&b, "go: %s %s/%s\n", runtime.Version(), runtime.GOOS, runtime.GOARCH)
	if repo != "" {
		run("git rev", "git", "-C", repo, "rev-parse", "HEAD")
		out, _ := exec.Command("git", "-C", repo, "status", "--porcelain", "--untracked-files=no").Output()
		fmt.Fprintf(&b, "git tree: %s\n", map[bool]string{true: "clean", false: "modified tracked files"}[len(strings.TrimSpace(string(out))) == 0])
	}
	fmt.Fprintf(&b, "euid: %d\n", os.Geteuid())
	return b.String()
}
