//go:build linux

package linuxpeer_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/netramp/netramp/nic/linuxpeer"
	"github.com/netramp/netramp/nic/wire"
)

// TestBadConfigNamesTheField: a TX ring on a side the kernel feeds, a tiny
// TCPMem or an MTU the test link cannot take is refused before any
// namespace exists, with the field named (no root needed).
func TestBadConfigNamesTheField(t *testing.T) {
	ring := func(dir string) wire.Config {
		c := symmetric(20e6, 10*time.Millisecond, 0)
		if dir == "AtoB" {
			c.AtoB.TxRing = 64
		} else {
			c.BtoA.TxRing = 64
		}
		return c
	}
	for _, c := range []struct {
		name  string
		pair  bool
		cfg   linuxpeer.Config
		field string
	}{
		{"peer-kernel-ring", false, linuxpeer.Config{Wire: ring("BtoA")}, "Wire.BtoA.TxRing"},
		{"pair-ring-a", true, linuxpeer.Config{Wire: ring("AtoB")}, "Wire.AtoB.TxRing"},
		{"pair-ring-b", true, linuxpeer.Config{Wire: ring("BtoA")}, "Wire.BtoA.TxRing"},
		{"tcpmem", false, linuxpeer.Config{TCPMem: 4096}, "TCPMem"},
		{"mtu", true, linuxpeer.Config{Wire: wire.Config{MTU: 100}}, "Wire.MTU"},
	} {
		t.Run(c.name, func(t *testing.T) {
			var err error
			if c.pair {
				_, err = linuxpeer.StartPair(context.Background(), c.cfg)
			} else {
				_, err = linuxpeer.Start(context.Background(), c.cfg)
			}
			if !errors.Is(err, linuxpeer.ErrBadConfig) || !strings.Contains(err.Error(), c.field) {
				t.Fatalf("error %v, want ErrBadConfig naming %s", err, c.field)
			}
		})
	}
}

// TestKernelAcksCrossTheWiresAggregator sends 4 MB from our stack to the
// kernel on a wire that aggregates pure ACKs on the way back: the kernel's
// ACKs are held and released in groups by the same aggregator a
// virtual-time run meets, and every delivered frame's lateness is recorded.
func TestKernelAcksCrossTheWiresAggregator(t *testing.T) {
	skipUnlessRoot(t)
	cfg := symmetric(50e6, 10*time.Millisecond, 0)
	cfg.BtoA.AckAggSegments, cfg.BtoA.AckAggHold = 8, 5*time.Millisecond
	p := startPeer(t, linuxpeer.Config{Wire: cfg})
	s := newStack(t, p, false)
	c, k, dl := stackDialsKernel(t, p, s, 5001, 60*time.Second)
	exchange(t, c, k, 4<<20, dl)
	ab, ba := p.Wire().Stats()
	t.Logf("kernel ACKs held %d in %d releases; lateness to the stack %v", ba.AcksHeld, ba.AckReleases, ba.Lateness)
	if ba.AcksHeld == 0 || ba.AckReleases == 0 {
		t.Errorf("the kernel's pure ACKs were not aggregated: %d held in %d releases", ba.AcksHeld, ba.AckReleases)
	}
	if ab.Lateness.Frames == 0 || ba.Lateness.Frames == 0 {
		t.Errorf("lateness recorded for %d and %d frames, want every delivered frame", ab.Lateness.Frames, ba.Lateness.Frames)
	}
}
