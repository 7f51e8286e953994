package hosttests

import (
	"testing"
	"time"

	"github.com/netramp/netramp/metal/arms"
)

// parityPaths are the parity suite's six rate-limited paths (metal/bench's
// ParitySuite), with its bytes a connection and the path's base RTT.
var parityPaths = []struct {
	preset string
	bytes  int64
	rtt    time.Duration
}{
	{"parity-20m-10ms", 5e6, 10 * time.Millisecond}, {"parity-20m-10ms-stretch", 5e6, 10 * time.Millisecond},
	{"parity-50m-40ms", 12e6, 40 * time.Millisecond}, {"parity-50m-40ms-stretch", 12e6, 40 * time.Millisecond},
	{"parity-100m-100ms", 20e6, 100 * time.Millisecond}, {"parity-100m-100ms-stretch", 20e6, 100 * time.Millisecond},
}

// armNamed is the arm of the table (metal/arms) called name.
func armNamed(t *testing.T, name string) arm {
	t.Helper()
	a, err := arms.Lookup(name)
	if err != nil {
		t.Fatal(err)
	}
	return arm{a.Name, a.Options}
}

// TestDefaultArmRampsAtLeastAsFastAsBOnEveryParityPath: on every parity
// path, in virtual time, the default arm D has received at least as much as
// arm B by 100 ms, 300 ms and 1 s. D keeps B's unpaced initial window and
// ACK clock, so its first round trips are B's (a sender that paces from the
// first segment, arm P, is 16 KB behind by 100 ms on parity-50m-40ms), and
// its L = infinity makes up what B's L = 8 loses on stretch ACKs (on
// parity-100m-100ms-stretch, by 1 s: D 4.99 MB, B 2.13 MB).
func TestDefaultArmRampsAtLeastAsFastAsBOnEveryParityPath(t *testing.T) {
	b, d := armNamed(t, "B"), armNamed(t, "D")
	for _, p := range parityPaths {
		rb := runPath(t, preset(t, p.preset), b, p.bytes, time.Minute, p.rtt, 1)
		rd := runPath(t, preset(t, p.preset), d, p.bytes, time.Minute, p.rtt, 1)
		for _, mark := range []time.Duration{100 * time.Millisecond, 300 * time.Millisecond, time.Second} {
			gb, gd := rb.res.ReceivedBy(mark), rd.res.ReceivedBy(mark)
			t.Logf("%s by %v: D %s, B %s", p.preset, mark, mb(gd), mb(gb))
			if gd < gb {
				t.Errorf("%s: D received %d bytes by %v, B %d: the default arm is behind B", p.preset, gd, mark, gb)
			}
		}
	}
}

// TestDefaultArmLeavesSlowStartBeforeTheQueueOverflows: on the parity paths
// of 50 and 100 Mbit/s, with and without stretch ACKs, the default arm D
// ends its slow start before the queue overflows: nothing dropped, nothing
// retransmitted. Its CSS ends at the second RTT rise (hystart.onRTT's
// second departure); with arm B's CSS_ROUNDS instead, D grew to 1.22 MB on
// parity-50m-40ms's 250 KB path and retransmitted 45 KB, as B does. The
// 20 Mbit/s paths are left out: there D retransmits 2 and 16 segments (3
// and 23 KB), where the kernel's cubic retransmitted 5–6 and 20–47
// segments in the real-time parity suite.
func TestDefaultArmLeavesSlowStartBeforeTheQueueOverflows(t *testing.T) {
	d := armNamed(t, "D")
	for _, p := range parityPaths[2:] {
		r := runPath(t, preset(t, p.preset), d, p.bytes, time.Minute, p.rtt, 1)
		s := r.res.Sender
		t.Logf("%s: exits %d at cwnd %d, drops %d, retransmitted %d", p.preset, s["tcp.hystart.exits"],
			s["tcp.hystart.exit.cwnd.bytes"], r.drops.Bytes, s["tcp.retransmitted.bytes"])
		if r.drops.Bytes != 0 || s["tcp.retransmitted.bytes"] != 0 {
			t.Errorf("%s: the default arm dropped %d and retransmitted %d bytes: its slow start overshot the queue",
				p.preset, r.drops.Bytes, s["tcp.retransmitted.bytes"])
		}
	}
}
