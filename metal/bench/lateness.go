package bench

import (
	"fmt"
	"time"

	"github.com/netramp/netramp/metal/report"
	"github.com/netramp/netramp/nic/wire"
)

// DefaultLateLimit is the p99 lateness above which a row on a real-time
// emulated path is rejected: on the 2 ms RTT of t14, half a millisecond late
// is a quarter of the path's round trip added as jitter.
const DefaultLateLimit = 500 * time.Microsecond

// rowLateness converts a real-time wire's lateness and input lag over a
// row for the report. Every real-time emulated arm (ours, gVisor's, the
// kernel's) reads them from the same place, the wire's own per-frame
// histograms, so their rows are held to one standard.
func rowLateness(l, lag wire.Lateness) *report.Lateness {
	return &report.Lateness{Frames: l.Frames, P50: l.P50, P99: l.P99, Max: l.Max,
		// control:bench-input-lag-not-shown
		LagFrames: lag.Frames, LagP50: lag.P50, LagP99: lag.P99, LagMax: lag.Max}
}

// judgeLateness notes a row's lateness and input lag, and rejects the row
// if its lateness p99 exceeds limit. The input lag never rejects a row, for
// any arm: it is the receiving host's time to take frames in (the kernel's
// receive path behind a TUN write, our stack's input), part of what the row
// measures, as a host's receive processing is on a real card. A receiver
// that falls a whole input queue behind loses frames (the wire's drop.input
// counter) and its TCP pays for them like for any loss.
func judgeLateness(row *report.Row, l *report.Lateness, limit time.Duration) {
	row.Lateness = l
	row.Note = latenessFigures(l)
	if l.P99 > limit {
		row.Rejected = fmt.Sprintf("its real-time emulator ran late (p99 %s > %s)", ms3(l.P99), ms3(limit))
	}
}

// latenessFigures is a row's wire lateness and input lag as its line
// prints them.
func latenessFigures(l *report.Lateness) string {
	return fmt.Sprintf("wire lateness p50 %s, p99 %s, max %s (%d frames); input lag p50 %s, p99 %s, max %s (%d frames)",
		ms3(l.P50), ms3(l.P99), ms3(l.Max), l.Frames, ms3(l.LagP50), ms3(l.LagP99), ms3(l.LagMax), l.LagFrames)
}

// lateRejected reports whether row was rejected for lateness alone: it ran
// whole, and judgeLateness, the only source of Rejected, turned it down.
func lateRejected(row report.Row) bool {
	return row.Rejected != "" && row.Err == "" && row.Unavailable == ""
}

// lateFigures is a rejected row's lateness for its NOT JUDGED reason, as
// the row's line prints it.
func lateFigures(row report.Row) string {
	// control:metal-not-judged-without-lateness
	if l := row.Lateness; l != nil {
		return "; " + latenessFigures(l)
	}
	return ""
}
