package hosttests

import (
	"testing"
	"time"

	"github.com/netramp/netramp/cc"
	"github.com/netramp/netramp/nic/wire"
)

// queuePath is a path whose queue fills within a few rounds of slow start:
// 100 Mbit/s, 20 ms RTT (a 250 KB BDP), a 2 MB (8 BDP) drop-tail queue. The queue
// delay a round adds is far above RFC 9406's 4 ms floor, so HyStart++'s
// delay signal has something to read.
func queuePath() wire.Config {
	d := wire.Dir{RateBps: 100e6, Delay: 10 * time.Millisecond, QueueBytes: 2 << 20}
	return wire.Config{AtoB: d, BtoA: wire.Dir{RateBps: 100e6, Delay: 10 * time.Millisecond}, Seed: 3}
}

// TestHyStartLeavesSlowStartBeforeTheQueueOverflows pins RFC 9406 end to end:
// on a path whose queue fills, arm B's HyStart++ sees the round's minimum RTT
// rise, enters CSS, and hands over to CUBIC after its CSS rounds with nothing
// lost; arm A's RFC 5681 slow start runs until the queue overflows.
func TestHyStartLeavesSlowStartBeforeTheQueueOverflows(t *testing.T) {
	const n = 24 << 20
	a := runRamp(t, queuePath(), cc.ArmA, "A", n, 3)
	b := runRamp(t, queuePath(), cc.ArmB, "B", n, 3)
	t.Logf("100 Mbit/s, 20 ms RTT, 2 MB queue, %s A→B:%s", mb(n), rampTable(a, b))
	if got := counter(b.reg, "tcp.hystart.css"); got == 0 {
		t.Errorf("arm B never entered CSS on a filling queue")
	}
	if got := counter(b.reg, "tcp.hystart.exits"); got != 1 {
		t.Errorf("arm B's HyStart++ exits = %d, want 1", got)
	}
	if got := counter(b.reg, "tcp.hystart.exit.cwnd.bytes"); got == 0 || got > 2<<20+250_000 {
		t.Errorf("arm B left slow start at cwnd %d bytes, want above 0 and within BDP + queue", got)
	}
	if got := counter(b.reg, "tcp.retransmitted.bytes"); got != 0 {
		t.Errorf("arm B retransmitted %d bytes: HyStart++ should have left slow start before the queue overflowed", got)
	}
	if got := counter(a.reg, "tcp.retransmitted.bytes"); got == 0 {
		t.Errorf("arm A lost nothing: this path does not exercise slow start's overshoot")
	}
}
