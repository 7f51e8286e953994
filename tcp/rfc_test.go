package tcp_test

import (
	"testing"
	"time"

	"gvisor.dev/gvisor/pkg/tcpip"
	"gvisor.dev/gvisor/pkg/tcpip/header"

	"github.com/netramp/netramp/stack/tcptest"
	"github.com/netramp/netramp/tcp"
)

func TestPAWSDropsSegmentWithOldTimestamp(t *testing.T) {
	h := newSegHarness(t, tcp.Options{})
	c := h.accept(80, synOptions(1460, 7, true, true, 100))
	c.send(header.TCPFlagAck|header.TCPFlagPsh, []byte("fresh"))
	h.clk.RunFor(time.Second)
	h.out()
	// Same sequence space, older timestamp: PAWS (RFC 7323 §5.3).
	old := pseg{srcPort: peerPort, dstPort: 80, seq: c.peerNxt, ack: c.hostNxt, flags: header.TCPFlagAck | header.TCPFlagPsh,
		wnd: 65535, opts: tsOption(c.peerTS-5000, c.hostTS), payload: []byte("stale")}
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

// TestCardRefusalIsNotCountedInFlight: segments the link refuses were never
// sent, so when credit returns they go as first transmissions at the same
// sequence numbers, not as retransmissions, and nothing is counted lost.
func TestCardRefusalIsNotCountedInFlight(t *testing.T) {
	h := newSegHarness(t, tcp.Options{})
	c := h.accept(80, synOptions(1460, 7, true, false, 0))
	h.link.Refuse = true
	c.write(t, make([]byte, 4000))
	if h.link.Refused == 0 {
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
	h.link.Release()
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
	sack.opts = sackOption(5, 90000)
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

// TestConnectedEndpointsSumTheirOwnPseudoHeader: a connected endpoint checks
// each segment over the pseudo-header of its own four-tuple (RFC 9293 §3.1),
// summed once when it registers: a segment whose checksum was summed for
// another source address is dropped and counted, on an accepted connection
// and an active open alike, and the peer's own segments still land.
func TestConnectedEndpointsSumTheirOwnPseudoHeader(t *testing.T) {
	other := tcpip.AddrFrom4([4]byte{192, 0, 2, 99})
	peer := tcpip.AddrFromSlice(peerAddr.AsSlice())
	// summedFor is s from the peer with its checksum summed as if other
	// had sent it.
	summedFor := func(s pseg) []byte {
		b := tcptest.Frame(other, tcpip.AddrFromSlice(hostAddr.AsSlice()), s.seg())
		ip := header.IPv4(b)
		ip.SetSourceAddress(peer)
		ip.SetChecksum(0)
		ip.SetChecksum(^ip.CalculateChecksum())
		return b
	}
	check := func(t *testing.T, h *segHarness, send func(payload []byte), seg pseg, read func() string) {
		t.Helper()
		h.host.InjectFrame(summedFor(seg))
		if got := h.count("tcp.checksum-errors"); got != 1 {
			t.Fatalf("tcp.checksum-errors = %d after a segment summed for another address, want 1", got)
		}
		if got := read(); got != "" {
			t.Fatalf("read %q from a segment summed for another address", got)
		}
		send([]byte("good"))
		if got := read(); got != "good" {
			t.Fatalf("read %q, want the peer's own segment", got)
		}
	}

	t.Run("accepted", func(t *testing.T) {
		h := newSegHarness(t, tcp.Options{})
		c := h.accept(80, synOptions(1460, 7, true, false, 0))
		seg := pseg{srcPort: peerPort, dstPort: 80, seq: c.peerNxt, ack: c.hostNxt, flags: header.TCPFlagAck | header.TCPFlagPsh,
			wnd: 65535, payload: []byte("forged")}
		check(t, h, func(p []byte) { c.send(header.TCPFlagAck|header.TCPFlagPsh, p) }, seg,
			func() string { b, _ := c.read(t); return string(b) })
	})
	t.Run("active open", func(t *testing.T) {
		h := newSegHarness(t, tcp.Options{})
		ep, _ := h.connect(80)
		syn := h.one()
		h.inject(pseg{srcPort: 80, dstPort: syn.srcPort, seq: 300, ack: syn.seq + 1, flags: header.TCPFlagSyn | header.TCPFlagAck,
			wnd: 65535, opts: synOptions(1460, 7, true, false, 0)})
		if s := tcp.State(ep.State()); s != tcp.StateEstablished {
			t.Fatalf("state %v after the SYN-ACK, want ESTABLISHED", s)
		}
		h.out()
		seq := uint32(301)
		seg := pseg{srcPort: 80, dstPort: syn.srcPort, seq: seq, ack: syn.seq + 1, flags: header.TCPFlagAck | header.TCPFlagPsh,
			wnd: 65535, payload: []byte("forged")}
		read := func() string {
			buf := make([]byte, 64)
			w := tcpip.SliceWriter(buf)
			res, _ := ep.Read(&w, tcpip.ReadOptions{})
			return string(buf[:res.Count])
		}
		check(t, h, func(p []byte) {
			h.inject(pseg{srcPort: 80, dstPort: syn.srcPort, seq: seq, ack: syn.seq + 1, flags: header.TCPFlagAck | header.TCPFlagPsh,
				wnd: 65535, payload: p})
		}, seg, read)
	})
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

func TestSACKBlockCoversAFINHeldOutOfOrder(t *testing.T) {
	h := newSegHarness(t, tcp.Options{})
	c := h.accept(80, synOptions(1460, 7, true, false, 0))
	first := c.peerNxt
	// The peer's last segment, data and FIN, arrives before the one ahead of it.
	h.inject(pseg{srcPort: peerPort, dstPort: 80, seq: first + 1460, ack: c.hostNxt,
		flags: header.TCPFlagAck | header.TCPFlagFin, wnd: 65535, payload: make([]byte, 1000)})
	a := h.one()
	if a.ack != first {
		t.Fatalf("ACK %d, want duplicate ACK %d", a.ack, first)
	}
	// The FIN occupies one sequence number: the block ends past it.
	blocks := a.tcpOpts().SACKBlocks
	if want := first + 1460 + 1000 + 1; len(blocks) != 1 || uint32(blocks[0].Start) != first+1460 || uint32(blocks[0].End) != want {
		t.Fatalf("SACK blocks %v, want [%d, %d)", blocks, first+1460, want)
	}
	c.wantState(t, tcp.StateEstablished)
	// The hole fills: the data and the held FIN are taken together.
	c.send(header.TCPFlagAck, make([]byte, 1460))
	if a := h.one(); a.ack != first+1460+1000+1 || len(a.tcpOpts().SACKBlocks) != 0 {
		t.Fatalf("after the repair: ACK %d with SACK %v, want %d and none", a.ack, a.tcpOpts().SACKBlocks, first+2461)
	}
	c.wantState(t, tcp.StateCloseWait)
	if b, err := c.read(t); len(b) != 2460 || err != nil {
		t.Fatalf("read %d bytes, %v; want 2460", len(b), err)
	}
	if _, err := c.read(t); err == nil {
		t.Fatal("no EOF after the held FIN")
	} else if _, ok := err.(*tcpip.ErrClosedForReceive); !ok {
		t.Fatalf("read after the held FIN: %v, want ErrClosedForReceive", err)
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
	h.link.Credit = 1
	before = h.reg.Snapshot()
	h.inject(pseg{srcPort: peerPort, dstPort: 80, seq: c.peerNxt, ack: c.hostNxt + 4380, flags: header.TCPFlagAck, wnd: 60000})
	d = h.reg.Snapshot().Diff(before)
	if d["tcp.stops.card"] != 1 || d["tcp.stops.cwnd"]+d["tcp.stops.app"]+d["tcp.stops.peer-window"] != 0 {
		t.Fatalf("stops: app %d, peer-window %d, cwnd %d, card %d; want exactly one card",
			d["tcp.stops.app"], d["tcp.stops.peer-window"], d["tcp.stops.cwnd"], d["tcp.stops.card"])
	}
}

func TestRefusedACKIsSentWhenCreditReturns(t *testing.T) {
	h := newSegHarness(t, tcp.Options{})
	c := h.accept(80, synOptions(1460, 7, true, false, 0))
	h.link.Refuse = true
	c.send(header.TCPFlagAck|header.TCPFlagPsh|header.TCPFlagFin, []byte("x"))
	if h.link.Refused == 0 {
		t.Fatal("nothing was refused")
	}
	h.link.Release()
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
	h.link.Refuse = true
	c.write(t, make([]byte, 1000))
	h.link.Refuse = false
	h.clk.RunFor(5 * time.Millisecond)
	segs := h.out()
	if len(segs) != 1 || len(segs[0].payload) != 1000 || segs[0].seq != c.hostNxt {
		t.Fatalf("after the link accepts again: %+v, want the 1000 bytes at %d", segs, c.hostNxt)
	}
}

type bytesReader struct{}

func (bytesReader) Read(p []byte) (int, error) { return len(p), nil }
func (bytesReader) Len() int                   { return 10 }
