package tcp_test

import (
	"testing"
	"time"

	"gvisor.dev/gvisor/pkg/tcpip"
	"gvisor.dev/gvisor/pkg/tcpip/header"
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
	h.sendSYNs(80, 8)
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
	if so := ck.synOpts(); so.WS != 7 || !so.TS || !so.SACKPermitted {
		t.Errorf("cookie SYN-ACK to a SYN with timestamps: %+v, want WS, TS and SACK agreed", so)
	}
	// Without timestamps the cookie itself keeps window scale and SACK.
	h.inject(pseg{srcPort: 31002, dstPort: 80, seq: 70, flags: header.TCPFlagSyn, wnd: 65535,
		opts: synOptions(1400, 7, true, false, 0)})
	if so := h.one().synOpts(); so.WS != 7 || so.TS || !so.SACKPermitted {
		t.Errorf("cookie SYN-ACK to a SYN without timestamps: %+v, want WS and SACK agreed, no TS", so)
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

func TestRSTToSynSentRefusesTheConnection(t *testing.T) {
	h := newSegHarness(t, tcp.Options{})
	ep, err := h.connect(80)
	if err == nil {
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
	ep, _ := h.connect(80)
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
	ep, _ := h.connect(80)
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
