package report

import (
	"bytes"
	"image/png"
	"os"
	"path/filepath"
	"regexp"
	"testing"
	"time"

	"github.com/netramp/netramp/metal/osbench"
)

// conn builds a connection that received rate MB/s from its first byte for d.
func conn(arm string, rate float64, d time.Duration) Conn {
	m := osbench.NewMeter(time.Unix(0, 0))
	start := time.Unix(0, 0)
	for t := time.Duration(0); t <= d; t += time.Millisecond {
		m.Add(start.Add(t), int(rate*1e3))
	}
	return Conn{Arm: arm, Timebase: "virtual", Report: m.Report(start.Add(d), osbench.Upload, 0)}
}

func sampleRows() []Row {
	mk := func(arm string, rate float64, d time.Duration) Row {
		return Row{Arm: arm, Timebase: "virtual", Conns: []Conn{conn(arm, rate, d), conn(arm, rate*1.02, d)}}
	}
	return []Row{
		{Arm: "Linux", Unavailable: "needs root"},
		mk("A", 80, 2100*time.Millisecond),
		mk("B", 110, 2100*time.Millisecond),
		mk("A", 81, 2100*time.Millisecond),
		mk("B", 111, 2100*time.Millisecond),
		{Arm: "Linux", Unavailable: "needs root"},
	}
}

func TestTextTableParsesBackToTheRowsFigures(t *testing.T) {
	rows := sampleRows()
	var b bytes.Buffer
	if err := WriteText(&b, osbench.Upload, rows); err != nil {
		t.Fatal(err)
	}
	if !regexp.MustCompile(`(?m)^Linux \(0\) +- +unavailable: needs root$`).MatchString(b.String()) {
		t.Errorf("the unavailable arm is not shown with its reason:\n%s", b.String())
	}
	got, err := ParseText(b.String())
	if err != nil {
		t.Fatalf("%v\n%s", err, b.String())
	}
	if len(got) != 2 || got[0].Arm != "A" || got[1].Arm != "B" || got[0].Rows != 2 {
		t.Fatalf("parsed %+v", got)
	}
	// B's second row: 111 and 113.22 MB/s -> median 112.1 (printed 112).
	if g := got[1].Goodput; len(g) != 2 || g[1] != 112 {
		t.Errorf("B goodput %v", g)
	}
	// A's 1 s mark: 1001 reads of rate·1 ms; row 1 means 80.08 and 81.68 MB,
	// row 2 81.081 and 82.70 MB.
	lo, hi := got[0].Marks[2][0], got[0].Marks[2][1]
	if lo != 80.9 || hi != 81.9 {
		t.Errorf("A received by 1 s %v–%v, want 80.9–81.9\n%s", lo, hi, b.String())
	}
}

func TestPlotWritesPNGAndSVG(t *testing.T) {
	dir := t.TempDir()
	pngPath, svgPath := filepath.Join(dir, "ramp.png"), filepath.Join(dir, "ramp.svg")
	if err := Plot(sampleRows(), "test", 0, pngPath, svgPath); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(pngPath)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil || img.Bounds().Dx() < 100 {
		t.Fatalf("png: %v", err)
	}
	svg, err := os.ReadFile(svgPath)
	if err != nil || !bytes.Contains(svg, []byte("<svg")) {
		t.Fatalf("svg: %v", err)
	}
}

// TestRetransmittedIsTheMeanOfConnectionsThatAllCountIt: the retrans metric
// is the row's mean retransmitted bytes per connection, and absent when any
// connection did not count them (the kernel's rows count segments).
func TestRetransmittedIsTheMeanOfConnectionsThatAllCountIt(t *testing.T) {
	c := func(n uint64, counted bool) Conn {
		k := conn("B", 10, 100*time.Millisecond)
		k.Counters = map[string]uint64{"tcp.rto": 1}
		if counted {
			k.Counters["tcp.retransmitted.bytes"] = n
		}
		return k
	}
	r := Row{Arm: "B", Conns: []Conn{c(1000, true), c(4000, true)}}
	if v, ok := r.Metrics()["retrans"]; !ok || v != 2500 {
		t.Errorf("retrans = %v, %v; want 2500 (the mean)", v, ok)
	}
	r.Conns = append(r.Conns, c(0, false))
	if v, ok := r.Metrics()["retrans"]; ok {
		t.Errorf("a connection without the counter, yet retrans = %v", v)
	}
}
