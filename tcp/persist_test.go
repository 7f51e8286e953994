package tcp_test

import (
	"bytes"
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
		var r bytes.Reader
		r.Reset([]byte{1})
		if _, err := c.ep.Write(&r, tcpip.WriteOptions{}); err == nil || err.String() != (&tcpip.ErrTimeout{}).String() {
			t.Errorf("user timeout %v: Write after giving up: %v, want ErrTimeout", tc.userTimeout, err)
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

// TestSubSegmentWindowIsFilledAtTheOverrideTimeout: a peer that leaves a
// window smaller than a segment (and than half its largest) and announces
// nothing more until data arrives gets the runt that window allows when the
// persist timer runs, RFC 9293 §3.8.6.2.1's override timeout, and the data
// flows on once the peer answers. gVisor's TCP is such a peer: a 4 MB
// transfer to it hung, both ends waiting for the other.
func TestSubSegmentWindowIsFilledAtTheOverrideTimeout(t *testing.T) {
	h := newSegHarness(t, tcp.Options{})
	c := h.accept(80, synOptions(1460, 0, true, false, 0))
	const total = 40000
	c.write(t, make([]byte, total))
	sent := 0
	for _, s := range h.out() {
		sent += len(s.payload)
	}
	if sent == 0 || sent >= total {
		t.Fatalf("first flight of %d bytes, want some of %d", sent, total)
	}
	const small = 1000
	h.inject(pseg{srcPort: peerPort, dstPort: 80, seq: c.peerNxt, ack: c.hostNxt + uint32(sent), flags: header.TCPFlagAck, wnd: small})
	for _, s := range h.out() {
		if len(s.payload) > 0 {
			t.Fatalf("a %d-byte runt went at once into a %d-byte window: sender SWS avoidance holds it", len(s.payload), small)
		}
	}
	var runt []pseg
	for waited := time.Duration(0); len(runt) == 0 && waited < 3*time.Second; waited += 10 * time.Millisecond {
		h.clk.RunFor(10 * time.Millisecond)
		for _, s := range h.out() {
			if len(s.payload) > 0 {
				runt = append(runt, s)
			}
		}
	}
	if len(runt) != 1 || len(runt[0].payload) != small || runt[0].seq != c.hostNxt+uint32(sent) {
		t.Fatalf("within 3 s of a %d-byte window, sent %d data segments, want one of %d bytes at %d", small, len(runt), small, c.hostNxt+uint32(sent))
	}
	if n := h.count("tcp.sws-overrides"); n != 1 {
		t.Errorf("tcp.sws-overrides = %d, want 1", n)
	}
	sent += small
	for round := 0; sent < total && round < 100; round++ {
		h.inject(pseg{srcPort: peerPort, dstPort: 80, seq: c.peerNxt, ack: c.hostNxt + uint32(sent), flags: header.TCPFlagAck, wnd: 65535})
		for _, s := range h.out() {
			sent += len(s.payload)
		}
		h.clk.RunFor(10 * time.Millisecond)
	}
	if sent != total {
		t.Fatalf("sent %d of %d bytes after the window reopened", sent, total)
	}
}
