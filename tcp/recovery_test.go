package tcp_test

import (
	"slices"
	"testing"
	"time"

	"gvisor.dev/gvisor/pkg/tcpip"
	"gvisor.dev/gvisor/pkg/tcpip/header"

	"github.com/netramp/netramp/tcp"
)

// TestACKClockedRetransmissionsDoNotSpendTheGiveUpBudget: a recovery that
// retransmits many segments on ACKs, followed by an RTO, must not reset a
// connection; only RTO-timer retransmissions count toward giving up.
func TestACKClockedRetransmissionsDoNotSpendTheGiveUpBudget(t *testing.T) {
	h := newSegHarness(t, tcp.Options{InitialWindow: 64})
	c := h.accept(80, synOptions(1460, 7, true, false, 0))
	const segs = 48
	c.flight(t, segs, segs)
	// The peer got every odd segment: one ACK per arrival, SACKing it
	// (the newest four blocks, newest first).
	h.clk.RunFor(10 * time.Millisecond)
	var edges []uint32
	for i := 1; i < segs; i += 2 {
		st := c.hostNxt + uint32(i*1460)
		edges = append([]uint32{st, st + 1460}, edges...)
		c.ackWith(c.hostNxt, sackOption(edges[:min(len(edges), 8)]...))
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
	c.wantState(t, tcp.StateEstablished)
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
	c.ackWith(c.hostNxt+10*1448, tsOption(c.peerTS, origTS))
	if h.count("tcp.spurious") != 1 {
		t.Fatalf("tcp.spurious = %d, want 1", h.count("tcp.spurious"))
	}
	if got := info().SndCwnd; got < cwnd0 {
		t.Fatalf("cwnd %d after the undo, want at least %d", got, cwnd0)
	}
}

// tailLoss is a connection with an RTT sample of 10 ms that sent three
// segments and had the first two acknowledged: the tail is lost.
func tailLoss(t *testing.T) (*segHarness, *conn) {
	t.Helper()
	h := newSegHarness(t, tcp.Options{})
	c := h.accept(80, synOptions(1460, 7, true, false, 0))
	c.sampleRTT(t, 10*time.Millisecond)
	c.flight(t, 3, 3)
	h.clk.RunFor(10 * time.Millisecond)
	c.hostNxt += 2 * 1460
	c.send(header.TCPFlagAck, nil)
	h.out()
	return h, c
}

func TestTailLossIsProbedBeforeTheRTO(t *testing.T) {
	h, c := tailLoss(t)
	// The probe timeout is 2·SRTT, the delayed-ACK allowance for one
	// segment and the longest ACK gap seen (10 ms): 70 ms, well before the
	// 200 ms minimum RTO.
	h.clk.RunFor(100 * time.Millisecond)
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
	c.wantGiveUp(t, 10*time.Minute, 30*time.Minute)
	if h.count("tcp.give-ups") != 1 || h.count("tcp.rto") != 15 {
		t.Fatalf("give-ups %d after %d RTOs, want 1 after 15", h.count("tcp.give-ups"), h.count("tcp.rto"))
	}
}

// TestOneDSACKAmongRealLossesKeepsTheReduction: five segments are lost and
// retransmitted; the peer then reports one of the five as a duplicate
// (D-SACK, RFC 2883): its original was only late. The other four were real
// losses, so the reduction stands (RFC 9438 §4.9 undoes only a spurious event).
func TestOneDSACKAmongRealLossesKeepsTheReduction(t *testing.T) {
	h, c, seg := sackFlight(t, 20, 20)
	base := seg(0)
	// Segments 5..19 arrive; 0..4 do not.
	for i := 5; i < 20; i++ {
		c.ackWith(base, sackOption(seg(5), seg(i+1)))
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
	c.ackWith(seg(1), sackOption(seg(0), seg(1), seg(5), seg(20)))
	c.ackWith(seg(20), nil)
	if h.count("tcp.spurious") != 0 {
		t.Fatal("one D-SACK undid a recovery with four real losses")
	}
	c.ep.GetSockOpt(&info)
	if info.SndCwnd > reduced+1 {
		t.Fatalf("cwnd went from %d to %d segments: the reduction was undone", reduced, info.SndCwnd)
	}
}

// headLostWithoutSACK is a connection to a peer that declined SACK, with
// eight segments in flight of which the first is lost: every later one draws
// a duplicate ACK of it. It returns what the host sent on the first three.
func headLostWithoutSACK(t *testing.T) (*segHarness, *conn, []pseg) {
	t.Helper()
	h := newSegHarness(t, tcp.Options{InitialWindow: 10})
	c := h.accept(80, synOptions(1460, 7, false, false, 0))
	c.flight(t, 8, 8)
	h.clk.RunFor(5 * time.Millisecond)
	for i := 0; i < 3; i++ {
		c.send(header.TCPFlagAck, nil)
	}
	return h, c, h.out()
}

// TestThirdDuplicateAckRetransmitsWithoutSACK: a peer that declined SACK
// still gets fast retransmit (RFC 5681 §3.2) of the lost segment.
func TestThirdDuplicateAckRetransmitsWithoutSACK(t *testing.T) {
	h, c, rt := headLostWithoutSACK(t)
	if len(rt) == 0 || rt[0].seq != c.hostNxt || len(rt[0].payload) != 1460 {
		t.Fatalf("after three duplicate ACKs: %+v, want a retransmission of [%d, +1460)", rt, c.hostNxt)
	}
	if h.count("tcp.recoveries") != 1 || h.count("tcp.rto") != 0 {
		t.Fatalf("recoveries %d, rto %d", h.count("tcp.recoveries"), h.count("tcp.rto"))
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
	// Segment 0 is lost; segments 1.. arrive one by one.
	sentAfter := make([]int, 0, 12)
	for i := 2; i <= 13; i++ {
		c.ackWith(base, sackOption(seg(1), seg(i)))
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

// TestAckRevealingLossDoesNotGrowCwnd: loss detection runs before growth, so
// the ACK whose SACK blocks reveal a loss (RFC 8985 §6.2) reduces the window
// without first growing it or counting growth (RFC 9438 §4.6). The control
// row SACKs one segment less, reveals no loss, and grows by what it SACKed.
func TestAckRevealingLossDoesNotGrowCwnd(t *testing.T) {
	for _, tc := range []struct {
		sacked     int
		recoveries uint64
		grown      uint64
	}{
		{sacked: 3, recoveries: 1, grown: 0},
		{sacked: 2, recoveries: 0, grown: 2 * 1460}, // control: no loss, so growth
	} {
		h := newSegHarness(t, tcp.Options{InitialWindow: 10})
		c := h.accept(80, synOptions(1460, 7, true, false, 0))
		c.flight(t, 20, 10) // the initial window, not the data, stops the sender
		h.clk.RunFor(10 * time.Millisecond)
		before := h.reg.Snapshot()
		// Segment 0 is missing; segments 1..sacked arrived.
		st := c.hostNxt + 1460
		c.ackWith(c.hostNxt, sackOption(st, st+uint32(tc.sacked*1460)))
		d := h.reg.Snapshot().Diff(before)
		var info tcpip.TCPInfoOption
		c.ep.GetSockOpt(&info)
		t.Logf("sacked %d: recoveries %d, grown %d bytes, cwnd %d segments", tc.sacked,
			d["tcp.recoveries"], d["tcp.cwnd.grown.bytes"], info.SndCwnd)
		if d["tcp.recoveries"] != tc.recoveries || d["tcp.cwnd.grown.bytes"] != tc.grown {
			t.Fatalf("sacked %d: recoveries %d, cwnd grown %d bytes; want %d, %d", tc.sacked,
				d["tcp.recoveries"], d["tcp.cwnd.grown.bytes"], tc.recoveries, tc.grown)
		}
		if h.count("tcp.cwnd.max.bytes") > uint64(10+tc.grown/1460)*1460 {
			t.Fatalf("sacked %d: cwnd reached %d bytes", tc.sacked, h.count("tcp.cwnd.max.bytes"))
		}
	}
}

// TestLossProbeTakesAnOrdinarySendOpportunity: a loss probe (RFC 8985 §7.3)
// goes through the same send path as everything else: a full card holds it
// and the opportunity ends on a card stop reported to cc; the probe goes
// when the card has room again.
func TestLossProbeTakesAnOrdinarySendOpportunity(t *testing.T) {
	h, c := tailLoss(t)
	h.link.Full = true
	before := h.reg.Snapshot()
	h.clk.RunFor(100 * time.Millisecond) // the probe timeout: 2·SRTT plus the ACK-gap allowance
	d := h.reg.Snapshot().Diff(before)
	if d["tcp.loss-probes"] != 1 || d["tcp.stops.card"] != 1 {
		t.Fatalf("loss-probes %d, card stops %d; want 1, 1", d["tcp.loss-probes"], d["tcp.stops.card"])
	}
	if segs := h.out(); len(segs) != 0 {
		t.Fatalf("a full card let %d segments out: %+v", len(segs), segs)
	}
	h.link.Full = false
	h.link.Release()
	probe := h.out()
	if len(probe) != 1 || probe[0].seq != c.hostNxt || len(probe[0].payload) != 1460 {
		t.Fatalf("once the card has room: %+v, want the probe resending [%d, +1460)", probe, c.hostNxt)
	}
}

// TestLossProbeSendsNewDataPastAFullCwnd: with unsent data and room in the
// peer's window, the probe is the next new segment, sent though cwnd is full
// (RFC 8985 §7.3), and the opportunity then ends on cwnd.
func TestLossProbeSendsNewDataPastAFullCwnd(t *testing.T) {
	h := newSegHarness(t, tcp.Options{InitialWindow: 3})
	c := h.accept(80, synOptions(1460, 7, true, false, 0))
	c.sampleRTT(t, 10*time.Millisecond)
	c.flight(t, 6, 3) // cwnd's 3
	before := h.reg.Snapshot()
	h.clk.RunFor(60 * time.Millisecond)
	d := h.reg.Snapshot().Diff(before)
	probe := h.out()
	if len(probe) != 1 || probe[0].seq != c.hostNxt+3*1460 || d["tcp.loss-probes"] != 1 {
		t.Fatalf("probes %d, sent %+v; want one new segment at %d", d["tcp.loss-probes"], probe, c.hostNxt+3*1460)
	}
	if d["tcp.stops.cwnd"] != 1 {
		t.Fatalf("stops: cwnd %d, app %d, card %d; want the probe's opportunity to end on cwnd",
			d["tcp.stops.cwnd"], d["tcp.stops.app"], d["tcp.stops.card"])
	}
}

// TestPartialAckRetransmitsTheNextHoleWithoutSACK is RFC 6582 §3.2 step 3:
// inside a NewReno recovery, an ACK that covers the retransmission but not
// the recovery point retransmits the new head at once, not after an RTO.
func TestPartialAckRetransmitsTheNextHoleWithoutSACK(t *testing.T) {
	// Segments 0 and 2 are lost: duplicate ACKs of 0, then the repair of 0
	// brings an ACK up to the second hole.
	h, c, rt := headLostWithoutSACK(t)
	if len(rt) == 0 || rt[0].seq != c.hostNxt {
		t.Fatalf("after three duplicate ACKs: %+v, want the head resent", rt)
	}
	c.hostNxt += 2 * 1460
	c.send(header.TCPFlagAck, nil)
	rt = h.out()
	if len(rt) == 0 || rt[0].seq != c.hostNxt || len(rt[0].payload) != 1460 {
		t.Fatalf("after the partial ACK: %+v, want [%d, +1460) resent at once", rt, c.hostNxt)
	}
	if h.count("tcp.rto") != 0 || h.count("tcp.recoveries") != 1 {
		t.Fatalf("rto %d, recoveries %d", h.count("tcp.rto"), h.count("tcp.recoveries"))
	}
}

// TestLossProbeInRecoveryResendsTheSegmentAtSndUna: a probe that fires in a
// recovery (armed by new data before the recovery began) resends the hole at
// SND.UNA, not the newest segment. If the hole's resend was lost, only a copy
// sent after it shows RACK the loss, and the newest segment's ACK cannot: it
// is a SACK, whose timestamp echo is the left edge's, so it is no RACK sample
// of a resend and the flight waited for the RTO (issue 10's "100M 1ms deep"
// row: a lost fast retransmission at the tail of a transfer cost 200 ms).
func TestLossProbeInRecoveryResendsTheSegmentAtSndUna(t *testing.T) {
	h, c, seg := sackFlight(t, 10, 6)
	base := seg(0)
	// Segments 1..3 arrive, 0 and the tail 4..5 do not: RACK marks 0 lost
	// and its fast retransmission goes (and is lost too).
	for i := 1; i <= 3; i++ {
		c.ackWith(base, sackOption(seg(1), seg(i+1)))
	}
	if h.count("tcp.recoveries") != 1 {
		t.Fatalf("recoveries %d, want 1", h.count("tcp.recoveries"))
	}
	if rtx := h.out(); len(rtx) != 1 || rtx[0].seq != base {
		t.Fatalf("fast retransmission: %+v, want segment 0 at %d", rtx, base)
	}
	h.clk.RunFor(100 * time.Millisecond) // the probe timeout, well before the 200 ms RTO
	probe := h.out()
	if h.count("tcp.loss-probes") != 1 || h.count("tcp.rto") != 0 {
		t.Fatalf("loss-probes %d, rto %d; want 1, 0", h.count("tcp.loss-probes"), h.count("tcp.rto"))
	}
	if len(probe) != 1 || probe[0].seq != base || len(probe[0].payload) != 1460 {
		t.Fatalf("probe %+v, want a resend of the segment at SND.UNA [%d, +1460)", probe, base)
	}
}

// sackFlight opens a SACK connection whose cwnd is iw segments, gives it an
// RTT sample of 10 ms, sends n full segments and lets 10 ms pass; seg(i) is
// segment i's sequence number.
func sackFlight(t *testing.T, iw, n int) (*segHarness, *conn, func(i int) uint32) {
	t.Helper()
	h := newSegHarness(t, tcp.Options{InitialWindow: iw})
	c := h.accept(80, synOptions(1460, 7, true, false, 0))
	c.sampleRTT(t, 10*time.Millisecond)
	c.flight(t, n, n)
	h.clk.RunFor(10 * time.Millisecond)
	base := c.hostNxt
	return h, c, func(i int) uint32 { return base + uint32(i*1460) }
}

// TestOpportunityResendsEveryDueLossFirst: when one ACK shows several
// segments lost, the send opportunity it opens resends them, oldest first,
// before any new data (RFC 6675 §5 step C, RFC 8985 §6.2); a lost segment
// is not left for a later ACK while new data takes its place. The entry ACK
// lets out two segments here: the fast retransmission and one PRR allows.
// With two holes both are resends; the control row, with one hole, shows
// new data following the single resend.
func TestOpportunityResendsEveryDueLossFirst(t *testing.T) {
	for _, tc := range []struct {
		holes int
		want  []uint32 // segments sent on the ACK, by index in the flight
	}{
		{holes: 2, want: []uint32{0, 2}},
		{holes: 1, want: []uint32{0, 20}}, // control: one resend, then new data
	} {
		h := newSegHarness(t, tcp.Options{InitialWindow: 20})
		c := h.accept(80, synOptions(1460, 7, true, false, 0))
		c.sampleRTT(t, 10*time.Millisecond)
		c.write(t, make([]byte, 60*1460))
		if n := len(h.out()); n != 20 {
			t.Fatalf("holes %d: first flight %d segments, want 20", tc.holes, n)
		}
		base := c.hostNxt
		seg := func(i int) uint32 { return base + uint32(i*1460) }
		h.clk.RunFor(10 * time.Millisecond)
		// Segments 0, 2, .. are missing, one per hole; the rest of the 20
		// arrived, so each hole has more than three SACKed above it.
		var edges []uint32
		for i := 0; i < tc.holes; i++ {
			edges = append(edges, seg(2*i+1), seg(2*i+2))
		}
		edges[len(edges)-1] = seg(20)
		c.ackWith(base, sackOption(edges...))
		var got []uint32
		for _, s := range h.out() {
			got = append(got, (s.seq-base)/1460)
		}
		t.Logf("holes %d: sent segments %v (by index)", tc.holes, got)
		if !slices.Equal(got, tc.want) {
			t.Fatalf("holes %d: the ACK sent segments %v (by index), want %v", tc.holes, got, tc.want)
		}
	}
}
