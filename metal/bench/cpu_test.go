package bench

import (
	"bytes"
	"context"
	"strings"
	"testing"
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
		if r.Bytes != 4_000_000 || r.MBps <= 0 || r.Allocs == 0 {
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
}

// TCPs selects the stacks, so a profile can hold one stack's transfers; an
// unknown name is refused before anything runs.
func TestCPURunsOnlyTheSelectedTCP(t *testing.T) {
	rs, err := CPU(context.Background(), CPUConfig{Bytes: 2_000_000, MTUs: []uint32{1500}, Procs: []int{1}, TCPs: []string{"gVisor"}, Links: []Offload{NoOffload}})
	if err != nil {
		t.Fatal(err)
	}
	if len(rs) != 1 || rs[0].TCP != "gVisor" || rs[0].Packets == 0 {
		t.Fatalf("%+v, want one gVisor row with its packets counted", rs)
	}
	if _, err := CPU(context.Background(), CPUConfig{Bytes: 2_000_000, MTUs: []uint32{1500}, TCPs: []string{"linux"}}); err == nil {
		t.Fatal("an unknown TCP ran")
	}
}
