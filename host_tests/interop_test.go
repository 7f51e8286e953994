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

// interop runs 256 MB each way between a (client) and b (server) at once.
func interop(t *testing.T, gvClient, gvServer bool) {
	if testing.Short() {
		t.Skip("256 MB each way in real time")
	}
	a, b, w := realPair(t, interopPath(), tcp.Options{}, tcp.Options{}, gvClient, gvServer)
	c, s := connect(t, a, b, 5001)
	start := time.Now()
	done := make(chan time.Duration, 1)
	go func() { done <- sendAndCheck(t, s, c, interopBytes, 22, 5*time.Minute) }()
	up := sendAndCheck(t, c, s, interopBytes, 11, 5*time.Minute)
	down := <-done
	ab, ba := w.Stats()
	wall := time.Since(start)
	t.Logf("256 MB each way: client→server %v, server→client %v (%.0f MB/s both together); wire a→b %d frames, b→a %d frames",
		up, down, 2*float64(interopBytes)/1e6/wall.Seconds(), ab.DeliveredFrames, ba.DeliveredFrames)
}

func TestInteropOursAsClientGVisorAsServer(t *testing.T) {
	interop(t, false, true)
}

func TestInteropGVisorAsClientOursAsServer(t *testing.T) {
	interop(t, true, false)
}
