package tcp_test

import (
	"testing"

	"gvisor.dev/gvisor/pkg/tcpip/header"

	"github.com/netramp/netramp/tcp"
)

// nestedBurst accepts a connection, then has the host write 100 bytes
// whose segment's write delivers n full segments from the peer nested in it,
// as a synchronous link does; it returns the pure ACKs the host sent for
// them.
func nestedBurst(t *testing.T, n int) (*segHarness, *conn, []pseg) {
	t.Helper()
	h := newSegHarness(t, tcp.Options{})
	c := h.accept(80, synOptions(1460, 7, true, false, 0))
	h.link.OnWrite = func() {
		h.link.OnWrite = nil
		for range n {
			c.send(header.TCPFlagAck, make([]byte, 1460))
		}
	}
	c.write(t, make([]byte, 100))
	out := h.out()
	if len(out) == 0 || len(out[0].payload) != 100 {
		t.Fatalf("sent %+v, want the 100 bytes first", out)
	}
	for _, s := range out[1:] {
		if len(s.payload) != 0 {
			t.Fatalf("host sent more data: %+v", s)
		}
	}
	return h, c, out[1:]
}

// TestBurstArrivingDuringAFlushIsAckedOnce: eight full segments that arrive
// while the endpoint is writing a segment are acknowledged by one ACK once
// that write is done, not by one every second segment (coalesce.go's
// departure from RFC 5681 §4.2).
func TestBurstArrivingDuringAFlushIsAckedOnce(t *testing.T) {
	h, c, out := nestedBurst(t, 8)
	if len(out) != 1 || out[0].ack != c.peerNxt {
		t.Fatalf("sent %d ACKs %+v, want one of all eight (%d)", len(out), out, c.peerNxt)
	}
	if n := h.count("tcp.acks.coalesced"); n != 4 {
		t.Errorf("tcp.acks.coalesced = %d, want 4 (the burst's four every-second ACKs)", n)
	}
	if n := h.count("tcp.acks.sent.every-second"); n != 1 {
		t.Errorf("tcp.acks.sent.every-second = %d, want 1", n)
	}
}

// TestCoalescedAckCoversAtMostTheCap: a nested burst of the cap's worth of
// full segments and four more is acknowledged at its 22nd segment and at
// its end.
func TestCoalescedAckCoversAtMostTheCap(t *testing.T) {
	_, c, out := nestedBurst(t, capSegs+4)
	first := c.peerNxt - (capSegs+4)*1460
	if len(out) != 2 || out[0].ack != first+capSegs*1460 || out[1].ack != c.peerNxt {
		t.Fatalf("sent %+v, want ACKs of %d segments (%d) and of all (%d)", out, capSegs, first+capSegs*1460, c.peerNxt)
	}
}

// TestCoalescedAckCoversAtMostAQuarterOfASmallBuffer: with an 80 KB receive
// buffer the cap is a quarter of it (14 segments of 1,460 bytes), below 16,
// so a held ACK never covers more than the window can spare.
func TestCoalescedAckCoversAtMostAQuarterOfASmallBuffer(t *testing.T) {
	h := newSegHarness(t, tcp.Options{ReceiveBufferMax: 80 << 10})
	c := h.accept(80, synOptions(1460, 7, true, false, 0))
	const quarter = 80 << 10 / 4 / 1460
	h.link.BeginBurst()
	sendHeld(t, h, c, 2*quarter+2, quarter)
	h.link.EndBurst()
	if out := h.out(); len(out) != 1 || out[0].ack != c.peerNxt {
		t.Fatalf("burst end: sent %+v, want one ACK of %d", out, c.peerNxt)
	}
}

// TestSegmentsOneAtATimeAreAckedEverySecondSegment is the control for the
// two above: the same eight segments, arriving one at a time with no write
// under way, get an ACK every second segment.
func TestSegmentsOneAtATimeAreAckedEverySecondSegment(t *testing.T) {
	h := newSegHarness(t, tcp.Options{})
	c := h.accept(80, synOptions(1460, 7, true, false, 0))
	var acks int
	for i := range 8 {
		c.send(header.TCPFlagAck, make([]byte, 1460))
		out := h.out()
		acks += len(out)
		if i%2 == 1 && (len(out) != 1 || out[0].ack != c.peerNxt) {
			t.Fatalf("segment %d: sent %+v, want one ACK of %d", i+1, out, c.peerNxt)
		}
	}
	if acks != 4 || h.count("tcp.acks.coalesced") != 0 {
		t.Fatalf("%d ACKs and %d coalesced, want 4 and 0", acks, h.count("tcp.acks.coalesced"))
	}
}
