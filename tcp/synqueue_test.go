package tcp_test

import (
	"runtime"
	"testing"
	"time"

	"gvisor.dev/gvisor/pkg/tcpip/header"

	"github.com/netramp/netramp/stack/tcptest"
	"github.com/netramp/netramp/stack/vtest"
	"github.com/netramp/netramp/tcp"
)

// TestHalfOpenConnectionCostsAtMostTwoKiB: a half-open connection is a
// record in the listener's SYN queue, not an endpoint, so each of 4,000 (the
// largest SYN queue) adds at most 2 KiB of live heap (issue 9). The figure
// is heap measured after collections, not time.
func TestHalfOpenConnectionCostsAtMostTwoKiB(t *testing.T) {
	const n, bound = 4000, 2 << 10
	h := tcptest.New(t, tcp.Options{})
	l, _ := h.Listen(80, n+1) // room for the warm-up SYN too
	opts := tcptest.SynOpts(1460, 7, true, true, 1)
	syn := func(i int) {
		h.Inject(tcptest.Seg{SrcPort: uint16(10000 + i), DstPort: 80, Seq: uint32(i) << 16,
			Flags: header.TCPFlagSyn, Wnd: 65535, Opts: opts})
		if i%256 == 0 {
			h.Link.Drain() // the SYN-ACKs, which no one answers
		}
	}
	syn(0) // the stack's and the listener's first-use allocations
	h.Link.Drain()
	before := vtest.LiveHeap()
	for i := 1; i <= n; i++ {
		syn(i)
	}
	h.Link.Drain()
	after := vtest.LiveHeap()
	runtime.KeepAlive(l)
	if c := h.Count("tcp.syn-cookies.sent"); c != 0 {
		t.Fatalf("%d SYNs got cookies: the queue did not hold all %d", c, n)
	}
	per := (int64(after) - int64(before)) / n
	t.Logf("%d bytes of heap per half-open connection", per)
	if per > bound {
		t.Errorf("a half-open connection holds %d bytes of heap, want <= %d", per, bound)
	}
}

// TestSynAckIsRetransmittedWithBackoffThenTheRequestDrops: a request's
// SYN-ACK goes again after 1, 2, 4 ... 32 s (RFC 6298 §5.5 from the initial
// RTO), the SYN again repeats it at once, and after the sixth retransmission
// goes unanswered the request is dropped and counted: a late ACK then finds
// no connection and gets a RST.
func TestSynAckIsRetransmittedWithBackoffThenTheRequestDrops(t *testing.T) {
	h := tcptest.New(t, tcp.Options{})
	h.Listen(80, 8)
	syn := tcptest.Seg{SrcPort: tcptest.PeerPort, DstPort: 80, Seq: 700, Flags: header.TCPFlagSyn, Wnd: 65535,
		Opts: tcptest.SynOpts(1460, 7, true, true, 1)}
	h.Inject(syn)
	sa := h.One()
	h.Inject(syn)
	if again := h.One(); again.Flags != sa.Flags || again.Seq != sa.Seq || again.Ack != 701 {
		t.Fatalf("answer to the SYN again: %+v, want the SYN-ACK %+v", again, sa)
	}
	start := h.Clock.Elapsed()
	var at []time.Duration
	for range 130 {
		h.Clock.RunFor(time.Second)
		for _, s := range h.Out() {
			if s.Has(header.TCPFlagSyn|header.TCPFlagAck) && s.Seq == sa.Seq {
				at = append(at, (h.Clock.Elapsed() - start).Round(time.Second))
			}
		}
	}
	want := []time.Duration{1, 3, 7, 15, 31, 63}
	if len(at) != len(want) {
		t.Fatalf("SYN-ACKs again at %v, want at %v seconds", at, want)
	}
	for i := range want {
		if at[i] != want[i]*time.Second {
			t.Fatalf("SYN-ACKs again at %v, want at %v seconds", at, want)
		}
	}
	if h.Count("tcp.drops.syn-queue-timeout") != 1 || h.Count("tcp.syn-acks.retransmitted") != 6 {
		t.Fatalf("counters %v", h.Counters.Snapshot())
	}
	h.Inject(tcptest.Seg{SrcPort: tcptest.PeerPort, DstPort: 80, Seq: 701, Ack: sa.Seq + 1, Flags: header.TCPFlagAck, Wnd: 65535})
	if r := h.One(); !r.Has(header.TCPFlagRst) {
		t.Fatalf("ACK after the request dropped: %+v, want a RST", r)
	}
}

// TestHalfOpenAnswersAsSynReceived: a request answers as an endpoint in
// SYN-RECEIVED would (RFC 9293 §3.10.7.4 with RFC 5961): a challenge ACK for
// an in-window RST off RCV.NXT or a SYN, a RST for an ACK of something never
// sent, a counted drop for a segment without ACK; a RST at RCV.NXT ends it,
// so the peer's ACK then finds nothing to complete.
func TestHalfOpenAnswersAsSynReceived(t *testing.T) {
	const irs = 700
	h := tcptest.New(t, tcp.Options{})
	l, _ := h.Listen(80, 8)
	seg := func(seq, ack uint32, flags header.TCPFlags) tcptest.Seg {
		return tcptest.Seg{SrcPort: tcptest.PeerPort, DstPort: 80, Seq: seq, Ack: ack, Flags: flags, Wnd: 65535}
	}
	syn := seg(irs, 0, header.TCPFlagSyn)
	syn.Opts = tcptest.SynOpts(1460, -1, false, false, 0)
	h.Inject(syn)
	iss := h.One().Seq
	challenge := func(what string) {
		t.Helper()
		if a := h.One(); a.Flags != header.TCPFlagAck || a.Seq != iss+1 || a.Ack != irs+1 {
			t.Fatalf("%s: answer %+v, want the ACK <SEQ=%d><ACK=%d>", what, a, iss+1, irs+1)
		}
		h.Clock.RunFor(time.Second) // past the per-connection limit
		h.Out()                     // and the SYN-ACK sent again meanwhile
	}
	h.Inject(seg(irs+100, 0, header.TCPFlagRst))
	challenge("in-window RST")
	h.Inject(seg(irs+50, 0, header.TCPFlagSyn))
	challenge("SYN in the window")
	h.Inject(seg(irs+1, iss+99, header.TCPFlagAck))
	if r := h.One(); r.Flags != header.TCPFlagRst || r.Seq != iss+99 {
		t.Fatalf("ACK of unsent data: answer %+v, want RST <SEQ=%d>", r, iss+99)
	}
	drops := h.Count("tcp.drops.state")
	h.Inject(tcptest.Seg{SrcPort: tcptest.PeerPort, DstPort: 80, Seq: irs + 1, Wnd: 65535, Payload: []byte("x")})
	h.None()
	if h.Count("tcp.drops.state") != drops+1 {
		t.Fatal("a segment without ACK was not counted as a drop")
	}
	h.Inject(seg(irs+1, 0, header.TCPFlagRst))
	h.None()
	h.Inject(seg(irs+1, iss+1, header.TCPFlagAck))
	if r := h.One(); !r.Has(header.TCPFlagRst) {
		t.Fatalf("ACK after the RST: %+v, want a RST", r)
	}
	if _, _, err := l.Accept(nil); err == nil {
		t.Fatal("a connection reset in SYN-RECEIVED was accepted")
	}
}
