package tcp_test

import (
	"fmt"
	"testing"

	"gvisor.dev/gvisor/pkg/tcpip/header"

	"github.com/netramp/netramp/tcp"
)

// aggSegs is the full 1460-byte segments each test aggregate stands for.
const aggSegs = 40

// sendBurst delivers n segments of size bytes as one link burst and returns
// the ACK numbers the host sent after each, and at the burst's end.
func sendBurst(h *segHarness, c *conn, n, size int) (each [][]uint32, end []uint32) {
	h.link.BeginBurst()
	for range n {
		c.send(header.TCPFlagAck, make([]byte, size))
		var acks []uint32
		for _, s := range h.out() {
			acks = append(acks, s.ack)
		}
		each = append(each, acks)
	}
	h.link.EndBurst()
	for _, s := range h.out() {
		end = append(end, s.ack)
	}
	return each, end
}

// TestBurstOfAggregatesIsAckedPer256KB: aggregates (GRO frames of 40 full
// segments) that one link burst hands over share a held ACK up to 256 KB
// (179 segments of 1,460 bytes) once the receive buffer has grown: the
// aggregate that takes the hold there is ACKed at once, the rest at the
// burst's end (coalesce.go, aggregateCoalesceBytes). Full segments in the
// same kind of burst keep the 64 KB cap (44 segments), and on a fresh
// connection's 128 KB buffer the quarter bound ACKs each aggregate at once,
// as before.
func TestBurstOfAggregatesIsAckedPer256KB(t *testing.T) {
	for _, c := range []struct {
		name       string
		grown      bool
		n, size    int
		ackedAfter []int // 1-based segments ACKed at once
		endAck     bool
	}{
		// 40-segment aggregates: the hold reaches 179 at the 5th (200).
		{"aggregates, grown buffer", true, 7, aggSegs * 1460, []int{5}, true},
		// 1460-byte segments: every-second ACKs held up to 44 segments.
		{"full segments, grown buffer", true, 90, 1460, []int{44, 88}, true},
		// A quarter of 128 KB is 22 segments, under one aggregate.
		{"aggregates, fresh buffer", false, 2, aggSegs * 1460, []int{1, 2}, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			h, cn := burstConn(t)
			if c.grown {
				tcp.GrowRcvBuf(cn.ep, 6<<20)
				h.out()
			}
			first := cn.peerNxt
			each, end := sendBurst(h, cn, c.n, c.size)
			want := map[int]bool{}
			for _, i := range c.ackedAfter {
				want[i] = true
			}
			for i, acks := range each {
				at := first + uint32((i+1)*c.size)
				switch {
				case want[i+1] && (len(acks) != 1 || acks[0] != at):
					t.Errorf("segment %d: ACKs %v, want one of %d", i+1, acks, at)
				case !want[i+1] && len(acks) != 0:
					t.Errorf("segment %d: ACKs %v before the burst's end, want none", i+1, acks)
				}
			}
			switch {
			case c.endAck && (len(end) != 1 || end[0] != cn.peerNxt):
				t.Errorf("burst end: ACKs %v, want one of %d", end, cn.peerNxt)
			case !c.endAck && len(end) != 0:
				t.Errorf("burst end: ACKs %v, want none", end)
			}
			if t.Failed() {
				t.Log(fmt.Sprintf("tcp.acks.coalesced = %d", h.count("tcp.acks.coalesced")))
			}
		})
	}
}
