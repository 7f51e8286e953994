package tcp_test

import (
	"testing"
	"time"

	"gvisor.dev/gvisor/pkg/tcpip/header"

	"github.com/netramp/netramp/stack/tcptest"
	"github.com/netramp/netramp/tcp"
)

// dataOut is the data segments the host sent since the last call, as read
// off the link (with their DF flag).
func dataOut(h *segHarness) []tcptest.Seg {
	var segs []tcptest.Seg
	for _, s := range h.host.Out() {
		if len(s.Payload) > 0 {
			segs = append(segs, s)
		}
	}
	return segs
}

// A router's fragmentation-needed for a segment in flight lowers the MSS:
// new segments fit the reported MTU and carry DF; a segment built before,
// retransmitted, keeps its size and goes without DF so the router can
// fragment it. Reports that quote nothing in flight, or an MTU no lower, are
// counted and change nothing. All in virtual time.
func TestFragNeededLowersTheMSS(t *testing.T) {
	h := newSegHarness(t, tcp.Options{})
	c := h.accept(80, synOptions(1460, 7, true, false, 0))
	c.write(t, make([]byte, 30<<10))
	first := dataOut(h)
	if len(first) < 4 {
		t.Fatalf("%d segments sent, want at least 4", len(first))
	}
	for _, s := range first {
		if !s.DF || len(s.Payload) != 1460 {
			t.Fatalf("segment of %d bytes, DF %v: want 1460 bytes with DF", len(s.Payload), s.DF)
		}
	}

	stale := first[0]
	stale.Seq -= 1 << 20 // not in flight: a blind guess
	h.host.InjectFragNeeded(stale, 1000)
	h.host.InjectFragNeeded(first[0], 1500) // not below the MSS in use
	if got := h.count("tcp.pmtu.ignored"); got != 2 {
		t.Fatalf("tcp.pmtu.ignored = %d, want 2", got)
	}
	h.host.InjectFragNeeded(first[1], 1000)
	if got := h.count("tcp.pmtu.lowered"); got != 1 {
		t.Fatalf("tcp.pmtu.lowered = %d, want 1", got)
	}

	// The peer acks the first segment: new data goes out cut to the new
	// MSS, 1000 less the IP and TCP headers.
	c.hostNxt += 1460
	c.send(header.TCPFlagAck, nil)
	next := dataOut(h)
	if len(next) == 0 {
		t.Fatal("no new data after the ACK")
	}
	for _, s := range next {
		if !s.DF || len(s.Payload) > 1000-40 {
			t.Fatalf("new segment of %d bytes, DF %v: want at most 960 bytes with DF", len(s.Payload), s.DF)
		}
	}

	// Nothing more is acked: the RTO resends the oldest segment, built at
	// the old size, without DF.
	h.clk.RunFor(3 * time.Second)
	rtx := dataOut(h)
	if len(rtx) == 0 || rtx[0].Seq != first[1].Seq {
		t.Fatalf("no retransmission of seq %d: %+v", first[1].Seq, rtx)
	}
	if rtx[0].DF || len(rtx[0].Payload) != 1460 {
		t.Fatalf("retransmission of %d bytes, DF %v: want 1460 bytes without DF", len(rtx[0].Payload), rtx[0].DF)
	}
}

// A report below IPv4's 576-byte minimum keeps the MSS at 536 and turns DF
// off, so a forged report cannot shrink segments further and a real path
// that small is still crossed by fragments.
func TestFragNeededBelowTheFloorStopsDF(t *testing.T) {
	h := newSegHarness(t, tcp.Options{})
	c := h.accept(80, synOptions(1460, 7, true, false, 0))
	c.write(t, make([]byte, 30<<10))
	first := dataOut(h)
	h.host.InjectFragNeeded(first[0], 200)
	if got := h.count("tcp.pmtu.lowered"); got != 1 {
		t.Fatalf("tcp.pmtu.lowered = %d, want 1", got)
	}
	c.hostNxt += uint32(len(first)) * 1460
	c.send(header.TCPFlagAck, nil)
	next := dataOut(h)
	if len(next) == 0 {
		t.Fatal("no new data after the ACK")
	}
	for _, s := range next {
		if s.DF || len(s.Payload) != 536 {
			t.Fatalf("segment of %d bytes, DF %v: want 536 bytes without DF", len(s.Payload), s.DF)
		}
	}
}
