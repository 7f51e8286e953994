package hosttests

import (
	"strings"
	"testing"
	"time"

	"github.com/netramp/netramp/stack/vtest/soak"
)

// TestSoakHoursOfChurnAndFaultsLeaveNothingBehind runs 16 clients against
// one listener for 12 virtual hours: 20000 connections at random times, each a
// request and a response of random sizes up to 1 MiB, paths that change
// every 5 s on average (rate, delay, loss, burst loss, jitter, reordering,
// duplication, corruption, path MTU drops, blackouts), clients that abort,
// never read, or vanish. It holds when every completed connection's bytes hash right both
// ways, every connection ended, and after TIME-WAIT the goroutines, the
// clock's pending timers, the live heap (within its slack) and tcp.conns.*
// are back where they started. About 35 s of CPU; under -short or the race
// detector, 2 virtual hours and 2000 connections of at most 256 KiB.
func TestSoakHoursOfChurnAndFaultsLeaveNothingBehind(t *testing.T) {
	cfg := soak.Config{Seed: 1, Duration: 12 * time.Hour, Conns: 20000, Clients: 16, MaxBytes: 1 << 20}
	if testing.Short() || raceEnabled {
		cfg.Duration, cfg.Conns, cfg.MaxBytes, cfg.VanishEvery = 2*time.Hour, 2000, 256<<10, 10*time.Minute
	}
	rep, err := soak.Run(cfg)
	if rep != nil {
		var b strings.Builder
		rep.WriteText(&b)
		t.Log("\n" + b.String())
	}
	if err != nil {
		t.Fatal(err)
	}
	// The run must have met what it is about, or it proves little.
	if e := rep.Endings; e.Completed == 0 || e.Reset == 0 || e.TimedOut == 0 || rep.VanishedConns == 0 || rep.PathChanges == 0 || rep.FragNeeded == 0 {
		t.Fatalf("the soak met too little: endings %+v, %d connections under a vanished client, %d path changes, %d fragmentation-needed",
			rep.Endings, rep.VanishedConns, rep.PathChanges, rep.FragNeeded)
	}
}
