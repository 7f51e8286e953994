package report

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// Figures are some arms' recorded rows from a suite's evidence, kept in the
// repository as a bar a test holds this TCP to: each row's metrics by the
// judge's names (Row.Metrics), with where and when they were measured.
type Figures struct {
	// Evidence is the suite folder they were read from.
	Evidence string `json:"evidence"`
	// Command is the command that ran the suite, as its runner gave it.
	Command string `json:"command"`
	// Note is anything else a reader needs (what a metric lacks, and why).
	Note  string        `json:"note,omitempty"`
	Paths []PathFigures `json:"paths"`
}

// PathFigures are one path's rows: its preset and payload, the run's start
// and the host facts of its evidence (host.txt).
type PathFigures struct {
	Preset string       `json:"preset"`
	Bytes  int64        `json:"bytes"`
	Start  string       `json:"start"`  // UTC, plan.json's start
	Commit string       `json:"commit"` // host.txt's git rev
	Tree   string       `json:"tree"`   // host.txt's git tree: clean or modified
	Host   string       `json:"host"`   // host.txt's uname and nproc
	Arms   []ArmFigures `json:"arms"`
}

// ArmFigures are one arm's rows on a path, in the order they ran; a row
// rejected by the run (late, re-run) is left out, its re-run kept.
type ArmFigures struct {
	Arm  string               `json:"arm"`
	Rows []map[string]float64 `json:"rows"`
}

// Arm returns the figures of the arm named, or nil.
func (p PathFigures) Arm(name string) *ArmFigures {
	for i := range p.Arms {
		if p.Arms[i].Arm == name {
			return &p.Arms[i]
		}
	}
	return nil
}

// Path returns the figures of the preset named, or nil.
func (f Figures) Path(preset string) *PathFigures {
	for i := range f.Paths {
		if f.Paths[i].Preset == preset {
			return &f.Paths[i]
		}
	}
	return nil
}

// ErrNoFigures reports an evidence folder that lacks what Figures need.
var ErrNoFigures = errors.New("report: no figures")

// ReadFigures reads the rows of the arms named from the sub-folders of a
// suite's evidence folder named by presets (each a bench run's evidence:
// plan.json, host.txt, rows.json, connections.jsonl). A path whose
// evidence lacks an arm, or has none of its rows standing, is an error.
func ReadFigures(evidence string, presets, arms []string) (Figures, error) {
	f := Figures{Evidence: evidence}
	for _, p := range presets {
		pf, err := readPathFigures(filepath.Join(evidence, p), arms)
		if err != nil {
			return Figures{}, err
		}
		if pf.Preset != p {
			return Figures{}, fmt.Errorf("%w: %s ran preset %q", ErrNoFigures, p, pf.Preset)
		}
		f.Paths = append(f.Paths, pf)
	}
	return f, nil
}

func readPathFigures(dir string, arms []string) (PathFigures, error) {
	var plan struct {
		Preset string `json:"preset"`
		Bytes  int64  `json:"bytes"`
		Start  string `json:"start"`
	}
	if err := readJSON(filepath.Join(dir, "plan.json"), &plan); err != nil {
		return PathFigures{}, err
	}
	var rows []struct {
		Row      int    `json:"row"`
		Rejected string `json:"rejected"`
	}
	if err := readJSON(filepath.Join(dir, "rows.json"), &rows); err != nil {
		return PathFigures{}, err
	}
	rejected := map[int]bool{}
	for _, r := range rows {
		if r.Rejected != "" {
			rejected[r.Row] = true
		}
	}
	host, err := os.ReadFile(filepath.Join(dir, "host.txt"))
	if err != nil {
		return PathFigures{}, fmt.Errorf("%w: %v", ErrNoFigures, err)
	}
	facts := hostFacts(string(host))
	pf := PathFigures{Preset: plan.Preset, Bytes: plan.Bytes, Start: plan.Start,
		Commit: facts["git rev"], Tree: facts["git tree"], Host: facts["uname"] + "; nproc " + facts["nproc"]}
	raw, err := os.ReadFile(filepath.Join(dir, "connections.jsonl"))
	if err != nil {
		return PathFigures{}, fmt.Errorf("%w: %v", ErrNoFigures, err)
	}
	byRow := map[int]*Row{}
	sc := bufio.NewScanner(bytes.NewReader(raw))
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for n := 1; sc.Scan(); n++ {
		var c Conn
		if err := json.Unmarshal(sc.Bytes(), &c); err != nil {
			return PathFigures{}, fmt.Errorf("%w: %s line %d: %v", ErrNoFigures, dir, n, err)
		}
		// control:report-figures-keep-rejected
		if rejected[c.Row] {
			continue
		}
		if byRow[c.Row] == nil {
			byRow[c.Row] = &Row{Arm: c.Arm, ArmRow: c.ArmRow}
		}
		byRow[c.Row].Conns = append(byRow[c.Row].Conns, c)
	}
	if err := sc.Err(); err != nil {
		return PathFigures{}, err
	}
	order := make([]int, 0, len(byRow))
	for k := range byRow {
		order = append(order, k)
	}
	sort.Ints(order)
	for _, arm := range arms {
		af := ArmFigures{Arm: arm}
		for _, k := range order {
			if byRow[k].Arm == arm {
				af.Rows = append(af.Rows, byRow[k].Metrics())
			}
		}
		if len(af.Rows) == 0 {
			return PathFigures{}, fmt.Errorf("%w: %s has no standing row of arm %s", ErrNoFigures, dir, arm)
		}
		pf.Arms = append(pf.Arms, af)
	}
	return pf, nil
}

func readJSON(path string, v any) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("%w: %v", ErrNoFigures, err)
	}
	if err := json.Unmarshal(b, v); err != nil {
		return fmt.Errorf("%w: %s: %v", ErrNoFigures, path, err)
	}
	return nil
}

// hostFacts reads host.txt's "name: value" lines.
func hostFacts(s string) map[string]string {
	m := map[string]string{}
	for _, ln := range strings.Split(s, "\n") {
		if k, v, ok := strings.Cut(ln, ": "); ok {
			m[k] = strings.TrimSpace(v)
		}
	}
	return m
}
