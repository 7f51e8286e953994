package tcp_test

import (
	"testing"
	"time"

	"gvisor.dev/gvisor/pkg/tcpip"
	"gvisor.dev/gvisor/pkg/tcpip/header"
	"gvisor.dev/gvisor/pkg/tcpip/network/ipv4"
	"gvisor.dev/gvisor/pkg/waiter"

	"github.com/netramp/netramp/tcp"
)

func TestSynAckAgreesToEveryOfferedOption(t *testing.T) {
	h := newSegHarness(t, tcp.Options{})
	h.listen(80, 8)
	h.inject(pseg{srcPort: peerPort, dstPort: 80, seq: 1, flags: header.TCPFlagSyn, wnd: 65535,
		opts: synOptions(1200, 4, true, true, 777)})
	sa := h.one()
	so := sa.synOpts()
	if !sa.has(header.TCPFlagSyn|header.TCPFlagAck) || sa.ack != 2 {
		t.Fatalf("not a SYN-ACK of seq 1: %+v", sa)
	}
	if so.MSS != 1460 {
		t.Errorf("MSS %d, want 1460 (MTU 1500)", so.MSS)
	}
	if so.WS != 7 {
		t.Errorf("window scale %d, want 7 (6 MiB receive buffer)", so.WS)
	}
	if !so.SACKPermitted {
		t.Error("SACK-permitted missing")
	}
	if !so.TS || so.TSEcr != 777 {
		t.Errorf("timestamps: TS %v, echo %d, want echo 777", so.TS, so.TSEcr)
	}
}

func TestSynAckOffersNothingThePeerDidNotOffer(t *testing.T) {
	h := newSegHarness(t, tcp.Options{})
	h.listen(80, 8)
	h.inject(pseg{srcPort: peerPort, dstPort: 80, seq: 1, flags: header.TCPFlagSyn, wnd: 65535,
		opts: synOptions(1200, -1, false, false, 0)})
	so := h.one().synOpts()
	if so.WS != -1 || so.SACKPermitted || so.TS {
		t.Errorf("SYN-ACK offers options the SYN lacked: %+v", so)
	}
}

func TestWindowIsScaledOnlyAfterTheHandshake(t *testing.T) {
	h := newSegHarness(t, tcp.Options{})
	c := h.accept(80, synOptions(1460, 2, true, false, 0))
	c.send(header.TCPFlagAck|header.TCPFlagPsh, make([]byte, 100))
	h.clk.RunFor(time.Second) // delayed ACK
	a := h.one()
	// 128 KiB initial buffer less 100 unread bytes, scaled by 2^7.
	want := uint16((128<<10 - 100 + 127) >> 7)
	if a.wnd != want && a.wnd != want-1 {
		t.Errorf("window field %d, want about %d (scaled by 7)", a.wnd, want)
	}
}

func TestPAWSDropsSegmentWithOldTimestamp(t *testing.T) {
	h := newSegHarness(t, tcp.Options{})
	c := h.accept(80, synOptions(1460, 7, true, true, 100))
	c.send(header.TCPFlagAck|header.TCPFlagPsh, []byte("fresh"))
	h.clk.RunFor(time.Second)
	h.out()
	// Same sequence space, older timestamp: PAWS (RFC 7323 §5.3).
	old := pseg{srcPort: peerPort, dstPort: 80, seq: c.peerNxt, ack: c.hostNxt, flags: header.TCPFlagAck | header.TCPFlagPsh,
		wnd: 65535, opts: tsOption(c.peerTS-50, c.hostTS), payload: []byte("stale")}
	h.inject(old)
	a := h.one()
	if a.ack != c.peerNxt {
		t.Errorf("ACK %d after a PAWS drop, want %d (data not accepted)", a.ack, c.peerNxt)
	}
	if got := h.count("tcp.drops.paws"); got != 1 {
		t.Errorf("tcp.drops.paws = %d, want 1", got)
	}
	b, _ := c.read(t)
	if string(b) != "fresh" {
		t.Errorf("read %q, want only the fresh bytes", b)
	}
}

func TestInWindowRSTGetsChallengeAckAndExactRSTResets(t *testing.T) {
	h := newSegHarness(t, tcp.Options{})
	c := h.accept(80, synOptions(1460, 7, true, false, 0))
	h.inject(pseg{srcPort: peerPort, dstPort: 80, seq: c.peerNxt + 100, flags: header.TCPFlagRst})
	a := h.one()
	if !a.has(header.TCPFlagAck) || a.has(header.TCPFlagRst) || a.ack != c.peerNxt {
		t.Fatalf("in-window RST: want challenge ACK of %d, got %+v", c.peerNxt, a)
	}
	if s := tcp.State(c.ep.State()); s != tcp.StateEstablished {
		t.Fatalf("state %v after an in-window RST, want ESTABLISHED", s)
	}
	h.inject(pseg{srcPort: peerPort, dstPort: 80, seq: c.peerNxt, flags: header.TCPFlagRst})
	h.none()
	if s := tcp.State(c.ep.State()); s != tcp.StateClosed {
		t.Fatalf("state %v after an exact RST, want CLOSED", s)
	}
	if _, err := c.read(t); err == nil {
		t.Fatal("read after reset succeeded")
	} else if _, ok := err.(*tcpip.ErrConnectionReset); !ok {
		t.Fatalf("read after reset: %v, want connection reset", err)
	}
}

func TestSYNOnEstablishedConnectionGetsChallengeAck(t *testing.T) {
	h := newSegHarness(t, tcp.Options{})
	c := h.accept(80, synOptions(1460, 7, true, false, 0))
	h.inject(pseg{srcPort: peerPort, dstPort: 80, seq: c.peerNxt + 5, flags: header.TCPFlagSyn, wnd: 65535})
	a := h.one()
	if a.has(header.TCPFlagRst) || a.ack != c.peerNxt {
		t.Fatalf("want challenge ACK of %d, got %+v", c.peerNxt, a)
	}
	if tcp.State(c.ep.State()) != tcp.StateEstablished {
		t.Fatal("a SYN reset the connection")
	}
}

func TestAckOfUnsentDataIsDroppedAndAnswered(t *testing.T) {
	h := newSegHarness(t, tcp.Options{})
	c := h.accept(80, synOptions(1460, 7, true, false, 0))
	h.inject(pseg{srcPort: peerPort, dstPort: 80, seq: c.peerNxt, ack: c.hostNxt + 5000, flags: header.TCPFlagAck | header.TCPFlagPsh,
		wnd: 65535, payload: []byte("x")})
	a := h.one()
	if a.ack != c.peerNxt {
		t.Errorf("ACK %d, want %d: data with a bad ACK must be dropped", a.ack, c.peerNxt)
	}
	if h.count("tcp.drops.bad-ack") != 1 {
		t.Errorf("tcp.drops.bad-ack = %d", h.count("tcp.drops.bad-ack"))
	}
}

func TestZeroWindowHoldsDataAndProbes(t *testing.T) {
	h := newSegHarness(t, tcp.Options{})
	c := h.accept(80, synOptions(1460, 0, true, false, 0))
	// The peer closes its window.
	h.inject(pseg{srcPort: peerPort, dstPort: 80, seq: c.peerNxt, ack: c.hostNxt, flags: header.TCPFlagAck, wnd: 0})
	c.write(t, make([]byte, 3000))
	h.none()
	h.clk.RunFor(1500 * time.Millisecond)
	probes := h.out()
	if len(probes) == 0 {
		t.Fatal("no zero-window probe after 1.5 s")
	}
	for _, p := range probes {
		if len(p.payload) != 0 || p.seq != c.hostNxt-1 {
			t.Fatalf("probe %+v: want an empty segment at SND.UNA-1 (%d)", p, c.hostNxt-1)
		}
	}
	// The window opens: the data goes.
	h.inject(pseg{srcPort: peerPort, dstPort: 80, seq: c.peerNxt, ack: c.hostNxt, flags: header.TCPFlagAck, wnd: 65535})
	n := 0
	for _, s := range h.out() {
		n += len(s.payload)
	}
	// Nagle holds the runt until the full segments are acknowledged.
	h.inject(pseg{srcPort: peerPort, dstPort: 80, seq: c.peerNxt, ack: c.hostNxt + uint32(n), flags: header.TCPFlagAck, wnd: 65535})
	for _, s := range h.out() {
		n += len(s.payload)
	}
	if n != 3000 {
		t.Fatalf("sent %d bytes after the window opened, want 3000", n)
	}
}

func TestFinInEstablishedMovesToCloseWaitAndReadsEOF(t *testing.T) {
	h := newSegHarness(t, tcp.Options{})
	c := h.accept(80, synOptions(1460, 7, true, false, 0))
	c.send(header.TCPFlagAck|header.TCPFlagPsh|header.TCPFlagFin, []byte("bye"))
	a := h.one()
	if a.ack != c.peerNxt {
		t.Fatalf("FIN acked at %d, want %d", a.ack, c.peerNxt)
	}
	if s := tcp.State(c.ep.State()); s != tcp.StateCloseWait {
		t.Fatalf("state %v, want CLOSE-WAIT", s)
	}
	if b, _ := c.read(t); string(b) != "bye" {
		t.Fatalf("read %q", b)
	}
	if _, err := c.read(t); err == nil {
		t.Fatal("no EOF after FIN")
	} else if _, ok := err.(*tcpip.ErrClosedForReceive); !ok {
		t.Fatalf("read after FIN: %v, want ErrClosedForReceive", err)
	}
	// Our close sends FIN (LAST-ACK); its ACK closes.
	c.ep.Close()
	f := h.one()
	if !f.has(header.TCPFlagFin) || f.seq != c.hostNxt {
		t.Fatalf("want FIN at %d, got %+v", c.hostNxt, f)
	}
	if s := tcp.State(c.ep.State()); s != tcp.StateLastAck {
		t.Fatalf("state %v, want LAST-ACK", s)
	}
	c.hostNxt++
	c.send(header.TCPFlagAck, nil)
	if s := tcp.State(c.ep.State()); s != tcp.StateClosed {
		t.Fatalf("state %v, want CLOSED", s)
	}
}

func TestActiveCloseGoesThroughFinWaitToTimeWait(t *testing.T) {
	h := newSegHarness(t, tcp.Options{TimeWait: 2 * time.Second})
	c := h.accept(80, synOptions(1460, 7, true, false, 0))
	c.ep.Shutdown(tcpip.ShutdownWrite)
	f := h.one()
	if !f.has(header.TCPFlagFin) {
		t.Fatalf("no FIN: %+v", f)
	}
	if s := tcp.State(c.ep.State()); s != tcp.StateFinWait1 {
		t.Fatalf("state %v, want FIN-WAIT-1", s)
	}
	c.hostNxt++
	c.send(header.TCPFlagAck, nil)
	if s := tcp.State(c.ep.State()); s != tcp.StateFinWait2 {
		t.Fatalf("state %v, want FIN-WAIT-2", s)
	}
	c.send(header.TCPFlagAck|header.TCPFlagFin, nil)
	if a := h.one(); a.ack != c.peerNxt {
		t.Fatalf("FIN not acked: %+v", a)
	}
	if s := tcp.State(c.ep.State()); s != tcp.StateTimeWait {
		t.Fatalf("state %v, want TIME-WAIT", s)
	}
	h.clk.RunFor(3 * time.Second)
	if s := tcp.State(c.ep.State()); s != tcp.StateClosed {
		t.Fatalf("state %v after 2·MSL, want CLOSED", s)
	}
}

func TestSimultaneousCloseGoesThroughClosing(t *testing.T) {
	h := newSegHarness(t, tcp.Options{TimeWait: time.Second})
	c := h.accept(80, synOptions(1460, 7, true, false, 0))
	c.ep.Shutdown(tcpip.ShutdownWrite)
	h.one() // our FIN
	// The peer's FIN crosses ours (it does not ack our FIN).
	c.send(header.TCPFlagAck|header.TCPFlagFin, nil)
	h.one()
	if s := tcp.State(c.ep.State()); s != tcp.StateClosing {
		t.Fatalf("state %v, want CLOSING", s)
	}
	c.hostNxt++
	c.send(header.TCPFlagAck, nil)
	if s := tcp.State(c.ep.State()); s != tcp.StateTimeWait {
		t.Fatalf("state %v, want TIME-WAIT", s)
	}
}

func TestSegmentToNoListenerGetsRST(t *testing.T) {
	h := newSegHarness(t, tcp.Options{})
	h.inject(pseg{srcPort: peerPort, dstPort: 99, seq: 500, flags: header.TCPFlagSyn, wnd: 1000})
	r := h.one()
	if !r.has(header.TCPFlagRst|header.TCPFlagAck) || r.ack != 501 || r.seq != 0 {
		t.Fatalf("want RST/ACK 501 for a SYN to a closed port, got %+v", r)
	}
	h.inject(pseg{srcPort: peerPort, dstPort: 99, seq: 500, ack: 9999, flags: header.TCPFlagAck, wnd: 1000})
	r = h.one()
	if !r.has(header.TCPFlagRst) || r.has(header.TCPFlagAck) || r.seq != 9999 {
		t.Fatalf("want RST seq 9999 for an ACK to a closed port, got %+v", r)
	}
	h.inject(pseg{srcPort: peerPort, dstPort: 99, seq: 500, flags: header.TCPFlagRst})
	h.none()
}

func TestSynCookiesWhenSynQueueIsFull(t *testing.T) {
	h := newSegHarness(t, tcp.Options{})
	l, _ := h.listen(80, 1) // SYN queue of 8
	for i := 0; i < 8; i++ {
		h.inject(pseg{srcPort: uint16(30000 + i), dstPort: 80, seq: 1, flags: header.TCPFlagSyn, wnd: 65535,
			opts: synOptions(1460, 7, true, true, 1)})
	}
	if n := len(h.out()); n != 8 {
		t.Fatalf("%d SYN-ACKs for 8 SYNs", n)
	}
	if h.count("tcp.syn-cookies.sent") != 0 {
		t.Fatal("cookies before the queue was full")
	}
	h.inject(pseg{srcPort: 31000, dstPort: 80, seq: 70, flags: header.TCPFlagSyn, wnd: 65535,
		opts: synOptions(1400, 7, true, true, 1)})
	ck := h.one()
	if h.count("tcp.syn-cookies.sent") != 1 {
		t.Fatal("ninth SYN did not get a cookie")
	}
	if so := ck.synOpts(); so.WS != -1 || so.TS || so.SACKPermitted {
		t.Errorf("cookie SYN-ACK offers options it cannot remember: %+v", so)
	}
	// The cookie's ACK completes the connection (the backlog of 1 has room).
	h.inject(pseg{srcPort: 31000, dstPort: 80, seq: 71, ack: ck.seq + 1, flags: header.TCPFlagAck, wnd: 65535})
	if h.count("tcp.syn-cookies.accepted") != 1 {
		t.Fatalf("cookie ACK not accepted")
	}
	ep, _, err := l.Accept(nil)
	if err != nil {
		t.Fatalf("accept of the cookie connection: %v", err)
	}
	ra, _ := ep.GetRemoteAddress()
	if ra.Port != 31000 {
		t.Fatalf("accepted the wrong connection: %+v", ra)
	}
	// A forged cookie is answered with a RST, not a connection.
	h.inject(pseg{srcPort: 31001, dstPort: 80, seq: 71, ack: 12345, flags: header.TCPFlagAck, wnd: 65535})
	if r := h.one(); !r.has(header.TCPFlagRst) {
		t.Fatalf("forged cookie: want RST, got %+v", r)
	}
}

// TestCardRefusalIsNotCountedInFlight: segments the link refuses were never
// sent, so when credit returns they go as first transmissions at the same
// sequence numbers, not as retransmissions, and nothing is counted lost.
func TestCardRefusalIsNotCountedInFlight(t *testing.T) {
	h := newSegHarness(t, tcp.Options{})
	c := h.accept(80, synOptions(1460, 7, true, false, 0))
	h.link.refuse = true
	c.write(t, make([]byte, 4000))
	if h.link.refused == 0 {
		t.Fatal("the link refused nothing")
	}
	if got := h.count("tcp.card-refusals"); got == 0 {
		t.Fatal("tcp.card-refusals not counted")
	}
	if got := h.count("tcp.sent.bytes"); got != 0 {
		t.Fatalf("tcp.sent.bytes = %d for refused segments", got)
	}
	// An RTO's worth of time: nothing was in flight, so nothing times out.
	h.clk.RunFor(3 * time.Second)
	if got := h.count("tcp.rto"); got != 0 {
		t.Fatalf("%d RTOs for data that was never sent", got)
	}
	h.link.release()
	segs := h.out()
	// Nagle holds the runt until the full segments are acknowledged.
	sent := uint32(0)
	for _, s := range segs {
		sent += uint32(len(s.payload))
	}
	h.inject(pseg{srcPort: peerPort, dstPort: 80, seq: c.peerNxt, ack: c.hostNxt + sent, flags: header.TCPFlagAck, wnd: 65535})
	segs = append(segs, h.out()...)
	n := 0
	next := c.hostNxt
	for _, s := range segs {
		if len(s.payload) == 0 {
			continue
		}
		if s.seq != next {
			t.Fatalf("segment at %d, want %d: refused data was skipped", s.seq, next)
		}
		next += uint32(len(s.payload))
		n += len(s.payload)
	}
	if n != 4000 {
		t.Fatalf("sent %d bytes after credit returned, want 4000", n)
	}
	if got := h.count("tcp.retransmitted.bytes"); got != 0 {
		t.Fatalf("tcp.retransmitted.bytes = %d: refused data was treated as sent", got)
	}
	if got := h.count("tcp.sent.bytes"); got != 4000 {
		t.Fatalf("tcp.sent.bytes = %d, want 4000", got)
	}
}

func TestMalformedHeadersAreCountedNotFatal(t *testing.T) {
	h := newSegHarness(t, tcp.Options{})
	c := h.accept(80, synOptions(1460, 7, true, true, 1))
	base := pseg{srcPort: peerPort, dstPort: 80, seq: c.peerNxt, ack: c.hostNxt, flags: header.TCPFlagAck, wnd: 100}
	// Data offset below 5 words.
	h.injectRaw(base, func(th header.TCP) bool { th.SetDataOffset(8); return true })
	// Data offset beyond the segment.
	h.injectRaw(base, func(th header.TCP) bool { th[12] = 15 << 4; return true })
	// A bad checksum.
	h.injectRaw(base, func(th header.TCP) bool { th.SetChecksum(th.Checksum() + 1); return false })
	// Options overrunning the header: a SACK option claiming 34 bytes.
	bad := base
	bad.opts = []byte{header.TCPOptionSACK, 34, 0, 0, 0, 0, 0, 0, 0, 0}
	h.inject(bad)
	// SACK blocks outside (SND.UNA, SND.NXT].
	sack := base
	sack.opts = make([]byte, 20)
	nn := header.EncodeNOP(sack.opts)
	nn += header.EncodeNOP(sack.opts[nn:])
	nn += header.EncodeSACKBlocks([]header.SACKBlock{{Start: 5, End: 90000}}, sack.opts[nn:])
	sack.opts = sack.opts[:nn]
	h.inject(sack)
	if tcp.State(c.ep.State()) != tcp.StateEstablished {
		t.Fatal("hostile segments broke the connection")
	}
	if h.count("tcp.drops.malformed") < 1 || h.count("tcp.checksum-errors") != 1 || h.count("tcp.drops.bad-sack") != 1 {
		t.Errorf("counters: malformed %d, checksum %d, bad-sack %d", h.count("tcp.drops.malformed"),
			h.count("tcp.checksum-errors"), h.count("tcp.drops.bad-sack"))
	}
	c.send(header.TCPFlagAck|header.TCPFlagPsh, []byte("still fine"))
	if b, _ := c.read(t); string(b) != "still fine" {
		t.Fatalf("read %q after hostile input", b)
	}
}

// TestOutOfOrderStoreHoldsTheWholeAdvertisedWindow: with the first segment
// of a window lost, every other byte the window allowed is kept (RFC 9293
// §3.10.7.4 lets a receiver keep them; dropping them turns one loss into a
// window's worth), and the hole's repair delivers the whole window.
func TestOutOfOrderStoreHoldsTheWholeAdvertisedWindow(t *testing.T) {
	h := newSegHarness(t, tcp.Options{})
	c := h.accept(80, synOptions(1460, 7, true, false, 0))
	// One byte, read at once, so the delayed ACK shows the full window.
	c.send(header.TCPFlagAck|header.TCPFlagPsh, []byte{1})
	c.read(t)
	h.clk.RunFor(time.Second)
	wnd := 0
	for _, s := range h.out() {
		wnd = int(s.wnd) << 7
	}
	if wnd < 64<<10 {
		t.Fatalf("advertised window %d", wnd)
	}
	const mss = 1460
	first := c.peerNxt
	sent := 0
	for off := mss; off+mss <= wnd; off += mss {
		h.inject(pseg{srcPort: peerPort, dstPort: 80, seq: first + uint32(off), ack: c.hostNxt,
			flags: header.TCPFlagAck, wnd: 65535, payload: make([]byte, mss)})
		sent = off + mss
	}
	h.out()
	if got := h.count("tcp.drops.ooo-full"); got != 0 {
		t.Fatalf("%d out-of-order bytes dropped inside the advertised window of %d", got, wnd)
	}
	h.inject(pseg{srcPort: peerPort, dstPort: 80, seq: first, ack: c.hostNxt, flags: header.TCPFlagAck, wnd: 65535,
		payload: make([]byte, mss)})
	var acked uint32
	for _, s := range h.out() {
		acked = s.ack
	}
	if want := first + uint32(sent); acked != want {
		t.Fatalf("after the hole filled the ACK is %d, want %d (%d bytes)", acked, want, sent)
	}
}

// TestACKClockedRetransmissionsDoNotSpendTheGiveUpBudget: a recovery that
// retransmits many segments on ACKs, followed by an RTO, must not reset a
// connection; only RTO-timer retransmissions count toward giving up.
func TestACKClockedRetransmissionsDoNotSpendTheGiveUpBudget(t *testing.T) {
	h := newSegHarness(t, tcp.Options{InitialWindow: 64})
	c := h.accept(80, synOptions(1460, 7, true, false, 0))
	const segs = 48
	c.write(t, make([]byte, segs*1460))
	out := h.out()
	if len(out) != segs {
		t.Fatalf("sent %d segments, want %d", len(out), segs)
	}
	// The peer got every odd segment: one ACK per arrival, SACKing it.
	h.clk.RunFor(10 * time.Millisecond)
	var blocks []header.SACKBlock
	for i := 1; i < segs; i += 2 {
		st := c.hostNxt + uint32(i*1460)
		blocks = append([]header.SACKBlock{{Start: seqnumV(st), End: seqnumV(st + 1460)}}, blocks...)
		opt := make([]byte, 40)
		n := header.EncodeNOP(opt)
		n += header.EncodeNOP(opt[n:])
		n += header.EncodeSACKBlocks(blocks[:min(len(blocks), 4)], opt[n:])
		h.inject(pseg{srcPort: peerPort, dstPort: 80, seq: c.peerNxt, ack: c.hostNxt, flags: header.TCPFlagAck,
			wnd: 65535, opts: opt[:n]})
		h.clk.RunFor(100 * time.Microsecond)
	}
	h.clk.RunFor(50 * time.Millisecond) // RACK's reorder timer
	retrans := h.count("tcp.retransmitted.bytes") / 1460
	if retrans <= 15 {
		t.Fatalf("only %d retransmissions; the test needs more than the give-up budget", retrans)
	}
	h.out()
	// Nothing more arrives: the RTO fires once, and the connection lives on.
	h.clk.RunFor(1500 * time.Millisecond)
	if h.count("tcp.rto") == 0 {
		t.Fatal("no RTO fired")
	}
	for _, s := range h.out() {
		if s.has(header.TCPFlagRst) {
			t.Fatalf("connection reset after %d ACK-clocked retransmissions and one RTO", retrans)
		}
	}
	if st := tcp.State(c.ep.State()); st != tcp.StateEstablished {
		t.Fatalf("state %v, want ESTABLISHED", st)
	}
}

func TestDelayedAckCoversAtMostTwoFullSegments(t *testing.T) {
	h := newSegHarness(t, tcp.Options{})
	c := h.accept(80, synOptions(1460, 7, true, false, 0))
	c.send(header.TCPFlagAck, make([]byte, 1460))
	h.none() // one full segment: the ACK may wait
	c.send(header.TCPFlagAck, make([]byte, 1460))
	if a := h.one(); a.ack != c.peerNxt {
		t.Fatalf("second full segment: ACK %d, want %d at once", a.ack, c.peerNxt)
	}
	c.send(header.TCPFlagAck, make([]byte, 1460))
	h.none()
	h.clk.RunFor(39 * time.Millisecond)
	h.none()
	h.clk.RunFor(2 * time.Millisecond)
	if a := h.one(); a.ack != c.peerNxt {
		t.Fatalf("delayed ACK %d, want %d after 40 ms", a.ack, c.peerNxt)
	}
}

func TestOutOfOrderSegmentIsAckedAtOnceWithSACK(t *testing.T) {
	h := newSegHarness(t, tcp.Options{})
	c := h.accept(80, synOptions(1460, 7, true, false, 0))
	h.inject(pseg{srcPort: peerPort, dstPort: 80, seq: c.peerNxt + 1460, ack: c.hostNxt, flags: header.TCPFlagAck,
		wnd: 65535, payload: make([]byte, 1460)})
	a := h.one()
	if a.ack != c.peerNxt {
		t.Fatalf("ACK %d, want duplicate ACK %d", a.ack, c.peerNxt)
	}
	blocks := a.tcpOpts().SACKBlocks
	if len(blocks) != 1 || uint32(blocks[0].Start) != c.peerNxt+1460 || uint32(blocks[0].End) != c.peerNxt+2920 {
		t.Fatalf("SACK blocks %v, want [%d, %d)", blocks, c.peerNxt+1460, c.peerNxt+2920)
	}
	// The hole's repair is acknowledged at once, cumulatively.
	c.send(header.TCPFlagAck, make([]byte, 1460))
	if a := h.one(); a.ack != c.peerNxt+1460 {
		t.Fatalf("after the repair: ACK %d, want %d", a.ack, c.peerNxt+1460)
	}
}

func TestRSTToSynSentRefusesTheConnection(t *testing.T) {
	h := newSegHarness(t, tcp.Options{})
	wq := new(waiter.Queue)
	ep, _ := h.s.Gvisor().NewEndpoint(tcp.ProtocolNumber, ipv4.ProtocolNumber, wq)
	defer ep.Close()
	if err := ep.Connect(tcpip.FullAddress{Addr: tcpip.AddrFromSlice(peerAddr.AsSlice()), Port: 80}); err == nil {
		t.Fatal("Connect returned nil, want ErrConnectStarted")
	}
	syn := h.one()
	if !syn.has(header.TCPFlagSyn) || syn.has(header.TCPFlagAck) {
		t.Fatalf("not a SYN: %+v", syn)
	}
	so := syn.synOpts()
	if so.WS != 7 || !so.SACKPermitted || !so.TS || so.MSS != 1460 {
		t.Errorf("SYN options %+v: want MSS 1460, WS 7, SACK, TS", so)
	}
	h.inject(pseg{srcPort: 80, dstPort: syn.srcPort, seq: 0, ack: syn.seq + 1, flags: header.TCPFlagRst | header.TCPFlagAck})
	if ep.Readiness(waiter.WritableEvents) == 0 {
		t.Fatal("writers not woken by the refusal")
	}
	if _, ok := ep.LastError().(*tcpip.ErrConnectionRefused); !ok {
		t.Fatal("LastError is not connection refused")
	}
}

func TestSimultaneousOpenEstablishes(t *testing.T) {
	h := newSegHarness(t, tcp.Options{})
	wq := new(waiter.Queue)
	ep, _ := h.s.Gvisor().NewEndpoint(tcp.ProtocolNumber, ipv4.ProtocolNumber, wq)
	defer ep.Close()
	ep.Connect(tcpip.FullAddress{Addr: tcpip.AddrFromSlice(peerAddr.AsSlice()), Port: 80})
	syn := h.one()
	// The peer's own SYN crosses ours (RFC 9293 figure 8).
	h.inject(pseg{srcPort: 80, dstPort: syn.srcPort, seq: 300, flags: header.TCPFlagSyn, wnd: 65535,
		opts: synOptions(1460, 7, true, false, 0)})
	sa := h.one()
	if !sa.has(header.TCPFlagSyn|header.TCPFlagAck) || sa.seq != syn.seq || sa.ack != 301 {
		t.Fatalf("want SYN-ACK seq %d ack 301, got %+v", syn.seq, sa)
	}
	if s := tcp.State(ep.State()); s != tcp.StateSynRcvd {
		t.Fatalf("state %v, want SYN-RECEIVED", s)
	}
	h.inject(pseg{srcPort: 80, dstPort: syn.srcPort, seq: 301, ack: syn.seq + 1, flags: header.TCPFlagAck, wnd: 65535})
	if s := tcp.State(ep.State()); s != tcp.StateEstablished {
		t.Fatalf("state %v, want ESTABLISHED", s)
	}
	if err := ep.LastError(); err != nil {
		t.Fatalf("LastError %v", err)
	}
}

func TestSynIsRetransmittedWithBackoffThenTimesOut(t *testing.T) {
	h := newSegHarness(t, tcp.Options{})
	wq := new(waiter.Queue)
	ep, _ := h.s.Gvisor().NewEndpoint(tcp.ProtocolNumber, ipv4.ProtocolNumber, wq)
	defer ep.Close()
	ep.Connect(tcpip.FullAddress{Addr: tcpip.AddrFromSlice(peerAddr.AsSlice()), Port: 80})
	var times []time.Duration
	start := h.clk.Elapsed()
	for i := 0; i < 400; i++ {
		h.clk.RunFor(time.Second)
		for range h.out() {
			times = append(times, h.clk.Elapsed()-start)
		}
	}
	h.out()
	if len(times) != 7 { // the first SYN was read before the loop
		t.Fatalf("%d SYN retransmissions, want 6 (then give up); at %v", len(times)-1, times)
	}
	if _, ok := ep.LastError().(*tcpip.ErrTimeout); !ok {
		t.Fatal("no timeout after the SYN retries")
	}
}

func TestKeepaliveProbesAnIdleConnectionThenGivesUp(t *testing.T) {
	h := newSegHarness(t, tcp.Options{})
	c := h.accept(80, synOptions(1460, 7, true, false, 0))
	idle := tcpip.KeepaliveIdleOption(10 * time.Second)
	intvl := tcpip.KeepaliveIntervalOption(time.Second)
	c.ep.SetSockOpt(&idle)
	c.ep.SetSockOpt(&intvl)
	c.ep.SetSockOptInt(tcpip.KeepaliveCountOption, 3)
	c.ep.SocketOptions().SetKeepAlive(true)
	h.clk.RunFor(9 * time.Second)
	h.none()
	h.clk.RunFor(1500 * time.Millisecond)
	p := h.one()
	if p.seq != c.hostNxt-1 || len(p.payload) != 0 {
		t.Fatalf("keepalive %+v, want an empty segment at SND.NXT-1", p)
	}
	// An answer restarts the idle time.
	c.send(header.TCPFlagAck, nil)
	h.clk.RunFor(9 * time.Second)
	h.none()
	// No answers: 3 probes, then a reset.
	h.clk.RunFor(6 * time.Second)
	segs := h.out()
	if len(segs) < 4 || !segs[len(segs)-1].has(header.TCPFlagRst) {
		t.Fatalf("want 3 probes then RST, got %d segments: %+v", len(segs), segs)
	}
	if tcp.State(c.ep.State()) != tcp.StateClosed {
		t.Fatal("connection survived unanswered keepalives")
	}
}

func TestEachSendOpportunityEndsOnOneStopReason(t *testing.T) {
	// A small peer window: the sender stops on it, never on cwnd.
	h := newSegHarness(t, tcp.Options{})
	c := h.accept(80, synOptions(1460, 0, true, false, 0))
	h.inject(pseg{srcPort: peerPort, dstPort: 80, seq: c.peerNxt, ack: c.hostNxt, flags: header.TCPFlagAck, wnd: 4380})
	before := h.reg.Snapshot()
	c.write(t, make([]byte, 20000))
	d := h.reg.Snapshot().Diff(before)
	if d["tcp.stops.peer-window"] != 1 || d["tcp.stops.cwnd"]+d["tcp.stops.app"]+d["tcp.stops.card"] != 0 {
		t.Fatalf("stops: app %d, peer-window %d, cwnd %d, card %d; want exactly one peer-window",
			d["tcp.stops.app"], d["tcp.stops.peer-window"], d["tcp.stops.cwnd"], d["tcp.stops.card"])
	}
	if n := len(h.out()); n != 3 {
		t.Fatalf("%d segments in a 3-segment window", n)
	}
	// The card's credit ends the next one.
	h.link.credit = 1
	before = h.reg.Snapshot()
	h.inject(pseg{srcPort: peerPort, dstPort: 80, seq: c.peerNxt, ack: c.hostNxt + 4380, flags: header.TCPFlagAck, wnd: 60000})
	d = h.reg.Snapshot().Diff(before)
	if d["tcp.stops.card"] != 1 || d["tcp.stops.cwnd"]+d["tcp.stops.app"]+d["tcp.stops.peer-window"] != 0 {
		t.Fatalf("stops: app %d, peer-window %d, cwnd %d, card %d; want exactly one card",
			d["tcp.stops.app"], d["tcp.stops.peer-window"], d["tcp.stops.cwnd"], d["tcp.stops.card"])
	}
}

// TestSpuriousRTOIsUndoneByTimestamps: an ACK that echoes the timestamp of
// the original transmission, not of the RTO's retransmission, shows the
// timeout was spurious (RFC 3522); the window reduction is undone.
func TestSpuriousRTOIsUndoneByTimestamps(t *testing.T) {
	h := newSegHarness(t, tcp.Options{InitialWindow: 20})
	c := h.accept(80, synOptions(1460, 7, true, true, 1))
	info := func() tcpip.TCPInfoOption {
		var i tcpip.TCPInfoOption
		c.ep.GetSockOpt(&i)
		return i
	}
	cwnd0 := info().SndCwnd
	c.write(t, make([]byte, 10*1448)) // MSS 1460 less the timestamp option
	orig := h.out()
	if len(orig) != 10 {
		t.Fatalf("sent %d segments", len(orig))
	}
	origTS := orig[0].tcpOpts().TSVal
	h.clk.RunFor(1100 * time.Millisecond) // the initial RTO (1 s) fires
	if h.count("tcp.rto") != 1 {
		t.Fatalf("tcp.rto = %d, want 1", h.count("tcp.rto"))
	}
	if info().SndCwnd >= cwnd0 {
		t.Fatalf("cwnd %d after the RTO, want below %d", info().SndCwnd, cwnd0)
	}
	h.out()
	// The original flight's ACK arrives late, echoing the original TSval.
	c.peerTS++
	h.inject(pseg{srcPort: peerPort, dstPort: 80, seq: c.peerNxt, ack: c.hostNxt + 10*1448, flags: header.TCPFlagAck,
		wnd: 65535, opts: tsOption(c.peerTS, origTS)})
	if h.count("tcp.spurious") != 1 {
		t.Fatalf("tcp.spurious = %d, want 1", h.count("tcp.spurious"))
	}
	if got := info().SndCwnd; got < cwnd0 {
		t.Fatalf("cwnd %d after the undo, want at least %d", got, cwnd0)
	}
}

func TestZeroLingerCloseSendsRST(t *testing.T) {
	h := newSegHarness(t, tcp.Options{})
	c := h.accept(80, synOptions(1460, 7, true, false, 0))
	c.ep.SocketOptions().SetLinger(tcpip.LingerOption{Enabled: true, Timeout: 0})
	c.ep.Close()
	r := h.one()
	if !r.has(header.TCPFlagRst) || r.seq != c.hostNxt {
		t.Fatalf("want RST at %d on a zero-linger close, got %+v", c.hostNxt, r)
	}
}

func TestCloseWithUnreadDataSendsRST(t *testing.T) {
	h := newSegHarness(t, tcp.Options{})
	c := h.accept(80, synOptions(1460, 7, true, false, 0))
	c.send(header.TCPFlagAck|header.TCPFlagPsh, []byte("unread"))
	h.out()
	c.ep.Close()
	if r := h.one(); !r.has(header.TCPFlagRst) {
		t.Fatalf("want RST when closing with unread data (RFC 9293 §3.10.4), got %+v", r)
	}
}

func TestRSTInTimeWaitIsIgnored(t *testing.T) {
	h := newSegHarness(t, tcp.Options{TimeWait: 10 * time.Second})
	c := h.accept(80, synOptions(1460, 7, true, false, 0))
	c.ep.Shutdown(tcpip.ShutdownWrite)
	h.one()
	c.hostNxt++
	c.send(header.TCPFlagAck|header.TCPFlagFin, nil)
	h.out()
	if tcp.State(c.ep.State()) != tcp.StateTimeWait {
		t.Fatal("not in TIME-WAIT")
	}
	h.inject(pseg{srcPort: peerPort, dstPort: 80, seq: c.peerNxt, flags: header.TCPFlagRst})
	if tcp.State(c.ep.State()) != tcp.StateTimeWait {
		t.Fatal("a RST ended TIME-WAIT (RFC 1337)")
	}
}

func TestTailLossIsProbedBeforeTheRTO(t *testing.T) {
	h := newSegHarness(t, tcp.Options{})
	c := h.accept(80, synOptions(1460, 7, true, false, 0))
	// One exchange gives the sender an RTT sample of 10 ms.
	c.sampleRTT(t, 10*time.Millisecond)
	// Three segments; the ACK covers two: the tail is lost.
	c.write(t, make([]byte, 3*1460))
	if n := len(h.out()); n != 3 {
		t.Fatalf("sent %d segments", n)
	}
	h.clk.RunFor(10 * time.Millisecond)
	c.hostNxt += 2 * 1460
	c.send(header.TCPFlagAck, nil)
	h.out()
	// The probe timeout is about 2·SRTT, well before the 200 ms minimum RTO.
	h.clk.RunFor(60 * time.Millisecond)
	probe := h.out()
	if len(probe) != 1 || probe[0].seq != c.hostNxt || len(probe[0].payload) != 1460 {
		t.Fatalf("want a loss probe resending [%d, +1460), got %+v", c.hostNxt, probe)
	}
	if h.count("tcp.loss-probes") != 1 || h.count("tcp.rto") != 0 {
		t.Fatalf("loss-probes %d, rto %d", h.count("tcp.loss-probes"), h.count("tcp.rto"))
	}
}

func TestUnansweredRetransmissionsGiveUpAfterTheBudget(t *testing.T) {
	h := newSegHarness(t, tcp.Options{})
	c := h.accept(80, synOptions(1460, 7, true, false, 0))
	c.write(t, make([]byte, 1000))
	h.out()
	h.clk.RunFor(10 * time.Minute)
	if tcp.State(c.ep.State()) == tcp.StateClosed {
		t.Fatal("gave up within 10 minutes")
	}
	h.clk.RunFor(30 * time.Minute)
	if tcp.State(c.ep.State()) != tcp.StateClosed {
		t.Fatalf("still %v after 40 minutes without an answer", tcp.State(c.ep.State()))
	}
	if h.count("tcp.give-ups") != 1 || h.count("tcp.rto") != 15 {
		t.Fatalf("give-ups %d after %d RTOs, want 1 after 15", h.count("tcp.give-ups"), h.count("tcp.rto"))
	}
	if _, err := c.read(t); err == nil {
		t.Fatal("read succeeded after give-up")
	} else if _, ok := err.(*tcpip.ErrTimeout); !ok {
		t.Fatalf("read after give-up: %v, want timeout", err)
	}
}

// TestOneDSACKAmongRealLossesKeepsTheReduction: five segments are lost and
// retransmitted; the peer then reports one of the five as a duplicate
// (D-SACK, RFC 2883): its original was only late. The other four were real
// losses, so the reduction stands (RFC 9438 §4.9 undoes only a spurious event).
func TestOneDSACKAmongRealLossesKeepsTheReduction(t *testing.T) {
	h := newSegHarness(t, tcp.Options{InitialWindow: 20})
	c := h.accept(80, synOptions(1460, 7, true, false, 0))
	// An RTT sample first.
	c.sampleRTT(t, 10*time.Millisecond)
	c.write(t, make([]byte, 20*1460))
	if n := len(h.out()); n != 20 {
		t.Fatalf("sent %d segments", n)
	}
	h.clk.RunFor(10 * time.Millisecond)
	sack := func(blocks ...header.SACKBlock) []byte {
		o := make([]byte, 40)
		n := header.EncodeNOP(o)
		n += header.EncodeNOP(o[n:])
		n += header.EncodeSACKBlocks(blocks, o[n:])
		return o[:n]
	}
	base := c.hostNxt
	seg := func(i int) uint32 { return base + uint32(i*1460) }
	// Segments 5..19 arrive; 0..4 do not.
	for i := 5; i < 20; i++ {
		h.inject(pseg{srcPort: peerPort, dstPort: 80, seq: c.peerNxt, ack: base, flags: header.TCPFlagAck, wnd: 65535,
			opts: sack(header.SACKBlock{Start: seqnumV(seg(5)), End: seqnumV(seg(i + 1))})})
	}
	h.clk.RunFor(20 * time.Millisecond)
	if h.count("tcp.recoveries") != 1 {
		t.Fatalf("recoveries %d", h.count("tcp.recoveries"))
	}
	var info tcpip.TCPInfoOption
	c.ep.GetSockOpt(&info)
	reduced := info.SndCwnd
	h.out()
	// The original of segment 0 was late: cumulative ACK past it plus a
	// D-SACK of it. Then the retransmissions of 1..4 fill the rest.
	h.inject(pseg{srcPort: peerPort, dstPort: 80, seq: c.peerNxt, ack: seg(1), flags: header.TCPFlagAck, wnd: 65535,
		opts: sack(header.SACKBlock{Start: seqnumV(seg(0)), End: seqnumV(seg(1))}, header.SACKBlock{Start: seqnumV(seg(5)), End: seqnumV(seg(20))})})
	h.inject(pseg{srcPort: peerPort, dstPort: 80, seq: c.peerNxt, ack: seg(20), flags: header.TCPFlagAck, wnd: 65535})
	if h.count("tcp.spurious") != 0 {
		t.Fatal("one D-SACK undid a recovery with four real losses")
	}
	c.ep.GetSockOpt(&info)
	if info.SndCwnd > reduced+1 {
		t.Fatalf("cwnd went from %d to %d segments: the reduction was undone", reduced, info.SndCwnd)
	}
}

// TestThirdDuplicateAckRetransmitsWithoutSACK: a peer that declined SACK
// still gets fast retransmit (RFC 5681 §3.2) of the lost segment.
func TestThirdDuplicateAckRetransmitsWithoutSACK(t *testing.T) {
	h := newSegHarness(t, tcp.Options{InitialWindow: 10})
	c := h.accept(80, synOptions(1460, 7, false, false, 0))
	c.write(t, make([]byte, 8*1460))
	if n := len(h.out()); n != 8 {
		t.Fatalf("sent %d segments", n)
	}
	h.clk.RunFor(5 * time.Millisecond)
	// Segment 0 is lost: every later one draws a duplicate ACK of it.
	for i := 0; i < 3; i++ {
		c.send(header.TCPFlagAck, nil)
	}
	rt := h.out()
	if len(rt) == 0 || rt[0].seq != c.hostNxt || len(rt[0].payload) != 1460 {
		t.Fatalf("after three duplicate ACKs: %+v, want a retransmission of [%d, +1460)", rt, c.hostNxt)
	}
	if h.count("tcp.recoveries") != 1 || h.count("tcp.rto") != 0 {
		t.Fatalf("recoveries %d, rto %d", h.count("tcp.recoveries"), h.count("tcp.rto"))
	}
}

func TestClosingListenerResetsConnectionsNotYetAccepted(t *testing.T) {
	h := newSegHarness(t, tcp.Options{})
	l, _ := h.listen(80, 8)
	h.inject(pseg{srcPort: 30001, dstPort: 80, seq: 10, flags: header.TCPFlagSyn, wnd: 65535, opts: synOptions(1460, -1, false, false, 0)})
	sa := h.one()
	h.inject(pseg{srcPort: 30001, dstPort: 80, seq: 11, ack: sa.seq + 1, flags: header.TCPFlagAck, wnd: 65535})
	h.inject(pseg{srcPort: 30002, dstPort: 80, seq: 10, flags: header.TCPFlagSyn, wnd: 65535, opts: synOptions(1460, -1, false, false, 0)})
	h.out()
	l.Close()
	rsts := map[uint16]bool{}
	for _, s := range h.out() {
		if s.has(header.TCPFlagRst) {
			rsts[s.dstPort] = true
		}
	}
	if !rsts[30001] || !rsts[30002] {
		t.Fatalf("RSTs to %v, want both the queued and the half-open connection", rsts)
	}
}

func TestNewSYNAboveTheOldSequenceEndsTimeWait(t *testing.T) {
	h := newSegHarness(t, tcp.Options{TimeWait: time.Minute})
	c := h.accept(80, synOptions(1460, 7, true, false, 0))
	// The host closes first, so it holds TIME-WAIT.
	c.ep.Shutdown(tcpip.ShutdownWrite)
	h.one()
	c.hostNxt++
	c.send(header.TCPFlagAck|header.TCPFlagFin, nil)
	h.out()
	if tcp.State(c.ep.State()) != tcp.StateTimeWait {
		t.Fatal("not in TIME-WAIT")
	}
	// The peer reuses its port at once with a higher sequence number.
	h.inject(pseg{srcPort: peerPort, dstPort: 80, seq: c.peerNxt + 100000, flags: header.TCPFlagSyn, wnd: 65535,
		opts: synOptions(1460, 7, true, false, 0)})
	sa := h.one()
	if !sa.has(header.TCPFlagSyn|header.TCPFlagAck) || sa.ack != c.peerNxt+100001 {
		t.Fatalf("want a SYN-ACK from the listener, got %+v", sa)
	}
	if tcp.State(c.ep.State()) != tcp.StateClosed {
		t.Fatalf("old incarnation still %v", tcp.State(c.ep.State()))
	}
}

func TestRefusedACKIsSentWhenCreditReturns(t *testing.T) {
	h := newSegHarness(t, tcp.Options{})
	c := h.accept(80, synOptions(1460, 7, true, false, 0))
	h.link.refuse = true
	c.send(header.TCPFlagAck|header.TCPFlagPsh|header.TCPFlagFin, []byte("x"))
	if h.link.refused == 0 {
		t.Fatal("nothing was refused")
	}
	h.link.release()
	a := h.one()
	if !a.has(header.TCPFlagAck) || a.ack != c.peerNxt {
		t.Fatalf("want the ACK of the FIN (%d) once credit returns, got %+v", c.peerNxt, a)
	}
}

// TestRefusedDataIsRetriedOnALinkWithoutCredit: a link that refuses writes
// but offers no credit interface (a qdisc) still gets the data once it
// accepts again, without waiting for an RTO.
func TestRefusedDataIsRetriedOnALinkWithoutCredit(t *testing.T) {
	h := newSegHarnessCredit(t, tcp.Options{}, false)
	c := h.accept(80, synOptions(1460, 7, true, false, 0))
	h.link.refuse = true
	c.write(t, make([]byte, 1000))
	h.link.refuse = false
	h.clk.RunFor(5 * time.Millisecond)
	segs := h.out()
	if len(segs) != 1 || len(segs[0].payload) != 1000 || segs[0].seq != c.hostNxt {
		t.Fatalf("after the link accepts again: %+v, want the 1000 bytes at %d", segs, c.hostNxt)
	}
}

// TestRecoverySendsInProportionToDeliveries is PRR (RFC 6937): while the
// pipe is still above ssthresh after a loss, each ACK that delivers data lets
// out about β of what it delivered, instead of a silence until the pipe
// drains and a burst after.
func TestRecoverySendsInProportionToDeliveries(t *testing.T) {
	h := newSegHarness(t, tcp.Options{InitialWindow: 20})
	c := h.accept(80, synOptions(1460, 7, true, false, 0))
	c.sampleRTT(t, 10*time.Millisecond)
	c.write(t, make([]byte, 60*1460))
	out := h.out()
	base := c.hostNxt
	seg := func(i int) uint32 { return base + uint32(i*1460) }
	h.clk.RunFor(10 * time.Millisecond)
	sack := func(end int) []byte {
		o := make([]byte, 40)
		n := header.EncodeNOP(o)
		n += header.EncodeNOP(o[n:])
		n += header.EncodeSACKBlocks([]header.SACKBlock{{Start: seqnumV(seg(1)), End: seqnumV(seg(end))}}, o[n:])
		return o[:n]
	}
	// Segment 0 is lost; segments 1.. arrive one by one.
	sentAfter := make([]int, 0, 12)
	for i := 2; i <= 13; i++ {
		h.inject(pseg{srcPort: peerPort, dstPort: 80, seq: c.peerNxt, ack: base, flags: header.TCPFlagAck, wnd: 65535, opts: sack(i)})
		sentAfter = append(sentAfter, len(h.out()))
	}
	t.Logf("segments released per ACK: %v", sentAfter)
	if h.count("tcp.recoveries") != 1 {
		t.Fatalf("recoveries %d (flight %d)", h.count("tcp.recoveries"), len(out))
	}
	for _, n := range sentAfter {
		if n > 2 {
			t.Fatalf("an ACK released %d segments: %v", n, sentAfter)
		}
	}
	// Recovery begins on the third ACK, with about 16 segments in the pipe
	// and ssthresh about 11: over the next seven deliveries the pipe stays
	// above ssthresh, and PRR lets out about 0.56 segment per delivery; a
	// sender that waits for the pipe to drain sends nothing.
	during := 0
	for _, n := range sentAfter[3:10] {
		during += n
	}
	if during < 2 {
		t.Fatalf("%d segments over the seven deliveries after recovery began (%v), want about 4", during, sentAfter)
	}
}

func TestUserTimeoutEndsAnUnansweredConnectionEarly(t *testing.T) {
	h := newSegHarness(t, tcp.Options{})
	c := h.accept(80, synOptions(1460, 7, true, false, 0))
	ut := tcpip.TCPUserTimeoutOption(5 * time.Second)
	if err := c.ep.SetSockOpt(&ut); err != nil {
		t.Fatal(err)
	}
	c.write(t, make([]byte, 1000))
	h.clk.RunFor(4 * time.Second)
	if tcp.State(c.ep.State()) == tcp.StateClosed {
		t.Fatal("closed before the user timeout")
	}
	h.clk.RunFor(12 * time.Second)
	if tcp.State(c.ep.State()) != tcp.StateClosed {
		t.Fatalf("still %v 16 s into a 5 s user timeout", tcp.State(c.ep.State()))
	}
	if _, err := c.read(t); err == nil {
		t.Fatal("read succeeded")
	} else if _, ok := err.(*tcpip.ErrTimeout); !ok {
		t.Fatalf("read: %v, want timeout", err)
	}
}

func TestAbortResetsAndFailsLaterCalls(t *testing.T) {
	h := newSegHarness(t, tcp.Options{})
	c := h.accept(80, synOptions(1460, 7, true, false, 0))
	c.ep.Abort()
	if r := h.one(); !r.has(header.TCPFlagRst) {
		t.Fatalf("Abort sent %+v, want RST", r)
	}
	var r bytesReader
	if _, err := c.ep.Write(&r, tcpip.WriteOptions{}); err == nil {
		t.Fatal("Write after Abort succeeded")
	}
}

type bytesReader struct{}

func (bytesReader) Read(p []byte) (int, error) { return len(p), nil }
func (bytesReader) Len() int                   { return 10 }
