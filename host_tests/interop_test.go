package hosttests

import (
	"testing"
	"time"

	"github.com/netramp/netramp/nic/wire"
	"github.com/netramp/netramp/tcp"
)

// interopPath is a 1 Gbit/s path with 1 ms one-way delay, on the wall clock.
func interopPath() wire.Config {
	d := wire.Dir{RateBps: 1e9, Delay: time.Millisecond}
	return wire.Config{AtoB: d, BtoA: d, Seed: 1}
}

const interopBytes = 256 << 20

// interopRaceBytes is what interop sends each way under the race detector,
// which slows both TCPs some tenfold: 256 MB would take some eight minutes
// a test on 2 cores, 16 MB still crosses every window size on the way.
const interopRaceBytes = 16 << 20

// interop runs 256 MB each way between a (client) and b (server) at once.
func interop(t *testing.T, gvClient, gvServer bool) {
	if testing.Short() {
		t.Skip("256 MB each way in real time")
	}
	n := int64(interopBytes)
	if raceEnabled {
		n = interopRaceBytes
	}
	a, b, w := realPair(t, interopPath(), tcp.Options{}, tcp.Options{}, gvClient, gvServer)
	c, s := connect(t, a, b, 5001)
	start := time.Now()
	done := make(chan time.Duration, 1)
	go func() { done <- sendAndCheck(t, s, c, n, 22, 5*time.Minute) }()
	up := sendAndCheck(t, c, s, n, 11, 5*time.Minute)
	down := <-done
	ab, ba := w.Stats()
	wall := time.Since(start)
	t.Logf("%s each way: client→server %v, server→client %v (%.0f MB/s both together); wire a→b %d frames, b→a %d frames",
		mb(n), up, down, 2*float64(n)/1e6/wall.Seconds(), ab.DeliveredFrames, ba.DeliveredFrames)
}

func TestInteropOursAsClientGVisorAsServer(t *testing.T) {
	interop(t, false, true)
}

func TestInteropGVisorAsClientOursAsServer(t *testing.T) {
	interop(t, true, false)
}

// TestInteropOverOnePercentLossBothWays runs 16 MB each way between our TCP
// and gVisor's over 1% loss in each direction, so SACK, D-SACK and recovery
// are exercised across the two implementations.
func TestInteropOverOnePercentLossBothWays(t *testing.T) {
	if testing.Short() {
		t.Skip("real-time lossy interop")
	}
	const n = 16 << 20
	for _, c := range []struct {
		name     string
		gvA, gvB bool
	}{{"ours-client", false, true}, {"gvisor-client", true, false}} {
		t.Run(c.name, func(t *testing.T) {
			cfg := interopPath()
			cfg.AtoB.Loss, cfg.BtoA.Loss = 0.01, 0.01
			a, b, w := realPair(t, cfg, tcp.Options{}, tcp.Options{}, c.gvA, c.gvB)
			cl, sv := connect(t, a, b, 5002)
			done := make(chan time.Duration, 1)
			go func() { done <- sendAndCheck(t, sv, cl, n, 44, 3*time.Minute) }()
			up := sendAndCheck(t, cl, sv, n, 33, 3*time.Minute)
			down := <-done
			ab, ba := w.Stats()
			t.Logf("16 MB each way over 1%% loss: up %v, down %v; lost a→b %d, b→a %d frames", up, down, ab.DropLoss, ba.DropLoss)
		})
	}
}
