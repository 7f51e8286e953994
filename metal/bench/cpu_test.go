package bench

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"runtime/pprof"
	"slices"
	"strings"
	"testing"
	"time"
)

// The CPU benchmark asserts nothing about speed; this checks that it carries
// every byte for both TCPs at both MTUs over each kind of link, and prints
// the ratio lines.
func TestCPUCarriesEveryByteForBothTCPsAndPrintsRatios(t *testing.T) {
	rs, err := CPU(context.Background(), CPUConfig{Bytes: 4_000_000, MTUs: []uint32{1500, 9000}})
	if err != nil {
		t.Fatal(err)
	}
	if len(rs) != 24 {
		t.Fatalf("%d results, want 24 (two TCPs, two MTUs, three links, one and two cores)", len(rs))
	}
	for _, r := range rs {
		if r.Bytes != 4_000_000 || r.MBps <= 0 || r.Allocs == 0 || len(r.RoundCPU) != 4 {
			t.Errorf("%+v", r)
		}
	}
	var b bytes.Buffer
	WriteCPU(&b, rs)
	ratios, tsoRatios, groRatios := 0, 0, 0
	for _, line := range strings.Split(b.String(), "\n") {
		if strings.Contains(line, "netramp/gVisor") {
			ratios++
			if strings.Contains(line, "+TSO+GRO") {
				groRatios++
			} else if strings.Contains(line, "+TSO") {
				tsoRatios++
			}
		}
	}
	if ratios != 12 || tsoRatios != 4 || groRatios != 4 {
		t.Fatalf("ratio or TSO lines missing:\n%s", b.String())
	}
	if n := strings.Count(b.String(), "CPU by round (ABBA), netramp over gVisor: "); n != 12 {
		t.Fatalf("%d lines of ratios by round, want 12:\n%s", n, b.String())
	}
}

// The TCPs take turns in ABBA order, each round carrying its share of the
// bytes, and the row sums the rounds.
func TestCPURoundsTakeTurnsAndSum(t *testing.T) {
	defer func(f func(context.Context, transferSpec) (CPUResult, error)) { transfer = f }(transfer)
	var order []string
	var sizes []int64
	var labels []string
	transfer = func(ctx context.Context, sp transferSpec) (CPUResult, error) {
		n, mtu, link := sp.Bytes, sp.MTU, sp.Link
		name := "netramp"
		if sp.GVisor {
			name = "gVisor"
		}
		if l, _ := pprof.Label(ctx, "tcp"); l != name {
			labels = append(labels, fmt.Sprintf("%s's transfer under tcp=%q", name, l))
		}
		order = append(order, name)
		sizes = append(sizes, n)
		cpu := time.Duration(len(order)) * time.Millisecond
		return CPUResult{TCP: name, MTU: mtu, Link: link, Bytes: n, Wall: time.Second, CPU: cpu, Allocs: 1, Packets: 2}, nil
	}
	rs, err := CPU(context.Background(), CPUConfig{Bytes: 10_000_001, MTUs: []uint32{1500}, Procs: []int{1}, Links: []Offload{NoOffload}})
	if err != nil {
		t.Fatal(err)
	}
	// Each transfer, warm-up included, runs under its TCP's profiler label.
	if len(labels) > 0 {
		t.Fatalf("mislabelled: %v", labels)
	}
	// One warm-up transfer of each, unmeasured, then the rounds.
	if want := []string{"netramp", "gVisor", "netramp", "gVisor", "gVisor", "netramp", "netramp", "gVisor", "gVisor", "netramp"}; !slices.Equal(order, want) {
		t.Fatalf("order %v, want %v", order, want)
	}
	if want := []int64{2_500_000, 2_500_000, 2_500_000, 2_500_000, 2_500_000, 2_500_000, 2_500_000, 2_500_000, 2_500_001, 2_500_001}; !slices.Equal(sizes, want) {
		t.Fatalf("sizes %v, want %v", sizes, want)
	}
	if len(rs) != 2 || rs[0].TCP != "netramp" || rs[1].TCP != "gVisor" {
		t.Fatalf("%+v, want netramp's row then gVisor's", rs)
	}
	ms := time.Millisecond
	if a := rs[0]; a.Bytes != 10_000_001 || a.Wall != 4*time.Second || a.CPU != (3+6+7+10)*ms || a.Allocs != 4 || a.Packets != 8 ||
		!slices.Equal(a.RoundCPU, []time.Duration{3 * ms, 6 * ms, 7 * ms, 10 * ms}) {
		t.Fatalf("netramp's row %+v does not sum its rounds", a)
	}
	var b bytes.Buffer
	WriteCPU(&b, rs)
	if !strings.Contains(b.String(), "CPU by round (ABBA), netramp over gVisor: 0.75x 1.20x 0.88x 1.11x") {
		t.Fatalf("round ratios missing:\n%s", b.String())
	}
}

// Every option is checked before anything runs, the error naming it.
func TestCPURefusesBadRounds(t *testing.T) {
	for _, c := range []struct {
		cfg   CPUConfig
		field string
	}{
		{CPUConfig{Bytes: 8_000_000, MTUs: []uint32{1500}, Rounds: -1}, "Rounds"},
		{CPUConfig{Bytes: 3_000_000, MTUs: []uint32{1500}}, "Bytes"},
		{CPUConfig{Bytes: 3_000_000, MTUs: []uint32{1500}, Rounds: 4}, "Bytes"},
		{CPUConfig{Bytes: 8_000_000, MTUs: []uint32{1500}, Sink: 7}, "Sink"},
		{CPUConfig{Bytes: 8_000_000, MTUs: []uint32{1500}, Conns: []int{100, 0}}, "Conns"},
		{CPUConfig{Bytes: 8_000_000, MTUs: []uint32{1500}, Conns: []int{-3}}, "Conns"},
		{CPUConfig{Bytes: 8_000_000, MTUs: []uint32{1500}, Conns: []int{MaxCPUConns + 1}}, "Conns"},
	} {
		_, err := CPU(context.Background(), c.cfg)
		if err == nil || !strings.Contains(err.Error(), c.field) {
			t.Errorf("%+v: error %v, want one naming %s", c.cfg, err, c.field)
		}
	}
}

// TCPs selects the stacks, so a profile can hold one stack's transfers; an
// unknown name is refused before anything runs.
func TestCPURunsOnlyTheSelectedTCP(t *testing.T) {
	rs, err := CPU(context.Background(), CPUConfig{Bytes: 2_000_000, MTUs: []uint32{1500}, Procs: []int{1}, TCPs: []string{"gVisor"}, Links: []Offload{NoOffload}, Rounds: 2})
	if err != nil {
		t.Fatal(err)
	}
	if len(rs) != 1 || rs[0].TCP != "gVisor" || rs[0].Packets == 0 || len(rs[0].RoundCPU) != 2 {
		t.Fatalf("%+v, want one gVisor row with its packets counted", rs)
	}
	if _, err := CPU(context.Background(), CPUConfig{Bytes: 2_000_000, MTUs: []uint32{1500}, TCPs: []string{"linux"}}); err == nil {
		t.Fatal("an unknown TCP ran")
	}
}

// sinkConn is a connection whose reader can be read or can write itself
// out (io.WriterTo), recording which the sink used.
type sinkConn struct {
	net.Conn
	r       io.Reader
	writeTo bool
	reads   int
}

func (c *sinkConn) Read(b []byte) (int, error) { c.reads++; return c.r.Read(b) }

func (c *sinkConn) WriteTo(w io.Writer) (int64, error) {
	c.writeTo = true
	return io.Copy(w, c.r)
}

// The copy sink is io.Copy, which takes a conn's WriteTo; the read sink
// reads, whatever the conn offers, and both count every byte.
func TestDrainReadsAsTheSinkSays(t *testing.T) {
	for _, sink := range []Sink{SinkCopy, SinkRead} {
		c := &sinkConn{r: bytes.NewReader(make([]byte, 100_000))}
		n, err := drain(c, sink)
		if err != nil || n != 100_000 {
			t.Fatalf("sink %d: drained %d, %v; want 100000 bytes", sink, n, err)
		}
		if wantWriteTo := sink == SinkCopy; c.writeTo != wantWriteTo || (c.reads > 0) == wantWriteTo {
			t.Fatalf("sink %d: WriteTo used %v, %d Reads", sink, c.writeTo, c.reads)
		}
	}
	if _, err := ParseSink("splice"); err == nil || !strings.Contains(err.Error(), "splice") {
		t.Fatalf("ParseSink(splice): %v", err)
	}
}

// The configured sink reaches every transfer, the warm-up's included.
func TestCPUPassesTheSinkToEveryTransfer(t *testing.T) {
	defer func(f func(context.Context, transferSpec) (CPUResult, error)) { transfer = f }(transfer)
	var sinks []Sink
	transfer = func(ctx context.Context, sp transferSpec) (CPUResult, error) {
		sinks = append(sinks, sp.Sink)
		return CPUResult{MTU: sp.MTU, Link: sp.Link, Bytes: sp.Bytes, Wall: time.Second, CPU: time.Millisecond, Packets: 1}, nil
	}
	if _, err := CPU(context.Background(), CPUConfig{Bytes: 2_000_000, MTUs: []uint32{1500}, Procs: []int{1}, Links: []Offload{NoOffload}, Rounds: 2, Sink: SinkRead}); err != nil {
		t.Fatal(err)
	}
	if len(sinks) != 6 {
		t.Fatalf("%d transfers, want 6 (a warm-up and two rounds of each TCP)", len(sinks))
	}
	for i, s := range sinks {
		if s != SinkRead {
			t.Fatalf("transfer %d read with sink %d, want SinkRead", i, s)
		}
	}
}

// A row over N connections carries every byte of each round over N
// connections at once, each its own share (the transfer checks the sinks'
// counts against the shares), for both TCPs, and keeps every connection's
// completion time and the heap of all of them open (one connection's is
// within the heap's noise).
func TestCPUCarriesEveryByteOverEveryConnection(t *testing.T) {
	const total = 2_000_003 // rounds of 1_000_001 and 1_000_002: neither divides by 300
	conns := []int{1, 300}
	rs, err := CPU(context.Background(), CPUConfig{Bytes: total, MTUs: []uint32{1500}, Procs: []int{1}, Links: []Offload{NoOffload}, Rounds: 2, Conns: conns})
	if err != nil {
		t.Fatal(err)
	}
	if len(rs) != 4 {
		t.Fatalf("%d results, want 4 (two TCPs at 1 and 300 connections)", len(rs))
	}
	for i, r := range rs {
		n := conns[i/2]
		if r.TCP != cpuTCPs[i%2] || r.Conns != n || r.Bytes != total || len(r.RoundCPU) != 2 {
			t.Errorf("row %d: %s over %d conns, %d bytes, %d rounds; want %s over %d conns, %d bytes, 2 rounds", i, r.TCP, r.Conns, r.Bytes, len(r.RoundCPU), cpuTCPs[i%2], n, total)
		}
		if len(r.Done) != 2*n || r.Ends != 4*n || n > 1 && r.HeapPerEnd <= 0 || r.P50 <= 0 || r.P99 < r.P50 {
			t.Errorf("%s over %d conns: %d completion times, %d ends, %.0f B/end, p50 %v, p99 %v; want %d times and %d ends", r.TCP, n, len(r.Done), r.Ends, r.HeapPerEnd, r.P50, r.P99, 2*n, 4*n)
		}
	}
	var b bytes.Buffer
	WriteCPU(&b, rs)
	for _, want := range []string{"1 conn(s), CPU by round (ABBA)", "300 conn(s), CPU by round (ABBA)", "netramp CPU per GB over its own at 1 conn(s): 300 conns ", "gVisor CPU per GB over its own at 1 conn(s): 300 conns "} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("no %q in:\n%s", want, b.String())
		}
	}
}

// A row over N connections is its rounds': completion times of every
// round's connections, their percentiles over all of them, heap per end
// over every round's ends; the ratio lines are the rows'.
func TestCPUConnsRowsComeFromTheRounds(t *testing.T) {
	defer func(f func(context.Context, transferSpec) (CPUResult, error)) { transfer = f }(transfer)
	calls := map[int]int{} // transfers by connection count
	transfer = func(ctx context.Context, sp transferSpec) (CPUResult, error) {
		calls[sp.Conns]++
		k := calls[sp.Conns] // 1, 2 warm-ups; 3..6 the rounds (netramp, gVisor, gVisor, netramp)
		done := make([]time.Duration, sp.Conns)
		for i := range done {
			// Round r's connections end at r*100+1 .. r*100+N ms: gVisor's
			// rounds (4, 5) late, ours (3, 6) early and late.
			done[i] = time.Duration(k*100+i+1) * time.Millisecond
		}
		name := "netramp"
		cpu := time.Duration(sp.Conns) * time.Millisecond // ours costs N ms a round
		if sp.GVisor {
			name, cpu = "gVisor", 2*time.Duration(sp.Conns)*time.Millisecond
		}
		return CPUResult{TCP: name, MTU: sp.MTU, Link: sp.Link, Conns: sp.Conns, Bytes: sp.Bytes, Wall: time.Second, CPU: cpu,
			HeapBytes: uint64(k) * 1024 * uint64(sp.Conns), Ends: 2 * sp.Conns, Done: done}, nil
	}
	rs, err := CPU(context.Background(), CPUConfig{Bytes: 2_000_000, MTUs: []uint32{1500}, Procs: []int{1}, Links: []Offload{NoOffload}, Rounds: 2, Conns: []int{10, 100}})
	if err != nil {
		t.Fatal(err)
	}
	if len(rs) != 4 || calls[10] != 6 || calls[100] != 6 {
		t.Fatalf("%d rows, transfers by conns %v; want 4 rows and 6 transfers (2 warm-ups, 2 rounds of each TCP) at each count", len(rs), calls)
	}
	ms := time.Millisecond
	for _, c := range []struct {
		row      int
		tcp      string
		conns    int
		p50, p99 time.Duration
		perEnd   float64
	}{
		// Ours at 10: rounds 3 (301..310 ms) and 6 (601..610): p50 the
		// 10th of 20, p99 the 20th; heap (3+6) KiB*10 over 40 ends.
		{0, "netramp", 10, 310 * ms, 610 * ms, 9 * 1024 * 10 / 40.0},
		// gVisor's at 10: rounds 4 and 5.
		{1, "gVisor", 10, 410 * ms, 510 * ms, 9 * 1024 * 10 / 40.0},
		// Ours at 100: 200 times, p50 the 100th (400 ms), p99 the 198th
		// (600+98 ms).
		{2, "netramp", 100, 400 * ms, 698 * ms, 9 * 1024 * 100 / 400.0},
	} {
		r := rs[c.row]
		if r.TCP != c.tcp || r.Conns != c.conns || len(r.Done) != 2*c.conns || r.P50 != c.p50 || r.P99 != c.p99 || r.HeapPerEnd != c.perEnd {
			t.Errorf("row %d: %s over %d, %d times, p50 %v, p99 %v, %.1f B/end; want %s over %d, %d times, p50 %v, p99 %v, %.1f B/end",
				c.row, r.TCP, r.Conns, len(r.Done), r.P50, r.P99, r.HeapPerEnd, c.tcp, c.conns, 2*c.conns, c.p50, c.p99, c.perEnd)
		}
	}
	var b bytes.Buffer
	WriteCPU(&b, rs)
	// Ours costs half of gVisor's at each count, and ten times its own at
	// ten connections with a hundred (N ms a round for N connections).
	for _, want := range []string{
		"netramp CPU per GB over its own at 10 conn(s): 100 conns 10.00x",
		"gVisor CPU per GB over its own at 10 conn(s): 100 conns 10.00x",
		"1 core(s), MTU 1500, 100 conn(s), CPU by round (ABBA), netramp over gVisor: 0.50x 0.50x",
	} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("no %q in:\n%s", want, b.String())
		}
	}
	ratios := 0
	for _, line := range strings.Split(b.String(), "\n") {
		if f := strings.Fields(line); len(f) > 4 && f[3] == "netramp/gVisor" {
			ratios++
			// MB/s, CPU, allocs, packets, RTOs, heap, open, p50, p99
			if f[5] != "0.50x" || f[9] != "1.00x" {
				t.Errorf("ratio line %q: want CPU 0.50x, heap 1.00x", line)
			}
		}
	}
	if ratios != 2 {
		t.Fatalf("%d ratio lines, want 2:\n%s", ratios, b.String())
	}
}

// The percentiles are by nearest rank: the smallest value that p percent
// of all are at or below.
func TestPercentileIsNearestRank(t *testing.T) {
	seq := func(n int) []time.Duration {
		ds := make([]time.Duration, n)
		for i := range ds {
			ds[i] = time.Duration(n - i) // descending: percentile sorts
		}
		return ds
	}
	for _, c := range []struct {
		ds   []time.Duration
		p    int
		want time.Duration
	}{
		{nil, 99, 0},
		{seq(1), 50, 1},
		{seq(1), 99, 1},
		{seq(2), 50, 1},
		{seq(10), 50, 5},
		{seq(10), 99, 10}, // 9.9 rounds up to the 10th
		{seq(100), 50, 50},
		{seq(100), 99, 99},
		{seq(1000), 99, 990},
		{seq(10001), 99, 9901}, // 9900.99 rounds up
	} {
		if got := percentile(c.ds, c.p); got != c.want {
			t.Errorf("p%d of %d values: %v, want %v", c.p, len(c.ds), got, c.want)
		}
	}
}

// The shares of a round's bytes sum to them, none more than one apart.
func TestSharesSplitEveryByte(t *testing.T) {
	for _, c := range []struct {
		n     int64
		conns int
	}{{1_000_000, 1}, {1_000_001, 300}, {999, 1000}, {10_000_000, 10_000}} {
		s := shares(c.n, c.conns)
		var sum int64
		for _, v := range s {
			sum += v
		}
		if len(s) != c.conns || sum != c.n || slices.Max(s)-slices.Min(s) > 1 {
			t.Errorf("shares(%d, %d): %d shares summing to %d, %d to %d", c.n, c.conns, len(s), sum, slices.Min(s), slices.Max(s))
		}
	}
}
