package tcp_test

import (
	"testing"

	"gvisor.dev/gvisor/pkg/tcpip/header"

	"github.com/netramp/netramp/tcp"
)

// TestSynCookieConnectionKeepsScaleSACKAndTimestamps: a connection completed
// from a SYN cookie (the SYN queue full) still has window scaling, SACK and
// timestamps, carried in the SYN-ACK's TSval, so it takes more than 64 KiB
// in flight (issue 9: cookie connections ran with a 64 KiB window).
func TestSynCookieConnectionKeepsScaleSACKAndTimestamps(t *testing.T) {
	cookieConnectionKeepsScaleAndSACK(t, true)
}

// TestSynCookieConnectionWithoutTimestampsKeepsScaleAndSACK: without
// timestamps the cookie itself carries SACK-permitted and the window scale,
// so such a connection too takes more than 64 KiB in flight and unread,
// reads the peer's scaled window, and reports holes with SACK.
func TestSynCookieConnectionWithoutTimestampsKeepsScaleAndSACK(t *testing.T) {
	cookieConnectionKeepsScaleAndSACK(t, false)
}

// cookieConnectionKeepsScaleAndSACK completes a handshake from a cookie, the
// peer offering window scale 7, SACK and, if ts, timestamps, and checks that
// the connection has each.
func cookieConnectionKeepsScaleAndSACK(t *testing.T, ts bool) {
	h := newSegHarness(t, tcp.Options{})
	l, _ := h.listen(80, 16) // SYN queue of 16
	h.sendSYNs(80, 16)
	h.out()
	c := &conn{h: h, port: 80, peerNxt: 5000, peerTS: 900, ts: ts}
	h.inject(pseg{srcPort: peerPort, dstPort: 80, seq: c.peerNxt, flags: header.TCPFlagSyn, wnd: 65535,
		opts: synOptions(1460, 7, true, ts, c.peerTS)})
	c.peerNxt++
	ck := h.one()
	if h.count("tcp.syn-cookies.sent") != 1 {
		t.Fatal("the SYN did not get a cookie")
	}
	so := ck.synOpts()
	if so.WS < 0 || !so.SACKPermitted || so.TS != ts {
		t.Fatalf("cookie SYN-ACK options %+v: want WS and SACK agreed, TS %v", so, ts)
	}
	c.hostNxt, c.hostTS = ck.seq+1, so.TSVal
	// The completing ACK opens a scaled window of 1 MiB (8192 << 7).
	ack := pseg{srcPort: peerPort, dstPort: 80, seq: c.peerNxt, ack: c.hostNxt, flags: header.TCPFlagAck, wnd: 8192}
	if ts {
		ack.opts = tsOption(c.peerTS, c.hostTS)
	}
	c.h.inject(ack)
	if h.count("tcp.syn-cookies.accepted") != 1 {
		t.Fatal("cookie ACK not accepted")
	}
	ep, _, err := l.Accept(nil)
	if err != nil {
		t.Fatalf("accept: %v", err)
	}
	c.ep = ep

	// 100 KiB in order with no reader: all of it fits the scaled window.
	const n = 100 << 10
	for sent := 0; sent < n; sent += 1000 {
		c.send(header.TCPFlagAck, make([]byte, 1000))
	}
	var last pseg
	for _, s := range h.out() {
		last = s
	}
	if last.ack != c.peerNxt {
		t.Fatalf("host acknowledged up to %d, want %d: the window held less than 100 KiB", last.ack, c.peerNxt)
	}
	if wnd := int(last.wnd) << 7; wnd <= 0 || last.tcpOpts().TS != ts {
		t.Errorf("last ACK: window %d bytes, options %+v; want a scaled window, timestamps %v", wnd, last.tcpOpts(), ts)
	}
	if n, want := tcp.RcvQueueLen(ep), int(c.peerNxt-5001); n != want {
		t.Errorf("%d bytes unread, want all %d sent", n, want)
	}
	// A hole: the ACK carries a SACK block for the segment past it.
	c.peerNxt += 1000
	c.send(header.TCPFlagAck, make([]byte, 1000))
	if o := h.one().tcpOpts(); o.SACKBlocks == nil || uint32(o.SACKBlocks[0].Start) != c.peerNxt-1000 {
		t.Errorf("out-of-order segment: options %+v, want a SACK block", o)
	}
	// The host reads the peer's window with its scale: the initial
	// congestion window's ten segments go out, past the 8192 bytes an
	// unscaled window would allow.
	c.write(t, make([]byte, 200_000))
	var bytes int
	for _, s := range h.out() {
		bytes += len(s.payload)
	}
	if bytes <= 8192 {
		t.Errorf("host sent %d bytes into a 1 MiB scaled window, want its initial window", bytes)
	}
}
