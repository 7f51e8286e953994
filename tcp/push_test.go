package tcp_test

import (
	"testing"

	"gvisor.dev/gvisor/pkg/tcpip/header"

	"github.com/netramp/netramp/tcp"
)

// TestPushMarksOnlyTheSegmentThatEmptiesTheSendBuffer: of a write's
// segments only the last carries PSH, so a receiver's GRO, which ends an
// aggregate at a PSH, can merge the rest; a write that ends mid-flight gets
// its PSH when its last byte goes.
func TestPushMarksOnlyTheSegmentThatEmptiesTheSendBuffer(t *testing.T) {
	h := newSegHarness(t, tcp.Options{})
	c := h.accept(80, synOptions(1460, 7, true, false, 0))
	h.inject(pseg{srcPort: peerPort, dstPort: 80, seq: c.peerNxt, ack: c.hostNxt, flags: header.TCPFlagAck, wnd: 65535})
	h.out()
	check := func(what string, segs []pseg, wantPush []bool) {
		t.Helper()
		var got []bool
		for _, s := range segs {
			if len(s.payload) > 0 {
				got = append(got, s.has(header.TCPFlagPsh))
			}
		}
		if len(got) != len(wantPush) {
			t.Fatalf("%s: %d data segments, want %d", what, len(got), len(wantPush))
		}
		for i := range got {
			if got[i] != wantPush[i] {
				t.Fatalf("%s: PSH on the data segments %v, want %v", what, got, wantPush)
			}
		}
	}
	c.write(t, make([]byte, 4*1460))
	segs := h.out()
	check("a write of four segments", segs, []bool{false, false, false, true})
	sent := uint32(4 * 1460)
	// Five full segments and a runt: Nagle holds the runt, so the fifth
	// segment does not empty the buffer; the runt does, once ACKed.
	c.write(t, make([]byte, 5*1460+100))
	check("five segments of a longer write", h.out(), []bool{false, false, false, false, false})
	sent += 5 * 1460
	h.inject(pseg{srcPort: peerPort, dstPort: 80, seq: c.peerNxt, ack: c.hostNxt + sent, flags: header.TCPFlagAck, wnd: 65535})
	check("the runt that ends it", h.out(), []bool{true})
}
