package tcp_test

import (
	"fmt"
	"testing"

	"github.com/netramp/netramp/tcp"
	"gvisor.dev/gvisor/pkg/tcpip/header"
)

// stopRow is one send opportunity: setup leaves segments in flight with the
// card free, then the card is made full or left free, and an opportunity is
// taken (a duplicate ACK, or the write itself when setup returns true).
type stopRow struct {
	name  string
	setup func(h *segHarness, c *conn) (opportunityTaken bool)
	peer  uint16 // the peer's window while the row runs (unscaled)
	stop  string // the stop reason the opportunity reports
	grown uint64 // bytes the next ACK of one segment grows cwnd by
	// cardOnly rows are about the card's credit running out, so they run
	// only with the card full.
	cardOnly bool
}

// TestSendStopReasonAndGrowth pins the order of the stop reasons against the
// card (issue 10 defect 1): an application or peer-window stop overrides the
// card's verdict, so the ACKs after it grow nothing (RFC 9438 §5.8); a full
// cwnd is reported as cwnd whatever the card; a card stop grows cwnd only
// with at least half of it in flight (cc/limited.go's half-window rule).
// The rows with the card free are the controls of the rows with it full.
func TestSendStopReasonAndGrowth(t *testing.T) {
	write := func(n int) func(*segHarness, *conn) bool {
		return func(h *segHarness, c *conn) bool {
			c.write(t, make([]byte, n*1460))
			h.out()
			return false
		}
	}
	credit := func(n int) func(*segHarness, *conn) bool {
		return func(h *segHarness, c *conn) bool {
			h.link.Credit = n
			c.write(t, make([]byte, 20*1460))
			h.out()
			return true
		}
	}
	rows := []stopRow{
		// The application has sent all it wrote: 6 of cwnd's 10 in flight.
		{name: "application", setup: write(6), stop: "app", grown: 0},
		// The peer's window holds 6 segments, and all 6 are in flight.
		{name: "peer-window", setup: write(20), peer: 6 * 1460, stop: "peer-window", grown: 0},
		// The initial window of 10 is in flight.
		{name: "cwnd", setup: write(20), stop: "cwnd", grown: 1460},
		// The application's 6 segments and the card's credit of 6 run out on
		// the same segment: the data is asked first, so the stop is the
		// application's (the rule would accept a card stop here).
		{name: "application-and-card-at-once", setup: func(h *segHarness, c *conn) bool {
			h.link.Credit = 6
			c.write(t, make([]byte, 6*1460))
			h.out()
			return true
		}, stop: "app", grown: 0, cardOnly: true},
		// The card alone stops the sender with 6 of cwnd's 10 in flight: half
		// of cwnd or more, so the window is in use (arm B).
		{name: "card-half-window", setup: credit(6), stop: "card", grown: 1460, cardOnly: true},
		// The card stops it with 4 of 10 in flight: less than half, no growth.
		{name: "card-under-half", setup: credit(4), stop: "card", grown: 0, cardOnly: true},
	}
	for _, r := range rows {
		for _, full := range []bool{false, true} {
			if r.cardOnly && !full {
				continue
			}
			t.Run(fmt.Sprintf("%s/card-full=%v", r.name, full), func(t *testing.T) {
				stop, grown := runStopRow(t, r, full)
				if stop != r.stop || grown != r.grown {
					t.Fatalf("stop %q, next ACK grew cwnd %d bytes; want %q, %d", stop, grown, r.stop, r.grown)
				}
			})
		}
	}
}

// runStopRow runs one row and returns the stop reason of its opportunity and
// the growth of cwnd on the ACK of one segment that follows.
func runStopRow(t *testing.T, r stopRow, cardFull bool) (string, uint64) {
	h := newSegHarness(t, tcp.Options{InitialWindow: 10})
	c := h.accept(80, synOptions(1460, 0, true, false, 0))
	wnd := uint16(65535)
	if r.peer != 0 {
		wnd = r.peer
	}
	ack := func(n uint32, w uint16) {
		c.hostNxt += n
		h.inject(pseg{srcPort: peerPort, dstPort: 80, seq: c.peerNxt, ack: c.hostNxt, flags: header.TCPFlagAck, wnd: w})
	}
	ack(0, wnd)
	before := h.reg.Snapshot()
	if !r.setup(h, c) {
		h.link.Full = cardFull
		before = h.reg.Snapshot()
		ack(0, wnd) // a duplicate ACK: an opportunity that acknowledges nothing
	}
	d := h.reg.Snapshot().Diff(before)
	stop := ""
	for _, s := range []string{"app", "peer-window", "cwnd", "card"} {
		if n := d["tcp.stops."+s]; n == 1 && stop == "" {
			stop = s
		} else if n != 0 {
			t.Fatalf("the opportunity counted %d %s stops besides %q", n, s, stop)
		}
	}
	before = h.reg.Snapshot()
	if r.peer != 0 {
		wnd -= 1460 // the window's right edge stays where it was
	}
	ack(1460, wnd)
	return stop, h.reg.Snapshot().Diff(before)["tcp.cwnd.grown.bytes"]
}
