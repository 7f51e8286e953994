package tcp_test

import (
	"testing"

	"gvisor.dev/gvisor/pkg/tcpip"
	"gvisor.dev/gvisor/pkg/tcpip/header"

	"github.com/netramp/netramp/tcp"
)

// TestAdvertisedRightEdgeNeverMovesLeft: with window scaling, every ACK's
// right edge (ACK + window<<scale) is at or past the one before, while
// in-order data of varied sizes fills the window with no reader and then
// while the reader drains it (RFC 9293 §3.8.6, SHLD-14; issue 9 defect 4:
// the edge was rounded from a moving RCV.NXT and fell back by up to 120
// bytes).
func TestAdvertisedRightEdgeNeverMovesLeft(t *testing.T) {
	h := newSegHarness(t, tcp.Options{})
	c := h.accept(80, synOptions(1460, 2, true, false, 0))
	const shift = 7                    // a 6 MiB buffer needs scale 7
	edge := uint64(c.peerNxt) + 0xffff // the SYN-ACK's unscaled window
	var acks uint64
	check := func() {
		for _, s := range h.out() {
			if !s.has(header.TCPFlagAck) {
				continue
			}
			e := uint64(s.ack) + uint64(s.wnd)<<shift
			acks++
			if e < edge {
				t.Fatalf("ACK %d: right edge %d moved left of %d by %d (ack %d, wnd %d)", acks, e, edge, edge-e, s.ack, s.wnd)
			}
			edge = e
		}
	}
	sizes := []int{1448, 1000, 1448, 700, 1448, 1448, 33, 1448}
	i := 0
	fill := func(reads, segs int) {
		for n := 0; n < segs && edge > uint64(c.peerNxt); n++ {
			n := min(sizes[i%len(sizes)], int(edge-uint64(c.peerNxt)))
			i++
			c.send(header.TCPFlagAck, make([]byte, n))
			if reads > 0 && i%reads == 0 {
				if _, err := c.read(t); err != nil {
					t.Fatalf("read: %v", err)
				}
			}
			check()
		}
	}
	fill(0, 1<<20) // no reader: the window closes
	if edge != uint64(c.peerNxt) {
		t.Fatalf("window did not close: edge %d, next %d", edge, c.peerNxt)
	}
	for { // the reader drains it: window updates
		if b, _ := c.read(t); len(b) == 0 {
			break
		}
		check()
	}
	fill(3, 2000) // a reader and a writer: the window moves on
	if acks < 500 {
		t.Fatalf("only %d ACKs checked", acks)
	}
	if n := h.count("tcp.rcv.edge-retreats"); n != 0 {
		t.Errorf("tcp.rcv.edge-retreats = %d, want 0 with the spare unspent", n)
	}
}

// readN reads at most n bytes from c.
func (c *conn) readN(t *testing.T, n int) int {
	t.Helper()
	w := tcpip.SliceWriter(make([]byte, n))
	res, err := c.ep.Read(&w, tcpip.ReadOptions{})
	if err != nil {
		t.Fatalf("read: %v", err)
	}
	return res.Count
}

// TestReadSendsWindowUpdateOnlyOnceTwoSegmentsFit: with the window closed, a
// read that opens it by less than two full segments sends nothing (the
// receiver SWS avoidance of RFC 9293 §3.8.6.2.2, at two segments); the read
// that brings the opening to two segments sends one window update offering
// it.
func TestReadSendsWindowUpdateOnlyOnceTwoSegmentsFit(t *testing.T) {
	h := newSegHarness(t, tcp.Options{ReceiveBufferMax: 16384})
	c := h.accept(80, synOptions(1460, -1, true, false, 0))
	edge := c.peerNxt + 0xffff
	for int32(edge-c.peerNxt) > 0 {
		c.send(header.TCPFlagAck, make([]byte, min(1460, int(edge-c.peerNxt))))
		for _, s := range h.out() {
			edge = s.ack + uint32(s.wnd)
		}
	}
	c.readN(t, 1460+730)
	h.none()
	c.readN(t, 730)
	a := h.one()
	if a.ack != c.peerNxt || a.wnd < 2*1460 {
		t.Fatalf("window update ack %d wnd %d, want ack %d and a window of two segments or more", a.ack, a.wnd, c.peerNxt)
	}
	if n := h.count("tcp.acks.sent.window-update"); n != 1 {
		t.Errorf("tcp.acks.sent.window-update = %d, want 1", n)
	}
}

// TestReadSendsWindowUpdateOnlyOnceASixteenthOfTheBufferFits: with a buffer
// of 128 KiB shut by a reader that lags, 1 KB reads send no update until the
// buffer's free space reaches a sixteenth of it (updateStep, Linux's rule),
// not two segments: a reader draining a full buffer 8 KB at a time sent one
// update per read, each releasing one small GSO packet.
func TestReadSendsWindowUpdateOnlyOnceASixteenthOfTheBufferFits(t *testing.T) {
	h := newSegHarness(t, tcp.Options{})
	c := h.accept(80, synOptions(1460, 7, true, false, 0))
	const shift = 7 // the default 6 MiB maximum needs scale 7
	edge := c.peerNxt + 0xffff
	unread := 0
	for int32(edge-c.peerNxt) > 0 {
		n := min(1460, int(edge-c.peerNxt))
		c.send(header.TCPFlagAck, make([]byte, n))
		unread += n
		for _, s := range h.out() {
			edge = s.ack + uint32(s.wnd)<<shift
		}
	}
	const buf = 128 << 10 // the initial buffer, which a frozen clock never tunes
	if unread < buf {
		t.Fatalf("the window closed after %d bytes, want the buffer's %d or more", unread, buf)
	}
	var got []pseg
	for buf-unread < buf/16 {
		if got = h.out(); len(got) != 0 {
			t.Fatalf("window update with %d bytes free (%+v), want none before %d", buf-unread, got[0], buf/16)
		}
		unread -= c.readN(t, 1024)
	}
	a := h.one()
	if a.ack != c.peerNxt || int(a.wnd)<<shift < buf/16 {
		t.Fatalf("window update ack %d wnd %d, want ack %d and a window of %d or more", a.ack, int(a.wnd)<<shift, c.peerNxt, buf/16)
	}
	if n := h.count("tcp.acks.sent.window-update"); n != 1 {
		t.Errorf("tcp.acks.sent.window-update = %d, want 1", n)
	}
}
