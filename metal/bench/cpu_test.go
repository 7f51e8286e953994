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
	defer func(f func(context.Context, int64, uint32, bool, Offload, Sink) (CPUResult, error)) { transfer = f }(transfer)
	var order []string
	var sizes []int64
	var labels []string
	transfer = func(ctx context.Context, n int64, mtu uint32, gv bool, link Offload, sink Sink) (CPUResult, error) {
		name := "netramp"
		if gv {
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
	defer func(f func(context.Context, int64, uint32, bool, Offload, Sink) (CPUResult, error)) { transfer = f }(transfer)
	var sinks []Sink
	transfer = func(ctx context.Context, n int64, mtu uint32, gv bool, link Offload, sink Sink) (CPUResult, error) {
		sinks = append(sinks, sink)
		return CPUResult{MTU: mtu, Link: link, Bytes: n, Wall: time.Second, CPU: time.Millisecond, Packets: 1}, nil
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
