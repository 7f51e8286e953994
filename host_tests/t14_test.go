package hosttests

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/netramp/netramp/cc"
	"github.com/netramp/netramp/counters"
	"github.com/netramp/netramp/nic/wire"
	"github.com/netramp/netramp/stack/vtest"
	"github.com/netramp/netramp/tcp"
)

// rampMarks are the received-by marks of the ramp, from the first byte.
var rampMarks = []time.Duration{100 * time.Millisecond, 300 * time.Millisecond, time.Second, 2 * time.Second}

// rampRun is one arm's transfer on the t14 path and what it recorded.
type rampRun struct {
	arm   string
	by    []int64
	total time.Duration
	reg   *counters.Registry
}

// runT14 sends n bytes A→B on the t14 preset with the sender on arm;
// stretch (the preset's own setting) makes the aggregated ACKs one stretch
// ACK per group, without it every held ACK is released.
func runT14(t *testing.T, arm cc.Arm, name string, n int64, stretch bool) rampRun {
	t.Helper()
	cfg := preset(t, "t14")
	cfg.BtoA.AckAggCoalesce = stretch
	return runRamp(t, cfg, arm, name, n, 1)
}

// runRamp sends n bytes A→B on cfg with the sender on arm and records the
// receiver's ramp marks and the sender's counters.
func runRamp(t *testing.T, cfg wire.Config, arm cc.Arm, name string, n, seed int64) rampRun {
	t.Helper()
	p := newPair(t, cfg, tcp.Options{Arm: arm}, tcp.Options{}, seed)
	c, s := dial(t, p, vtest.SideA, 5001)
	so, si := p.Start(c, s, n, 14)
	si.Discard = true // the ramp is the claim here; the transfer tests check bytes
	if err := p.Run(si.Done, 60*time.Second); err != nil {
		t.Fatalf("arm %s: %v (received %d)", name, err, si.Bytes())
	}
	if err := vtest.Check(so, si, n); err != nil {
		t.Fatal(err)
	}
	r := rampRun{arm: name, total: si.Duration(), reg: p.A.Counters()}
	for _, m := range rampMarks {
		r.by = append(r.by, si.ReceivedBy(m))
	}
	return r
}

func rampTable(runs ...rampRun) string {
	var b strings.Builder
	fmt.Fprintf(&b, "\n%-6s", "arm")
	for _, m := range rampMarks {
		fmt.Fprintf(&b, " %12s", "by "+m.String())
	}
	fmt.Fprintf(&b, " %12s", "all")
	for _, r := range runs {
		fmt.Fprintf(&b, "\n%-6s", r.arm)
		for _, v := range r.by {
			fmt.Fprintf(&b, " %12s", mb(v))
		}
		fmt.Fprintf(&b, " %12s", r.total.Round(time.Millisecond))
	}
	for _, r := range runs {
		fmt.Fprintf(&b, "\n%s counters:", r.arm)
		for _, name := range []string{"tcp.hystart.css", "tcp.hystart.css.entry-rounds", "tcp.hystart.resumed",
			"tcp.hystart.exits", "tcp.hystart.exit.cwnd.bytes", "tcp.acks.cwnd-limited", "tcp.acks.not-limited",
			"tcp.cwnd.grown.bytes", "tcp.card-stops", "tcp.retransmitted.bytes", "tcp.rto"} {
			fmt.Fprintf(&b, " %s=%d", strings.TrimPrefix(name, "tcp."), counter(r.reg, name))
		}
	}
	return b.String()
}

func TestT14ArmBRampsFasterThanArmA(t *testing.T) {
	// The t14 path: 1 Gbit/s, 2 ms RTT, a 256-frame TX ring, a Wi-Fi peer
	// whose ACKs are aggregated per burst, at most 34 segments, delayed 0-10
	// ms by the medium and coalesced into one stretch ACK per group (the
	// preset, the peer of the field report), or released as they were sent. Arm B (HyStart++ with L = 8 and the half-window card rule)
	// must have received more than arm A (RFC 5681 growth and the old card
	// rule) at every ramp mark, and HyStart++ must have acted in arm B.
	const n = 320 << 20
	for _, v := range []struct {
		name    string
		stretch bool
		// wantCSS: the peer's medium wait raises some rounds' minimum RTT
		// by RttThresh, so HyStart++ enters CSS and its tcp.hystart.*
		// counters must show it, with stretch ACKs or without.
		wantCSS bool
	}{
		{"t14 with held ACKs released together", false, true},
		{"t14 preset (one stretch ACK per group)", true, true},
	} {
		t.Run(fmt.Sprint(v.stretch), func(t *testing.T) {
			a := runT14(t, cc.ArmA, "A", n, v.stretch)
			b := runT14(t, cc.ArmB, "B", n, v.stretch)
			t.Logf("%s, %s A→B, received by (from the first byte):%s", v.name, mb(n), rampTable(a, b))
			for i, m := range rampMarks {
				if b.by[i] <= a.by[i] {
					t.Errorf("received by %v: arm B %s, arm A %s: B must be larger", m, mb(b.by[i]), mb(a.by[i]))
				}
			}
			hy := counter(b.reg, "tcp.hystart.css") + counter(b.reg, "tcp.hystart.exits") + counter(b.reg, "tcp.hystart.resumed")
			if v.wantCSS && hy == 0 {
				t.Errorf("arm B's tcp.hystart.* counters are all zero: HyStart++ never entered CSS")
			}
			// L = 8 lets each ACK grow cwnd by up to 8 SMSS: B must grow more.
			if ga, gb := counter(a.reg, "tcp.cwnd.grown.bytes"), counter(b.reg, "tcp.cwnd.grown.bytes"); gb <= ga {
				t.Errorf("cwnd grown: arm B %d bytes, arm A %d: HyStart++'s L did not act", gb, ga)
			}
			if got := counter(a.reg, "tcp.hystart.css") + counter(a.reg, "tcp.hystart.exits"); got != 0 {
				t.Errorf("arm A counted %d HyStart++ events; it runs RFC 5681 slow start", got)
			}
		})
	}
}
