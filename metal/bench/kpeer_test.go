package bench

import (
	"bytes"
	"context"
	"fmt"
	"runtime/pprof"
	"slices"
	"strings"
	"testing"
	"time"
)

// Every option of the kernel-peer rows is checked before a namespace is
// made, the error naming the field.
func TestKernelCPURefusesBadConfigNamingTheField(t *testing.T) {
	defer func(f func(context.Context) (kernelPeer, error)) { openKernelPeer = f }(openKernelPeer)
	openKernelPeer = func(context.Context) (kernelPeer, error) {
		t.Fatal("a peer was opened for a bad config")
		return nil, nil
	}
	ok := KernelCPUConfig{Bytes: 8_000_000, MTUs: []uint32{1500}}
	for _, c := range []struct {
		mod   func(*KernelCPUConfig)
		field string
	}{
		{func(c *KernelCPUConfig) { c.Rounds = -1 }, "Rounds"},
		{func(c *KernelCPUConfig) { c.Bytes = 0 }, "Bytes"},
		{func(c *KernelCPUConfig) { c.Bytes = 3_000_000 }, "Bytes"},
		{func(c *KernelCPUConfig) { c.MTUs = nil }, "MTUs"},
		{func(c *KernelCPUConfig) { c.MTUs = []uint32{1500, 575} }, "MTUs"},
		{func(c *KernelCPUConfig) { c.MTUs = []uint32{MaxKernelMTU + 1} }, "MTUs"},
		{func(c *KernelCPUConfig) { c.TCPs = []string{"netramp", "linux"} }, "TCPs"},
		{func(c *KernelCPUConfig) { c.Dirs = []KernelDir{FromKernel, 2} }, "Dirs"},
	} {
		cfg := ok
		c.mod(&cfg)
		_, err := KernelCPU(context.Background(), cfg)
		if err == nil || !strings.Contains(err.Error(), c.field) {
			t.Errorf("%+v: error %v, want one naming %s", cfg, err, c.field)
		}
	}
	for _, s := range []string{"to", "from"} {
		if _, err := ParseKernelDir(s); err != nil {
			t.Errorf("ParseKernelDir(%q): %v", s, err)
		}
	}
	if _, err := ParseKernelDir("up"); err == nil {
		t.Error("ParseKernelDir(\"up\") took it")
	}
}

// fakePeer records the transfers it is asked for. The nth transfer's CPU
// is n ms for ours and 4n ms for gVisor's; the peer's is n/2 ms (integer)
// for ours and n ms for gVisor's: the sums and ratios are known.
type fakePeer struct {
	order  []string
	sizes  []int64
	labels []string
	closed int
}

func (f *fakePeer) transfer(ctx context.Context, sp kernelSpec) (KernelCPUResult, error) {
	name := "netramp"
	if sp.GVisor {
		name = "gVisor"
	}
	if l, _ := pprof.Label(ctx, "tcp"); l != name {
		f.labels = append(f.labels, fmt.Sprintf("%s's transfer under tcp=%q", name, l))
	}
	f.order = append(f.order, name)
	f.sizes = append(f.sizes, sp.Bytes)
	n := len(f.order)
	cpu, peer := time.Duration(n)*time.Millisecond, time.Duration(n/2)*time.Millisecond
	if sp.GVisor {
		cpu, peer = 4*time.Duration(n)*time.Millisecond, time.Duration(n)*time.Millisecond
	}
	r := KernelCPUResult{CPUResult: CPUResult{TCP: name, MTU: sp.MTU, Bytes: sp.Bytes, Wall: time.Second, CPU: cpu, Allocs: 2},
		Dir: sp.Dir, PeerCPU: peer, GSOOut: 3, GROIn: 1, FramesOut: 5, FramesIn: 7}
	r.rates()
	return r, nil
}

func (f *fakePeer) Close() error { f.closed++; return nil }

// The TCPs take turns in ABBA order after one unmeasured transfer each, the
// row sums its rounds, the ratio line divides ours by gVisor's, and the
// peer is closed once.
func TestKernelCPURoundsTakeTurnsAndRatiosDivide(t *testing.T) {
	defer func(f func(context.Context) (kernelPeer, error)) { openKernelPeer = f }(openKernelPeer)
	f := &fakePeer{}
	openKernelPeer = func(context.Context) (kernelPeer, error) { return f, nil }
	rs, err := KernelCPU(context.Background(), KernelCPUConfig{Bytes: 10_000_001, MTUs: []uint32{1500}, Dirs: []KernelDir{ToKernel}})
	if err != nil {
		t.Fatal(err)
	}
	if len(f.labels) > 0 {
		t.Fatalf("mislabelled: %v", f.labels)
	}
	if f.closed != 1 {
		t.Fatalf("peer closed %d times, want 1", f.closed)
	}
	if want := []string{"netramp", "gVisor", "netramp", "gVisor", "gVisor", "netramp", "netramp", "gVisor", "gVisor", "netramp"}; !slices.Equal(f.order, want) {
		t.Fatalf("order %v, want %v", f.order, want)
	}
	if want := []int64{2_500_000, 2_500_000, 2_500_000, 2_500_000, 2_500_000, 2_500_000, 2_500_000, 2_500_000, 2_500_001, 2_500_001}; !slices.Equal(f.sizes, want) {
		t.Fatalf("sizes %v, want %v", f.sizes, want)
	}
	if len(rs) != 2 || rs[0].TCP != "netramp" || rs[1].TCP != "gVisor" {
		t.Fatalf("%+v, want netramp's row then gVisor's", rs)
	}
	ms := time.Millisecond
	a, b := rs[0], rs[1]
	// Ours ran 3rd, 6th, 7th and 10th; gVisor's 4th, 5th, 8th and 9th.
	if a.Bytes != 10_000_001 || a.CPU != 26*ms || a.PeerCPU != (1+3+3+5)*ms || a.GSOOut != 12 || a.FramesOut != 20 || a.FramesIn != 28 || a.Dir != ToKernel ||
		!slices.Equal(a.RoundCPU, []time.Duration{3 * ms, 6 * ms, 7 * ms, 10 * ms}) {
		t.Fatalf("netramp's row %+v does not sum its rounds", a)
	}
	if b.CPU != 4*26*ms || b.PeerCPU != 26*ms {
		t.Fatalf("gVisor's row %+v does not sum its rounds", b)
	}
	if got, want := a.CPUSecPerGB, 0.026/(10_000_001/1e9); got != want {
		t.Fatalf("CPU-s per GB %v, want %v", got, want)
	}
	var out bytes.Buffer
	WriteKernelCPU(&out, rs)
	// CPU 26/104 ms, peer 12/26 ms, allocs 8/8; by round 3/16, 6/20,
	// 7/32, 10/36.
	var ratioLine string
	for _, l := range strings.Split(out.String(), "\n") {
		if strings.Contains(l, "netramp/gVisor") {
			ratioLine = l
		}
	}
	if f := strings.Fields(ratioLine); len(f) != 10 || f[5] != "0.25x" || f[6] != "0.46x" || f[7] != "1.00x" {
		t.Fatalf("ratio line %q, want CPU 0.25x, peer CPU 0.46x, allocs 1.00x:\n%s", ratioLine, out.String())
	}
	if !strings.Contains(out.String(), "MTU 1500, to kernel, CPU by round (ABBA), netramp over gVisor: 0.19x 0.30x 0.22x 0.28x") {
		t.Fatalf("round ratios missing:\n%s", out.String())
	}
}
