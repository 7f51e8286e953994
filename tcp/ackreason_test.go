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
