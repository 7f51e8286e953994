package tcp_test

import (
	"strings"
	"testing"
	"time"

	"gvisor.dev/gvisor/pkg/tcpip/header"

	"github.com/netramp/netramp/tcp"
)

// TestPureAcksAreCountedByReason: each pure ACK the receiver sends is
// counted once, under tcp.acks.sent.<the reason it was owed>.
func TestPureAcksAreCountedByReason(t *testing.T) {
	h := newSegHarness(t, tcp.Options{})
	c := h.accept(80, synOptions(1460, 7, true, false, 0))
	full := make([]byte, 1460)
	sendAt := func(off uint32, n int) {
		h.inject(pseg{srcPort: peerPort, dstPort: 80, seq: c.peerNxt + off, ack: c.hostNxt, flags: header.TCPFlagAck,
			wnd: 65535, payload: make([]byte, n)})
	}
	steps := []struct {
		reason string
		do     func()
	}{
		{"every-second", func() { c.send(header.TCPFlagAck, full); c.send(header.TCPFlagAck, full) }},
		{"short", func() { c.send(header.TCPFlagAck, make([]byte, 100)) }},
		{"out-of-order", func() { sendAt(1460, 1460) }},
		{"hole-filled", func() { c.send(header.TCPFlagAck, full); c.peerNxt += 1460 }},
		{"duplicate", func() { sendAt(^uint32(1460)+1, 1460) }},
		{"delayed", func() { c.send(header.TCPFlagAck, full); h.clk.RunFor(50 * time.Millisecond) }},
		{"fin", func() { c.send(header.TCPFlagAck|header.TCPFlagFin, nil) }},
	}
	for _, s := range steps {
		before := h.count("tcp.acks.sent." + s.reason)
		s.do()
		out := h.out()
		if len(out) != 1 || len(out[0].payload) != 0 || out[0].ack != c.peerNxt {
			t.Fatalf("%s: sent %+v, want one pure ACK of %d", s.reason, out, c.peerNxt)
		}
		if got := h.count("tcp.acks.sent." + s.reason); got != before+1 {
			t.Errorf("%s: tcp.acks.sent.%s went from %d to %d, want one more", s.reason, s.reason, before, got)
		}
	}
	var total uint64
	for _, name := range h.reg.Snapshot().Names() {
		if strings.HasPrefix(name, "tcp.acks.sent.") {
			total += h.count(name)
		}
	}
	if total != uint64(len(steps)) {
		t.Errorf("tcp.acks.sent.* add up to %d, want %d (one a step)", total, len(steps))
	}
}

// TestAggregateIsAckedAtOnceAsTheSegmentsItHolds: an in-order segment larger
// than SMSS, as a receiver's GRO builds from a burst, counts as the
// full-sized segments it holds toward the every-second-segment ACK, so it is
// ACKed at once like two or more segments, never by the delayed-ACK timer;
// what it passes the count by stays counted.
func TestAggregateIsAckedAtOnceAsTheSegmentsItHolds(t *testing.T) {
	h := newSegHarness(t, tcp.Options{})
	c := h.accept(80, synOptions(1460, 7, true, false, 0))
	h.out()
	steps := []struct {
		name string
		n    int
		ack  bool
	}{
		{"one full segment waits for its pair", 1460, false},
		{"and is ACKed with it", 1460, true},
		{"two segments' worth at once", 2 * 1460, true},
		{"a segment and a half", 1460 + 730, true},
		{"three segments", 3 * 1460, true},
		{"then one more completes the pair the three began", 1460, true},
		{"forty-four segments", 44 * 1460, true},
	}
	for _, s := range steps {
		before := h.count("tcp.acks.sent.every-second")
		c.send(header.TCPFlagAck, make([]byte, s.n))
		out := h.out()
		if !s.ack {
			if len(out) != 0 {
				t.Fatalf("%s: sent %d segments, want none yet", s.name, len(out))
			}
			continue
		}
		if len(out) != 1 || len(out[0].payload) != 0 || out[0].ack != c.peerNxt {
			t.Fatalf("%s: sent %d segments, want one pure ACK of %d at once", s.name, len(out), c.peerNxt)
		}
		if got := h.count("tcp.acks.sent.every-second"); got != before+1 {
			t.Errorf("%s: tcp.acks.sent.every-second went from %d to %d, want one more", s.name, before, got)
		}
	}
	if got := h.count("tcp.acks.sent.delayed"); got != 0 {
		t.Errorf("tcp.acks.sent.delayed = %d, want 0", got)
	}
}
