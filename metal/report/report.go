// Package report turns a bench run's connections into its rows, the table
// (text and markdown) of per-arm ranges, the counters that explain each
// arm's ramp, and a plot of received bytes against time.
package report

import (
	"fmt"
	"io"
	"math"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/netramp/netramp/metal/osbench"
)

// Conn is one connection's record in a run's evidence (one JSON line).
type Conn struct {
	Arm      string         `json:"arm"`
	Row      int            `json:"row"`     // position of its row in the run, from 0
	ArmRow   int            `json:"arm_row"` // which row of its arm, from 0
	Conn     int            `json:"conn"`    // which connection of its row, from 0
	Timebase string         `json:"timebase"`
	Path     string         `json:"path"`
	Report   osbench.Report `json:"report"`
	// Counters are the sending and receiving stacks' counters over this
	// connection (a difference of snapshots), where the arm has them.
	Counters map[string]uint64 `json:"counters,omitempty"`
	Wall     time.Duration     `json:"wall_ns"` // real time the connection took to run
}

// Row is one row of the run: an arm's connections, or why it has none.
type Row struct {
	Arm         string
	ArmRow      int
	Timebase    string
	Path        string
	Conns       []Conn
	Unavailable string // the arm cannot run on this host, and why
	Err         string // the row failed
	// Note is what the runner observed about the row (e.g. its real-time
	// emulator's timer lateness); Rejected, if set, is why the judge must
	// not use the row, though the table shows it.
	Note     string
	Rejected string
	// RerunAs, on a row rejected for lateness under a rule file that
	// re-runs such rows, is the row (from 1) that re-ran it at once and
	// stands in for it; RerunOf, on that re-run, is the row it re-ran.
	RerunAs, RerunOf int `json:",omitempty"`
	// Lateness, for a row on a real-time emulated path, is how late the
	// emulator handed frames over; nil for other rows.
	Lateness *Lateness `json:",omitempty"`
}

// Lateness is a real-time emulator's lateness over one row: frames handed
// over, and the median, 99th percentile and maximum of how late they were;
// and the receivers' input lag over the same row: frames taken in, and how
// long each took from the emulator's handover to the end of its delivery to
// the stack or the kernel.
type Lateness struct {
	Frames        uint64
	P50, P99, Max time.Duration

	LagFrames              uint64
	LagP50, LagP99, LagMax time.Duration
}

// Goodput is the row's median connection goodput, MB/s.
func (r Row) Goodput() float64 {
	v := make([]float64, 0, len(r.Conns))
	for _, c := range r.Conns {
		v = append(v, c.Report.GoodputMBps)
	}
	return Median(v)
}

// Recv is the row's mean bytes received by d after the first payload byte,
// in MB, and whether every connection ran at least that long (a mark past the
// last byte holds everything, which is no ramp figure).
func (r Row) Recv(d time.Duration) (mb float64, measured bool) {
	if len(r.Conns) == 0 {
		return 0, false
	}
	measured = true
	sum := 0.0
	for _, c := range r.Conns {
		v, ok := c.Report.MarkAt(d)
		if !ok {
			return 0, false
		}
		if c.Report.Duration < d {
			measured = false
		}
		sum += float64(v)
	}
	// control:metal-table-mib
	return sum / float64(len(r.Conns)) / 1e6, measured
}

// Counter is the row's total of one counter over its connections, and
// whether any connection had it.
func (r Row) Counter(name string) (uint64, bool) {
	var s uint64
	have := false
	for _, c := range r.Conns {
		if v, ok := c.Counters[name]; ok {
			s += v
			have = true
		}
	}
	return s, have
}

// Metrics returns the row's figures by the judge's metric names; a mark a
// connection did not reach is left out.
func (r Row) Metrics() map[string]float64 {
	m := map[string]float64{}
	if len(r.Conns) == 0 {
		return m
	}
	m["goodput"] = r.Goodput()
	for i, d := range osbench.DefaultMarks {
		if v, ok := r.Recv(d); ok {
			m[MarkMetrics[i]] = v
		}
	}
	if v, ok := r.Retransmitted(); ok {
		m["retrans"] = v
	}
	return m
}

// Retransmitted is the row's mean bytes retransmitted per connection
// (tcp.retransmitted.bytes), and whether every connection counted them:
// gVisor's rows, and a kernel's before 4.19, count retransmitted segments only.
func (r Row) Retransmitted() (float64, bool) {
	if len(r.Conns) == 0 {
		return 0, false
	}
	sum := 0.0
	for _, c := range r.Conns {
		v, ok := c.Counters["tcp.retransmitted.bytes"]
		if !ok {
			return 0, false
		}
		sum += float64(v)
	}
	return sum / float64(len(r.Conns)), true
}

// MarkMetrics names the metrics of osbench.DefaultMarks, in order.
var MarkMetrics = []string{"recv_100ms", "recv_300ms", "recv_1s", "recv_2s"}

// Median of v (0 for none).
func Median(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	s := append([]float64(nil), v...)
	sort.Float64s(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// Num prints a figure with about three significant digits, as the tables do.
func Num(x float64) string {
	a := math.Abs(x)
	switch {
	case a >= 100:
		return strconv.FormatFloat(x, 'f', 0, 64)
	case a >= 10:
		return strconv.FormatFloat(x, 'f', 1, 64)
	case a >= 1:
		return strconv.FormatFloat(x, 'f', 2, 64)
	}
	return strconv.FormatFloat(x, 'f', 3, 64)
}

func span(v []float64) string {
	lo, hi := v[0], v[0]
	for _, x := range v {
		lo, hi = math.Min(lo, x), math.Max(hi, x)
	}
	if Num(lo) == Num(hi) {
		return Num(lo)
	}
	return Num(lo) + "–" + Num(hi)
}

// ArmOrder returns the arms in order of first appearance.
func ArmOrder(rows []Row) []string {
	var out []string
	seen := map[string]bool{}
	for _, r := range rows {
		if !seen[r.Arm] {
			seen[r.Arm] = true
			out = append(out, r.Arm)
		}
	}
	return out
}

// TableLine is one arm's line of the ramp table, as cells.
type TableLine struct {
	Arm      string
	Rows     int
	Timebase string
	Cells    []string // goodput per row, then one range per mark
}

// Header is the ramp table's header for a direction.
func Header(dir osbench.Direction) []string {
	return []string{"arm (rows)", "time", string(dir) + " p50, MB/s", "received by 100 ms", "300 ms", "1 s", "2 s"}
}

// Lines computes the ramp table: per arm, each row's goodput (in run order)
// and the range over rows of each mark.
func Lines(rows []Row) []TableLine {
	var out []TableLine
	for _, arm := range ArmOrder(rows) {
		var ok []Row
		var why []string
		tb := map[string]bool{}
		for _, r := range rows {
			if r.Arm != arm {
				continue
			}
			if len(r.Conns) == 0 {
				switch {
				case r.Unavailable != "":
					why = append(why, "unavailable: "+r.Unavailable)
				case r.Err != "":
					why = append(why, "failed: "+r.Err)
				}
				continue
			}
			ok = append(ok, r)
			tb[r.Timebase] = true
		}
		l := TableLine{Arm: arm, Rows: len(ok)}
		var tbs []string
		for k := range tb {
			tbs = append(tbs, k)
		}
		sort.Strings(tbs)
		l.Timebase = strings.Join(tbs, "+")
		if len(ok) == 0 {
			l.Timebase = "-"
			msg := "did not run"
			if len(why) > 0 {
				msg = dedupe(why)
			}
			l.Cells = []string{msg}
			out = append(out, l)
			continue
		}
		var g []string
		for _, r := range ok {
			g = append(g, Num(r.Goodput()))
		}
		l.Cells = append(l.Cells, strings.Join(g, ", "))
		for _, d := range osbench.DefaultMarks {
			var v []float64
			short := false
			for _, r := range ok {
				x, measured := r.Recv(d)
				v = append(v, x)
				short = short || !measured
			}
			c := span(v) + " MB"
			if short {
				c += " (ended)"
			}
			l.Cells = append(l.Cells, c)
		}
		out = append(out, l)
	}
	return out
}

func dedupe(s []string) string {
	seen := map[string]bool{}
	var out []string
	for _, x := range s {
		if !seen[x] {
			seen[x] = true
			out = append(out, x)
		}
	}
	return strings.Join(out, "; ")
}

// WriteText writes the ramp table with columns separated by at least two
// spaces (cells hold no double space), so it reads and parses back.
func WriteText(w io.Writer, dir osbench.Direction, rows []Row) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, strings.Join(Header(dir), "\t"))
	for _, l := range Lines(rows) {
		fmt.Fprintf(tw, "%s (%d)\t%s\t%s\n", l.Arm, l.Rows, l.Timebase, strings.Join(l.Cells, "\t"))
	}
	return tw.Flush()
}

// WriteMarkdown writes the ramp table as a markdown table.
func WriteMarkdown(w io.Writer, dir osbench.Direction, rows []Row) error {
	h := Header(dir)
	fmt.Fprintf(w, "| %s |\n|%s\n", strings.Join(h, " | "), strings.Repeat("---|", len(h)))
	for _, l := range Lines(rows) {
		if _, err := fmt.Fprintf(w, "| %s (%d) | %s | %s |\n", l.Arm, l.Rows, l.Timebase, strings.Join(l.Cells, " | ")); err != nil {
			return err
		}
	}
	return nil
}

// CounterColumns are the counters that explain a ramp: HyStart++'s slow
// start and exit, and every sign of loss.
var CounterColumns = []struct{ Head, Name string }{
	{"css", "tcp.hystart.css"},
	{"css.entry-rounds", "tcp.hystart.css.entry-rounds"},
	{"resumed", "tcp.hystart.resumed"},
	{"exits", "tcp.hystart.exits"},
	{"exit.cwnd.bytes", "tcp.hystart.exit.cwnd.bytes"},
	{"retransmitted bytes", "tcp.retransmitted.bytes"},
	{"RTOs", "tcp.rto"},
	{"recoveries", "tcp.recoveries"},
	{"loss probes", "tcp.loss-probes"},
}

// CounterLines returns, per arm, each counter as a range over rows of the
// row totals ("-" where the arm does not count it).
func CounterLines(rows []Row) [][]string {
	var out [][]string
	for _, arm := range ArmOrder(rows) {
		line := []string{arm}
		any := false
		for _, col := range CounterColumns {
			var v []float64
			for _, r := range rows {
				if r.Arm != arm || len(r.Conns) == 0 {
					continue
				}
				if x, ok := r.Counter(col.Name); ok {
					v = append(v, float64(x))
				}
			}
			if len(v) == 0 {
				line = append(line, "-")
				continue
			}
			any = true
			line = append(line, intSpan(v))
		}
		if any {
			out = append(out, line)
		}
	}
	return out
}

func intSpan(v []float64) string {
	lo, hi := v[0], v[0]
	for _, x := range v {
		lo, hi = math.Min(lo, x), math.Max(hi, x)
	}
	if lo == hi {
		return strconv.FormatFloat(lo, 'f', 0, 64)
	}
	return strconv.FormatFloat(lo, 'f', 0, 64) + "–" + strconv.FormatFloat(hi, 'f', 0, 64)
}

// WriteCounters writes the counters table (per row totals, ranges over
// rows), text or markdown; nothing when no arm has counters.
func WriteCounters(w io.Writer, rows []Row, markdown bool) error {
	lines := CounterLines(rows)
	if len(lines) == 0 {
		return nil
	}
	head := []string{"counters per row"}
	for _, c := range CounterColumns {
		head = append(head, c.Head)
	}
	if markdown {
		fmt.Fprintf(w, "| %s |\n|%s\n", strings.Join(head, " | "), strings.Repeat("---|", len(head)))
		for _, l := range lines {
			fmt.Fprintf(w, "| %s |\n", strings.Join(l, " | "))
		}
		return nil
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, strings.Join(head, "\t"))
	for _, l := range lines {
		fmt.Fprintln(tw, strings.Join(l, "\t"))
	}
	return tw.Flush()
}

// ParsedLine is one arm's line read back from a text table.
type ParsedLine struct {
	Arm      string
	Rows     int
	Timebase string
	Goodput  []float64    // per row, in run order
	Marks    [][2]float64 // per mark, the range lo, hi in MB
}

// ParseText reads a ramp table written by WriteText (arms that did not run
// are skipped). It exists so tests can hold a printed table against the raw
// records.
func ParseText(text string) ([]ParsedLine, error) {
	var out []ParsedLine
	lines := strings.Split(strings.TrimRight(text, "\n"), "\n")
	if len(lines) == 0 || !strings.HasPrefix(lines[0], "arm (rows)") {
		return nil, fmt.Errorf("report: no table header")
	}
	for _, ln := range lines[1:] {
		cells := splitCells(ln)
		if len(cells) < 3 {
			return nil, fmt.Errorf("report: line %q has %d cells", ln, len(cells))
		}
		var p ParsedLine
		open := strings.LastIndex(cells[0], " (")
		if open < 0 || !strings.HasSuffix(cells[0], ")") {
			return nil, fmt.Errorf("report: arm cell %q", cells[0])
		}
		p.Arm = cells[0][:open]
		n, err := strconv.Atoi(cells[0][open+2 : len(cells[0])-1])
		if err != nil {
			return nil, fmt.Errorf("report: arm cell %q: %v", cells[0], err)
		}
		p.Rows, p.Timebase = n, cells[1]
		if n == 0 {
			continue
		}
		if len(cells) != 3+len(osbench.DefaultMarks) {
			return nil, fmt.Errorf("report: line %q has %d cells", ln, len(cells))
		}
		for _, g := range strings.Split(cells[2], ", ") {
			x, err := strconv.ParseFloat(g, 64)
			if err != nil {
				return nil, fmt.Errorf("report: goodput %q: %v", g, err)
			}
			p.Goodput = append(p.Goodput, x)
		}
		for _, c := range cells[3:] {
			c = strings.TrimSuffix(strings.TrimSuffix(c, " (ended)"), " MB")
			lo, hi, found := strings.Cut(c, "–")
			if !found {
				hi = lo
			}
			a, err1 := strconv.ParseFloat(lo, 64)
			b, err2 := strconv.ParseFloat(hi, 64)
			if err1 != nil || err2 != nil {
				return nil, fmt.Errorf("report: range %q", c)
			}
			p.Marks = append(p.Marks, [2]float64{a, b})
		}
		out = append(out, p)
	}
	return out, nil
}

func splitCells(ln string) []string {
	var out []string
	for _, c := range strings.Split(ln, "  ") {
		if c = strings.TrimSpace(c); c != "" {
			out = append(out, c)
		}
	}
	return out
}
