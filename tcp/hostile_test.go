package tcp_test

import (
	"bytes"
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

// TestChallengeAcksAreLimitedPerConnectionAndStackWide: in-window RSTs draw
// challenge ACKs (RFC 5961 §3.2), at most one per connection per 500 ms and
// at most the stack's budget per second over all connections (§7), each
// suppression counted.
func TestChallengeAcksAreLimitedPerConnectionAndStackWide(t *testing.T) {
	h := newSegHarness(t, tcp.Options{})
	const limit = 4
	tcp.SetChallengeLimit(h.s.Gvisor(), limit)
	var conns []*conn
	for i := 0; i < 2*limit; i++ {
		conns = append(conns, h.accept(uint16(80+i), synOptions(1460, 7, true, false, 0)))
	}
	h.out()
	rst := func(c *conn) {
		h.inject(pseg{srcPort: peerPort, dstPort: c.port, seq: c.peerNxt + 100, flags: header.TCPFlagRst})
	}
	// Two RSTs on one connection at once: one challenge.
	rst(conns[0])
	rst(conns[0])
	if n := len(h.out()); n != 1 {
		t.Fatalf("two in-window RSTs drew %d challenge ACKs, want 1", n)
	}
	if got := h.count("tcp.acks.rate-limited"); got != 1 {
		t.Errorf("tcp.acks.rate-limited = %d, want 1", got)
	}
	// One RST on each other connection: the stack's budget runs out.
	for _, c := range conns[1:] {
		rst(c)
	}
	sent := uint64(len(h.out())) + 1
	if sent > limit || sent < limit/2 {
		t.Errorf("%d challenge ACKs in one second over %d connections, want between %d and %d", sent, len(conns), limit/2, limit)
	}
	if got := h.count("tcp.challenge-acks.rate-limited"); got != uint64(len(conns))-sent {
		t.Errorf("tcp.challenge-acks.rate-limited = %d, want %d", got, uint64(len(conns))-sent)
	}
	// A second later every connection may challenge again.
	h.clk.RunFor(time.Second)
	rst(conns[0])
	if n := len(h.out()); n != 1 {
		t.Errorf("a second later: %d challenge ACKs, want 1", n)
	}
}

// TestListenerAnswersSynAckWithReset: a SYN-ACK to a listener carries an
// ACK, which is bad in LISTEN: the answer is RST <SEQ=SEG.ACK> and no
// half-open child (RFC 9293 §3.10.7.2).
func TestListenerAnswersSynAckWithReset(t *testing.T) {
	h := newSegHarness(t, tcp.Options{})
	l, _ := h.listen(80, 8)
	h.inject(pseg{srcPort: peerPort, dstPort: 80, seq: 7000, ack: 123456, flags: header.TCPFlagSyn | header.TCPFlagAck,
		wnd: 65535, opts: synOptions(1460, 7, true, true, 1)})
	r := h.one()
	if r.flags != header.TCPFlagRst || r.seq != 123456 {
		t.Fatalf("answer to a SYN-ACK in LISTEN: %+v, want a bare RST with seq 123456", r)
	}
	// The peer's ACK of a SYN-ACK we never sent finds no child either.
	h.inject(pseg{srcPort: peerPort, dstPort: 80, seq: 7001, ack: 123456, flags: header.TCPFlagAck, wnd: 65535})
	h.clk.RunFor(time.Second)
	if _, _, err := l.Accept(nil); err == nil {
		t.Fatal("a connection was accepted from a SYN-ACK")
	}
	for _, s := range h.out() {
		if s.has(header.TCPFlagSyn) {
			t.Fatalf("listener sent %+v: a half-open child retransmits", s)
		}
	}
}

// TestTimeWaitEndsOnlyForASynWithNewerTimestamp: with timestamps on the old
// incarnation, a SYN ends TIME-WAIT only if its TSval is newer than the last
// seen (RFC 6191 §2); a blind SYN above RCV.NXT without one, or with an
// older one, leaves TIME-WAIT in place.
func TestTimeWaitEndsOnlyForASynWithNewerTimestamp(t *testing.T) {
	h := newSegHarness(t, tcp.Options{})
	c := h.accept(80, synOptions(1460, 7, true, true, 100))
	c.ep.Close()
	h.out()
	c.hostNxt++ // our FIN
	c.send(header.TCPFlagFin|header.TCPFlagAck, nil)
	h.out()
	c.wantState(t, tcp.StateTimeWait)
	syn := func(seq, tsVal uint32, ts bool) {
		h.inject(pseg{srcPort: peerPort, dstPort: 80, seq: seq, flags: header.TCPFlagSyn, wnd: 65535,
			opts: synOptions(1460, 7, true, ts, tsVal)})
	}
	syn(c.peerNxt+100000, 0, false)
	syn(c.peerNxt+200000, c.peerTS-10, true)
	if s := tcp.State(c.ep.State()); s != tcp.StateTimeWait {
		t.Fatalf("state %v after blind SYNs (no TSval, old TSval), want TIME-WAIT", s)
	}
	for _, s := range h.out() {
		if s.has(header.TCPFlagSyn) {
			t.Fatalf("a blind SYN drew a SYN-ACK: %+v", s)
		}
	}
	syn(c.peerNxt+300000, c.peerTS+10, true)
	if s := tcp.State(c.ep.State()); s != tcp.StateClosed {
		t.Fatalf("state %v after a SYN with a newer TSval, want CLOSED (a new incarnation)", s)
	}
	if sa := h.one(); !sa.has(header.TCPFlagSyn) || sa.ack != c.peerNxt+300001 {
		t.Fatalf("new incarnation's SYN: got %+v, want a SYN-ACK", sa)
	}
}

// TestReorderedSegmentPassesPAWSAndTSRecentNeverMovesBack: a retransmission
// fills a hole and sets TS.Recent to its (newer) TSval; the original of the
// next hole, overtaken on the path, arrives with an older TSval. PAWS
// accepts it within the reordering tolerance (issue 10 defect 3), TS.Recent
// stays where it was, and a segment older than the tolerance is still
// dropped (RFC 7323 §5.3).
func TestReorderedSegmentPassesPAWSAndTSRecentNeverMovesBack(t *testing.T) {
	h := newSegHarness(t, tcp.Options{})
	c := h.accept(80, synOptions(1460, 7, true, true, 100))
	base, ts := c.peerNxt, c.peerTS
	seg := func(i int, tsVal uint32) pseg {
		return pseg{srcPort: peerPort, dstPort: 80, seq: base + uint32(i*100), ack: c.hostNxt,
			flags: header.TCPFlagAck, wnd: 65535, opts: tsOption(tsVal, c.hostTS), payload: bytes.Repeat([]byte{byte('a' + i)}, 100)}
	}
	h.inject(seg(2, ts+3)) // out of order: holes at 0 and 1
	h.inject(seg(0, ts+8)) // the retransmission of 0: TS.Recent = ts+8
	h.out()
	h.inject(seg(1, ts+2)) // the original of 1, overtaken
	h.clk.RunFor(time.Second)
	if got := h.count("tcp.drops.paws"); got != 0 {
		t.Fatalf("tcp.drops.paws = %d: a reordered original was dropped", got)
	}
	var last pseg
	for _, s := range h.out() {
		last = s
	}
	if last.ack != base+300 {
		t.Fatalf("ACK %d, want %d (all three segments in)", last.ack, base+300)
	}
	if o := last.tcpOpts(); !o.TS || o.TSEcr != ts+8 {
		t.Fatalf("TSecr %d, want %d: TS.Recent moved back", o.TSEcr, ts+8)
	}
	h.inject(seg(3, ts+8-1000))
	if got := h.count("tcp.drops.paws"); got != 1 {
		t.Fatalf("tcp.drops.paws = %d after a segment 1000 ticks old, want 1", got)
	}
	b, _ := c.read(t)
	if want := string(bytes.Repeat([]byte{'a'}, 100)) + string(bytes.Repeat([]byte{'b'}, 100)) + string(bytes.Repeat([]byte{'c'}, 100)); string(b) != want {
		t.Fatalf("read %d bytes %q..., want the three segments in order", len(b), b[:min(len(b), 8)])
	}
}

// TestEveryFlagByteInEveryState: a segment with each of the 256 flag bytes,
// at the sequence numbers the endpoint expects, reaches an endpoint in each
// state the harness can reach. Nothing panics or hangs (every timer runs
// out afterwards), and in a synchronized state a segment with none of ACK,
// SYN and RST is a counted drop (RFC 9293 §3.10.7.4: no ACK bit, drop).
func TestEveryFlagByteInEveryState(t *testing.T) {
	payload := []byte("0123456789")
	for si, st := range fuzzStates {
		t.Run(st.String(), func(t *testing.T) {
			for f := 0; f < 256; f++ {
				flags := header.TCPFlags(f)
				h := newFzHarness(t)
				if !h.reach(st) {
					t.Fatalf("harness could not reach %v", st)
				}
				before := h.h.Count("tcp.drops.state")
				h.inject(fzSegment(h.peerNxt, h.ourNxt, flags, 65535, fzAckOptions(h.tsVal), payload))
				h.drain()
				synced := si >= 2 // past LISTEN and SYN-SENT
				if synced && flags&(header.TCPFlagAck|header.TCPFlagSyn|header.TCPFlagRst) == 0 && h.h.Count("tcp.drops.state") == before {
					t.Errorf("%v, flags %#02x: segment without ACK not counted as a drop", st, f)
				}
				h.close() // runs every timer out
			}
		})
	}
}

// TestLargeSegmentsKeepEveryByteAndTheWindow: segments of up to 64 KB, as a
// receiver's GRO hands them up or a hostile peer sends them, are taken like
// any other: one overlapping data held out of order joins it without losing
// or doubling a byte, and one past the offered window is cut at its edge,
// the rest left for the peer to send again.
func TestLargeSegmentsKeepEveryByteAndTheWindow(t *testing.T) {
	h := newSegHarness(t, tcp.Options{})
	c := h.accept(80, synOptions(1460, 7, true, false, 0))
	h.out()
	base := c.peerNxt
	const total = 200000 // past the initial 128 KB buffer
	data := make([]byte, total)
	for i := range data {
		data[i] = byte(i*31 + i>>8)
	}
	at := func(off, n int) {
		h.inject(pseg{srcPort: peerPort, dstPort: 80, seq: base + uint32(off), ack: c.hostNxt, flags: header.TCPFlagAck,
			wnd: 65535, payload: data[off : off+n]})
	}
	lastAck := func() uint32 {
		var a uint32
		for _, s := range h.out() {
			a = s.ack
		}
		return a
	}
	at(1460, 1460)   // held out of order
	at(30000, 20000) // held out of order, inside the large segment
	at(62000, 3000)  // held, straddling its end
	out := h.out()
	if len(out) == 0 || out[len(out)-1].ack != base {
		t.Fatalf("%d segments sent, want ACKs of %d (holes at the front)", len(out), 0)
	}
	sack := out[len(out)-1].tcpOpts().SACKBlocks
	want := []header.SACKBlock{{Start: seqnumV(base + 62000), End: seqnumV(base + 65000)},
		{Start: seqnumV(base + 30000), End: seqnumV(base + 50000)}, {Start: seqnumV(base + 1460), End: seqnumV(base + 2920)}}
	if len(sack) != len(want) || sack[0] != want[0] || sack[1] != want[1] || sack[2] != want[2] {
		t.Fatalf("SACK blocks %v, want %v", sack, want)
	}
	at(0, 64000) // overlaps all three
	if got := lastAck(); got != base+65000 {
		t.Fatalf("ACK %d after the large segment, want %d", got-base, 65000)
	}
	// Two more large segments run past the window never read from.
	at(65000, 64000)
	at(129000, 64000)
	edge := lastAck() - base
	if edge >= 129000+64000 || edge < 129000 {
		t.Fatalf("ACK %d after a segment past the window, want within [129000, 193000)", edge)
	}
	readAll := func() []byte {
		var got []byte
		for {
			b, err := c.read(t)
			if err != nil || len(b) == 0 {
				return got
			}
			got = append(got, b...)
		}
	}
	got := readAll()
	if len(got) != int(edge) || !bytes.Equal(got, data[:edge]) {
		t.Fatalf("read %d bytes, want the %d ACKed, as sent", len(got), edge)
	}
	// The peer sends the cut-off rest again, and it all arrives.
	for off := int(edge); off < total; off += 60000 {
		at(off, min(60000, total-off))
	}
	if got := lastAck(); got != base+total {
		t.Fatalf("ACK %d after the resend, want %d", got-base, total)
	}
	rest := readAll()
	if !bytes.Equal(rest, data[edge:]) {
		t.Fatalf("read %d bytes after the resend, want the %d sent", len(rest), total-int(edge))
	}
}
