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

// rowLateness converts a real-time wire's lateness over a row for the
// report. Every real-time emulated arm (ours, gVisor's, the kernel's) reads
// it from the same place, the wire's own per-frame histogram, so their rows
// are held to one standard.
func rowLateness(l wire.Lateness) *report.Lateness {
	return &report.Lateness{Frames: l.Frames, P50: l.P50, P99: l.P99, Max: l.Max}
}

// judgeLateness notes a row's lateness and rejects the row if its p99
// exceeds limit.
func judgeLateness(row *report.Row, l *report.Lateness, limit time.Duration) {
	row.Lateness = l
	row.Note = fmt.Sprintf("wire lateness p50 %s, p99 %s, max %s (%d frames)", ms3(l.P50), ms3(l.P99), ms3(l.Max), l.Frames)
	if l.P99 > limit {
		row.Rejected = fmt.Sprintf("its real-time emulator ran late (p99 %s > %s)", ms3(l.P99), ms3(limit))
	}
}

// lateRejected reports whether row was rejected for lateness alone: it ran
// whole, and judgeLateness, the only source of Rejected, turned it down.
func lateRejected(row report.Row) bool {
	return row.Rejected != "" && row.Err == "" && row.Unavailable == ""
}

// lateFigures is a rejected row's lateness for its NOT JUDGED reason:
// p50, p99 and max, as the row's line prints them.
func lateFigures(row report.Row) string {
	// control:metal-not-judged-without-lateness
	if l := row.Lateness; l != nil {
		return fmt.Sprintf("; wire lateness p50 %s, p99 %s, max %s (%d frames)", ms3(l.P50), ms3(l.P99), ms3(l.Max), l.Frames)
	}
	return ""
}
