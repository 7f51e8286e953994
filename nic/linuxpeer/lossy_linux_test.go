//go:build linux

package linuxpeer_test

import (
	"testing"
	"time"

	"github.com/netramp/netramp/nic/linuxpeer"
)

// TestInteropLinuxKernelUnderLoss exchanges 6 MB each way between a stack
// and the kernel over a 200 Mbit/s, 4 ms RTT path that loses 1% of frames
// each way; recovery on both sides must deliver every byte intact.
func TestInteropLinuxKernelUnderLoss(t *testing.T) {
	skipUnlessRoot(t)
	for _, arm := range arms {
		t.Run(arm.name, func(t *testing.T) {
			p := startPeer(t, linuxpeer.Config{Wire: symmetric(200e6, 4*time.Millisecond, 0.01)})
			s := newStack(t, p, arm.gvisor)
			c, k, dl := stackDialsKernel(t, p, s, 5001, 60*time.Second)
			start := time.Now()
			exchange(t, c, k, 6<<20, dl)
			info, _ := linuxpeer.TCPInfo(k)
			ab, ba := p.Wire().Stats()
			t.Logf("6 MB each way in %v; lost %d→kernel, %d→stack; kernel retransmitted %d",
				time.Since(start).Round(time.Millisecond), ab.DropLoss, ba.DropLoss, info.Total_retrans)
			if ab.DropLoss == 0 || ba.DropLoss == 0 {
				t.Error("the path lost nothing: recovery was not exercised")
			}
		})
	}
}

// TestInteropLinuxKernelThroughFullTxRing puts a 32-slot TX ring at
// 1 Gbit/s in front of the stack (on a 200 Mbit/s path), so its sender keeps meeting a full card,
// and checks 16 MB each way arrives intact with the kernel.
func TestInteropLinuxKernelThroughFullTxRing(t *testing.T) {
	skipUnlessRoot(t)
	for _, arm := range arms {
		t.Run(arm.name, func(t *testing.T) {
			cfg := symmetric(200e6, 2*time.Millisecond, 0)
			cfg.AtoB.TxRing, cfg.AtoB.LineRateBps = 32, 1e9
			p := startPeer(t, linuxpeer.Config{Wire: cfg})
			s := newStack(t, p, arm.gvisor)
			c, k, dl := stackDialsKernel(t, p, s, 5001, 60*time.Second)
			start := time.Now()
			exchange(t, c, k, 16<<20, dl)
			ab, _ := p.Wire().Stats()
			t.Logf("16 MB each way in %v; writes refused at a full ring: %d", time.Since(start).Round(time.Millisecond), ab.DropRing)
			if ab.DropRing == 0 {
				t.Log("the ring never filled: this run did not reach a card stop")
			}
		})
	}
}
