//go:build linux

package bench

import (
	"context"
	"errors"
	"os"
	"testing"

	"github.com/netramp/netramp/nic/netns"
)

func skipUnlessKernelPeer(t *testing.T) {
	t.Helper()
	if why := KernelPeerUnavailable(); why != "" {
		t.Skipf("skipping: the kernel as peer needs root, /dev/net/tun and iproute2: %s", why)
	}
}

// Making the kernel peer twice in a row works, Close removes its namespace
// and ends its helper, and a second Close is harmless.
func TestKernelPeerSetupAndTeardownAreIdempotent(t *testing.T) {
	skipUnlessKernelPeer(t)
	for i := range 2 {
		kp, err := newKernelPeer(context.Background())
		if errors.Is(err, netns.ErrUnsupported) {
			t.Skipf("skipping: %v", err)
		}
		if err != nil {
			t.Fatalf("setup %d: %v", i, err)
		}
		p := kp.(*linuxKernelPeer)
		if _, err := os.Stat(p.ns.Path()); err != nil {
			t.Fatalf("setup %d: namespace missing: %v", i, err)
		}
		if err := p.Close(); err != nil {
			t.Fatalf("close %d: %v", i, err)
		}
		if err := p.Close(); err != nil {
			t.Fatalf("second close %d: %v", i, err)
		}
		if _, err := os.Stat(p.ns.Path()); !errors.Is(err, os.ErrNotExist) {
			t.Fatalf("after close %d: namespace %s still there (%v)", i, p.ns.Name(), err)
		}
		if p.cmd.ProcessState == nil || !p.cmd.ProcessState.Exited() {
			t.Fatalf("after close %d: helper not ended (%v)", i, p.cmd.ProcessState)
		}
	}
}

// Each TCP moves exactly the bytes asked, to the kernel and from it, at
// both MTUs, with GSO out (to the kernel) and GRO in (from it) really on:
// the rows measure the offloaded path the command says they do. Real
// time, but it asserts bytes and counts, not speed.
func TestKernelCPUMovesEveryByteBothWaysWithGSOAndGRO(t *testing.T) {
	skipUnlessKernelPeer(t)
	const n = 4_000_000
	rs, err := KernelCPU(context.Background(), KernelCPUConfig{Bytes: n, MTUs: []uint32{1500, 9000}})
	if err != nil {
		t.Fatal(err)
	}
	if len(rs) != 8 {
		t.Fatalf("%d rows, want 8 (two TCPs, two MTUs, two directions)", len(rs))
	}
	for _, r := range rs {
		t.Logf("MTU %d %s %s: %d bytes, %d GSO out, %d GRO in, CPU %v, peer %v", r.MTU, r.Dir, r.TCP, r.Bytes, r.GSOOut, r.GROIn, r.CPU, r.PeerCPU)
		if r.Bytes != n || len(r.RoundCPU) != 4 || r.CPU <= 0 || r.PeerCPU < 0 {
			t.Errorf("MTU %d %s %s: %d bytes in %d rounds, CPU %v: want %d in 4", r.MTU, r.Dir, r.TCP, r.Bytes, len(r.RoundCPU), r.CPU, n)
		}
		if r.Dir == ToKernel && r.GSOOut == 0 {
			t.Errorf("MTU %d %s %s: no GSO packet went to the kernel whole", r.MTU, r.Dir, r.TCP)
		}
		if r.Dir == FromKernel && r.GROIn == 0 {
			t.Errorf("MTU %d %s %s: no GSO frame of the kernel's reached the TCP whole", r.MTU, r.Dir, r.TCP)
		}
	}
}
