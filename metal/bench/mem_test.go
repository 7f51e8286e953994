package bench

import (
	"bytes"
	"context"
	"strings"
	"testing"
)

// Bounds per connection end (issue 9, "Scale"). An idle established
// connection holds no buffer: 8 KiB is the goal, met. A half-open one is a
// record in its listener's SYN queue, not an endpoint (about 0.3 KiB): 2 KiB
// is the goal, met.
const (
	idleBound     = 8 << 10
	halfOpenBound = 2 << 10
)

// The heap of many connections, measured after collections, is steady per
// end to within a few percent; a buffer allocated at the handshake (the
// defect this guards against cost 128 KiB) is far outside both bounds.
func TestIdleAndHalfOpenConnectionsStayWithinTheirMemoryBounds(t *testing.T) {
	if testing.Short() {
		t.Skip("opens thousands of connections")
	}
	for _, c := range []struct {
		c     MemCase
		bound float64
	}{{MemIdle, idleBound}, {MemHalfOpen, halfOpenBound}} {
		r, err := memCase(context.Background(), c.c, 2000, false)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("%s: %.0f bytes per end", c.c, r.PerEnd)
		if r.PerEnd > c.bound {
			t.Errorf("%s: %.0f bytes per end, want <= %.0f", c.c, r.PerEnd, c.bound)
		}
	}
}

// The report puts each case's figures side by side with the ratio.
func TestMemReportPairsTheTCPs(t *testing.T) {
	var b bytes.Buffer
	WriteMem(&b, []MemResult{
		{TCP: "netramp", Case: MemIdle, Conns: 10, Ends: 2, PerEnd: 2048},
		{TCP: "gVisor", Case: MemIdle, Conns: 10, Ends: 2, PerEnd: 4096},
	})
	if !strings.Contains(b.String(), "0.50x") || !strings.Contains(b.String(), "2.0") {
		t.Fatalf("no side-by-side row:\n%s", b.String())
	}
	if _, err := Mem(context.Background(), MemConfig{}); err == nil {
		t.Fatal("Mem accepted zero connections")
	}
}
