package tcp_test

import (
	"testing"
	"time"

	"gvisor.dev/gvisor/pkg/tcpip"
	"gvisor.dev/gvisor/pkg/tcpip/header"

	"github.com/netramp/netramp/tcp"
)

// zeroWindowPeer opens a connection, closes the peer's window and queues
// data, so the host probes.
func zeroWindowPeer(t *testing.T) (*segHarness, *conn) {
	h := newSegHarness(t, tcp.Options{})
	c := h.accept(80, synOptions(1460, 0, true, false, 0))
	h.inject(pseg{srcPort: peerPort, dstPort: 80, seq: c.peerNxt, ack: c.hostNxt, flags: header.TCPFlagAck, wnd: 0})
	c.write(t, make([]byte, 3000))
	h.none()
	return h, c
}

// probes returns the zero-window probes among segs (SND.UNA-1, no data).
func probes(c *conn, segs []pseg) int {
	n := 0
	for _, s := range segs {
		if len(s.payload) == 0 && s.seq == c.hostNxt-1 && !s.has(header.TCPFlagRst) {
			n++
		}
	}
	return n
}

// TestSilentZeroWindowPeerIsGivenUp: a peer that closes its window and then
// answers nothing is abandoned after the retransmission budget of 15 probes
// (about 12 minutes from a 1 s RTO, backoff capped at 60 s), or sooner at the
// user timeout, counted, and the application reads ErrTimeout (issue 9
// defect 6: the probes went on forever).
func TestSilentZeroWindowPeerIsGivenUp(t *testing.T) {
	for _, tc := range []struct {
		userTimeout time.Duration
		probes      int // sent before giving up
		within      time.Duration
	}{
		{0, 15, 13 * time.Minute},
		{30 * time.Second, 4, time.Minute}, // probes at 1, 3, 7, 15 s; the one due at 31 s gives up
	} {
		h, c := zeroWindowPeer(t)
		if tc.userTimeout > 0 {
			ut := tcpip.TCPUserTimeoutOption(tc.userTimeout)
			if err := c.ep.SetSockOpt(&ut); err != nil {
				t.Fatal(err)
			}
		}
		sent, rst := 0, false
		var waited time.Duration
		for ; waited < time.Hour && !rst; waited += time.Second {
			h.clk.RunFor(time.Second)
			segs := h.out()
			sent += probes(c, segs)
			for _, s := range segs {
				rst = rst || s.has(header.TCPFlagRst)
			}
		}
		if !rst {
			t.Fatalf("user timeout %v: no RST after an hour of unanswered probes (%d sent)", tc.userTimeout, sent)
		}
		if sent != tc.probes || waited > tc.within {
			t.Errorf("user timeout %v: gave up after %d probes in %v, want %d within %v", tc.userTimeout, sent, waited, tc.probes, tc.within)
		}
		if n := h.count("tcp.give-ups.zero-window"); n != 1 {
			t.Errorf("user timeout %v: tcp.give-ups.zero-window = %d, want 1", tc.userTimeout, n)
		}
		if _, err := c.read(t); err == nil || err.String() != (&tcpip.ErrTimeout{}).String() {
			t.Errorf("user timeout %v: Read after giving up: %v, want ErrTimeout", tc.userTimeout, err)
		}
	}
}

// TestZeroWindowPeerThatAnswersIsKept is the control: a peer that answers
// every probe with a zero window is a live, slow receiver, kept for as long
// as it answers.
func TestZeroWindowPeerThatAnswersIsKept(t *testing.T) {
	h, c := zeroWindowPeer(t)
	sent := 0
	for i := 0; i < 120; i++ { // two hours
		h.clk.RunFor(time.Minute)
		segs := h.out()
		for _, s := range segs {
			if s.has(header.TCPFlagRst) {
				t.Fatalf("RST after %d answered probes", sent)
			}
		}
		if n := probes(c, segs); n > 0 {
			sent += n
			h.inject(pseg{srcPort: peerPort, dstPort: 80, seq: c.peerNxt, ack: c.hostNxt, flags: header.TCPFlagAck, wnd: 0})
		}
	}
	if sent <= 15 {
		t.Fatalf("%d probes in two hours, want more than the give-up budget", sent)
	}
	if n := h.count("tcp.give-ups.zero-window"); n != 0 {
		t.Errorf("tcp.give-ups.zero-window = %d, want 0", n)
	}
	if _, err := c.read(t); err == nil || err.String() != (&tcpip.ErrWouldBlock{}).String() {
		t.Errorf("Read: %v, want ErrWouldBlock on a live connection", err)
	}
}
