package tcp_test

import (
	"testing"
	"time"

	"gvisor.dev/gvisor/pkg/tcpip/header"

	"github.com/netramp/netramp/tcp"
)

// Single crafted segments from a hostile peer (issue 9); the sweeps and
// floods are in host_tests/hostile_test.go.

// TestUnacceptableAckDoesNotMoveTSRecent: a segment acceptable in sequence
// (it overlaps RCV.NXT) but acknowledging data never sent is dropped by the
// ACK check; its TSval, far ahead, must not become TS.Recent (RFC 7323 §4.3
// with RFC 5961 §5), or PAWS drops the real peer's next segment.
func TestUnacceptableAckDoesNotMoveTSRecent(t *testing.T) {
	h := newSegHarness(t, tcp.Options{})
	c := h.accept(80, synOptions(1460, 7, true, true, 100))
	c.send(header.TCPFlagAck|header.TCPFlagPsh, []byte("fresh"))
	h.clk.RunFor(time.Second)
	h.out()
	h.inject(pseg{srcPort: peerPort, dstPort: 80, seq: c.peerNxt - 1, ack: c.hostNxt + 100000,
		flags: header.TCPFlagAck | header.TCPFlagPsh, wnd: 65535,
		opts: tsOption(c.peerTS+1<<31-10, c.hostTS), payload: []byte("xy")})
	h.out()
	c.send(header.TCPFlagAck|header.TCPFlagPsh, []byte("next"))
	h.clk.RunFor(time.Second)
	if got := h.count("tcp.drops.paws"); got != 0 {
		t.Errorf("tcp.drops.paws = %d: the bad-ACK segment moved TS.Recent", got)
	}
	if b, _ := c.read(t); string(b) != "freshnext" {
		t.Errorf("read %q, want %q", b, "freshnext")
	}
}
