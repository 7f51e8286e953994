package bench

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/netramp/netramp/metal/judge"
	"github.com/netramp/netramp/nic/wire"
)

// TestParitySuiteRunsEveryArmInRealTime: the parity suite's paths are
// presets, its rows interleave Linux cubic, Linux bbr, A, B and P three
// times, every arm it defines runs in real time, and its rules parse.
func TestParitySuiteRunsEveryArmInRealTime(t *testing.T) {
	s := ParitySuite()
	for _, p := range s.Paths {
		if _, err := wire.Preset(p.Preset); err != nil || p.Bytes <= 0 {
			t.Errorf("path %+v: %v", p, err)
		}
	}
	if got := strings.Join(s.Order, " "); got != strings.Repeat("Linux-cubic Linux-bbr A B P ", 3)[:len(got)] || len(s.Order) != 15 {
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
