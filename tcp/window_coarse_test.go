package tcp_test

import (
	"testing"

	"gvisor.dev/gvisor/pkg/tcpip/header"

	"github.com/netramp/netramp/tcp"
)

// TestCoarseScaleEdgeFallsBackOnlyPastTheSpare pins the stated departure:
// with scale 14 each ACK's edge creeps a whole segment past the promise
// while nobody reads; once the ring's spare is spent the edge falls back by
// under a unit (counted), and the host never accepts more than the ring
// holds, so no byte it acknowledged is lost.
func TestCoarseScaleEdgeFallsBackOnlyPastTheSpare(t *testing.T) {
	h := newSegHarness(t, tcp.Options{ReceiveBufferMax: tcp.MaxBufferMax})
	c := h.accept(80, synOptions(1460, 2, true, false, 0))
	const shift = 14
	edge := uint64(c.peerNxt) + 0xffff
	start := c.peerNxt
	var acked uint32
	for i := 0; i < 400 && edge > uint64(c.peerNxt); i++ {
		c.send(header.TCPFlagAck, make([]byte, min(1000, int(edge-uint64(c.peerNxt)))))
		for _, s := range h.out() {
			edge = uint64(s.ack) + uint64(s.wnd)<<shift
			acked = s.ack
		}
	}
	n := h.count("tcp.rcv.edge-retreats")
	t.Logf("acked %d bytes unread, %d retreats", acked-start, n)
	if n == 0 {
		t.Error("the edge never fell back, so it promised past the ring")
	}
	if got := int(acked - start); got > 128<<10+16384+8<<10 {
		t.Errorf("acknowledged %d unread bytes, past the ring", got)
	}
	total := 0
	for {
		b, _ := c.read(t)
		if len(b) == 0 {
			break
		}
		total += len(b)
	}
	if total != int(acked-start) {
		t.Errorf("read %d bytes, acknowledged %d", total, acked-start)
	}
}
