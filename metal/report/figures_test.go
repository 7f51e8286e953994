package report

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// writeEvidence writes a bench run's evidence folder for one path: rows
// of arm K at 1, 2 and 3 MB/s (the 2 MB/s row rejected and re-run at
// 4 MB/s) and one row of arm X.
func writeEvidence(t *testing.T, dir, preset string) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	write := func(name string, b []byte) {
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	plan, _ := json.Marshal(map[string]any{"preset": preset, "bytes": 3_000_000, "start": "2026-12-04T18:20:23Z"})
	write("plan.json", plan)
	write("host.txt", []byte("uname: Linux vm 6.18.44 x86_64\nnproc: 2 (GOMAXPROCS 2)\ngit rev: 1875715c\ngit tree: clean\n"))
	type row struct {
		Row      int    `json:"row"`
		Rejected string `json:"rejected"`
	}
	rows, _ := json.Marshal([]row{{0, ""}, {1, ""}, {2, "late"}, {3, ""}, {4, ""}})
	write("rows.json", rows)
	var jl []byte
	for i, c := range []struct {
		arm  string
		rate float64
	}{{"K", 1}, {"X", 9}, {"K", 2}, {"K", 4}, {"K", 3}} {
		cn := conn(c.arm, c.rate, 2500*time.Millisecond)
		cn.Row = i
		b, _ := json.Marshal(cn)
		jl = append(append(jl, b...), '\n')
	}
	write("connections.jsonl", jl)
}

// TestReadFiguresKeepsTheStandingRowsInOrder reads an arm's rows from
// evidence: in run order, the rejected row left out and its re-run kept,
// each row's figures what the judge reads, with the run's host facts.
func TestReadFiguresKeepsTheStandingRowsInOrder(t *testing.T) {
	root := t.TempDir()
	writeEvidence(t, filepath.Join(root, "p1"), "p1")
	f, err := ReadFigures(root, []string{"p1"}, []string{"K"})
	if err != nil {
		t.Fatal(err)
	}
	p := f.Path("p1")
	if p == nil || p.Bytes != 3_000_000 || p.Start != "2026-12-04T18:20:23Z" || p.Commit != "1875715c" || p.Tree != "clean" ||
		p.Host != "Linux vm 6.18.44 x86_64; nproc 2 (GOMAXPROCS 2)" {
		t.Fatalf("path facts %+v", p)
	}
	k := p.Arm("K")
	if k == nil || p.Arm("X") != nil {
		t.Fatalf("arms %+v, want K alone", p.Arms)
	}
	var got []float64
	for _, r := range k.Rows {
		got = append(got, r["recv_1s"])
	}
	want := []float64{1, 4, 3} // MB by 1 s at 1, 4 (the re-run) and 3 MB/s
	if len(got) != len(want) {
		t.Fatalf("recv_1s of K's rows %v, want about %v", got, want)
	}
	for i := range want {
		if got[i] < want[i] || got[i] > want[i]*1.01 {
			t.Errorf("recv_1s of K's rows %v, want about %v", got, want)
			break
		}
	}
	if _, ok := k.Rows[0]["goodput"]; !ok {
		t.Errorf("row figures %v lack goodput", k.Rows[0])
	}
}

// TestReadFiguresNamesWhatIsMissing refuses evidence without the arm or
// without the path, saying which.
func TestReadFiguresNamesWhatIsMissing(t *testing.T) {
	root := t.TempDir()
	writeEvidence(t, filepath.Join(root, "p1"), "p1")
	for _, c := range []struct{ presets, arms []string }{
		{[]string{"p1"}, []string{"Y"}},
		{[]string{"p2"}, []string{"K"}},
	} {
		if _, err := ReadFigures(root, c.presets, c.arms); !errors.Is(err, ErrNoFigures) {
			t.Errorf("presets %v arms %v: err %v, want ErrNoFigures", c.presets, c.arms, err)
		}
	}
}
