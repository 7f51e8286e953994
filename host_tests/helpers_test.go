package hosttests

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/netramp/netramp/counters"
	"github.com/netramp/netramp/nic/wire"
	"github.com/netramp/netramp/stack/vtest"
	"github.com/netramp/netramp/tcp"
)

// gigabit is a clean 1 Gbit/s path with 1 ms one-way delay each way.
func gigabit() wire.Config {
	d := wire.Dir{RateBps: 1e9, Delay: time.Millisecond}
	return wire.Config{AtoB: d, BtoA: d}
}

func preset(t *testing.T, name string) wire.Config {
	t.Helper()
	c, err := wire.Preset(name)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func newPair(t testing.TB, cfg wire.Config, a, b tcp.Options, seed int64) *vtest.Pair {
	t.Helper()
	p, err := vtest.NewPair(cfg, a, b, seed)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Close)
	return p
}

func dial(t testing.TB, p *vtest.Pair, from vtest.Side, port uint16) (*vtest.Conn, *vtest.Conn) {
	t.Helper()
	c, s, err := p.Dial(from, port)
	if err != nil {
		t.Fatal(err)
	}
	return c, s
}

// counter reads one counter of a stack's registry (0 if not registered).
func counter(r *counters.Registry, name string) uint64 {
	if c := r.Lookup(name); c != nil {
		return c.Load()
	}
	return 0
}

// tcpCounters renders the non-zero tcp.* counters, for logs.
func tcpCounters(r *counters.Registry) string {
	var b strings.Builder
	for _, c := range r.Counters() {
		if strings.HasPrefix(c.Name(), "tcp.") && c.Load() != 0 {
			fmt.Fprintf(&b, " %s=%d", c.Name(), c.Load())
		}
	}
	return b.String()
}

func mb(n int64) string { return fmt.Sprintf("%.2f MB", float64(n)/1e6) }
