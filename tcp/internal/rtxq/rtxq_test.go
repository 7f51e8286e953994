package rtxq

import (
	"errors"
	"math"
	"math/rand"
	"testing"
	"time"
)

const (
	ms  = time.Millisecond
	mss = 1000
)

// sendN pushes n segments of mss bytes from offset start at time now.
func sendN(t *testing.T, q *Queue, start uint64, n int, now time.Duration) {
	t.Helper()
	for i := 0; i < n; i++ {
		s := start + uint64(i*mss)
		if err := q.Push(s, s+mss, now, false); err != nil {
			t.Fatal(err)
		}
	}
}

// check recomputes every running total from the segments.
func check(t *testing.T, q *Queue) {
	t.Helper()
	var sacked, lost, retx uint64
	sackedSegs := 0
	prev := q.una
	for i, s := range q.live() {
		if s.Start != prev || s.End <= s.Start {
			t.Fatalf("segment %d [%d,%d) not contiguous from %d", i, s.Start, s.End, prev)
		}
		prev = s.End
		if s.Sacked {
			sacked += s.Len()
			sackedSegs++
			if s.Lost || s.RetransInFlight {
				t.Fatalf("segment %d SACKed and lost/in flight", i)
			}
		}
		if s.Lost {
			lost += s.Len()
		}
		if s.RetransInFlight {
			retx += s.Len()
		}
	}
	var want []Range
	for _, s := range q.live() {
		if !s.Sacked {
			continue
		}
		if k := len(want); k > 0 && want[k-1].End == s.Start {
			want[k-1].End = s.End
		} else {
			want = append(want, Range{Start: s.Start, End: s.End})
		}
	}
	if len(want) != len(q.sacked) {
		t.Fatalf("SACKed ranges %v, segments say %v", q.sacked, want)
	}
	for i := range want {
		if want[i] != q.sacked[i] {
			t.Fatalf("SACKed ranges %v, segments say %v", q.sacked, want)
		}
	}
	if q.Len() > 0 && prev != q.nxt {
		t.Fatalf("queue ends at %d, nxt %d", prev, q.nxt)
	}
	if sacked != q.sackedBytes || lost != q.lostBytes || retx != q.retxBytes || sackedSegs != q.sackedSegs {
		t.Fatalf("totals sacked %d/%d lost %d/%d retx %d/%d segs %d/%d",
			sacked, q.sackedBytes, lost, q.lostBytes, retx, q.retxBytes, sackedSegs, q.sackedSegs)
	}
	checkOrder(t, q)
	// pipe <= outstanding + retransmissions, without overflowing the sum.
	if p := q.InFlight(); p > q.Outstanding() && p-q.Outstanding() > q.retxBytes {
		t.Fatalf("pipe %d above outstanding %d", q.InFlight(), q.Outstanding())
	}
}

// checkOrder checks the send-order list and the lost queue against the
// segments' marks: the list holds exactly the markable segments, in send
// order with send times rising; every segment waiting for a resend is queued.
func checkOrder(t *testing.T, q *Queue) {
	t.Helper()
	n := 0
	prevX, prevT := uint64(0), time.Duration(-1)
	last := uint64(noID)
	for id := q.first; id != noID; id = q.at(id).next {
		if !q.held(id) {
			t.Fatalf("list holds id %d, not in the queue", id)
		}
		s := q.at(id)
		if !s.linked || !markable(s) || s.prev != last {
			t.Fatalf("list entry %d [%d,%d) linked %v markable %v", id, s.Start, s.End, s.linked, markable(s))
		}
		if n > 0 && (s.xmit <= prevX || s.LastSent < prevT) {
			t.Fatalf("list out of send order at [%d,%d)", s.Start, s.End)
		}
		prevX, prevT, last = s.xmit, s.LastSent, id
		n++
	}
	if last != q.last {
		t.Fatalf("list tail %d, want %d", q.last, last)
	}
	queued := map[uint64]bool{}
	for _, id := range q.lostQ {
		queued[id] = true
	}
	for i, s := range q.live() {
		if markable(&s) {
			n--
		}
		if waiting(&s) && !queued[q.idOf(i)] {
			t.Fatalf("segment [%d,%d) waits for a resend and is not queued", s.Start, s.End)
		}
	}
	if n != 0 {
		t.Fatalf("list holds %d more than the markable segments", n)
	}
}

func TestPushMustBeContiguousNonEmptyAndBounded(t *testing.T) {
	q := New(2)
	if err := q.Push(100, 100, 0, false); !errors.Is(err, ErrEmptySegment) {
		t.Fatalf("empty push: %v", err)
	}
	if err := q.Push(100, 200, 0, false); err != nil {
		t.Fatal(err)
	}
	if err := q.Push(250, 300, 0, false); !errors.Is(err, ErrNotContiguous) {
		t.Fatalf("gap push: %v", err)
	}
	q.Push(200, 300, 0, false)
	if err := q.Push(300, 400, 0, false); !errors.Is(err, ErrFull) {
		t.Fatalf("push beyond bound: %v", err)
	}
	if q.Una() != 100 || q.Nxt() != 300 || q.Outstanding() != 200 || q.Len() != 2 {
		t.Fatalf("una %d nxt %d len %d", q.Una(), q.Nxt(), q.Len())
	}
}

func TestCumulativeAckRemovesAndSplitsSegments(t *testing.T) {
	q := New(100)
	sendN(t, q, 0, 5, 10*ms)
	r := q.OnAck(2500, nil, 60*ms)
	// The segment the ACK cuts is not delivered whole yet.
	if r.CumAcked != 2500 || r.Delivered != 2500 || r.NewlySacked != 0 || r.DeliveredSegs != 2 {
		t.Fatalf("result %+v", r)
	}
	if o, _ := q.Oldest(); o.Start != 2500 || o.End != 3000 || q.Len() != 3 {
		t.Fatalf("oldest %+v len %d", o, q.Len())
	}
	if r.RTT != 50*ms {
		t.Fatalf("RTT %v, want 50ms", r.RTT)
	}
	check(t, q)
	// An old ACK changes nothing.
	if r := q.OnAck(1000, nil, 70*ms); r.CumAcked != 0 || r.Delivered != 0 {
		t.Fatalf("old ACK: %+v", r)
	}
	// An ACK beyond what was sent is clipped to SND.NXT.
	if r := q.OnAck(1<<40, nil, 80*ms); r.CumAcked != 2500 || q.Len() != 0 || q.Outstanding() != 0 {
		t.Fatalf("ACK beyond nxt: %+v len %d", r, q.Len())
	}
	check(t, q)
}

func TestRTTSampleIsFromTheNewestNeverRetransmittedSegment(t *testing.T) {
	q := New(100)
	q.Push(0, 1000, 0, false)
	q.Push(1000, 2000, 10*ms, false)
	q.Push(2000, 3000, 20*ms, false)
	q.Retransmitted(2000, 200*ms) // newest was resent: Karn excludes it
	r := q.OnAck(3000, nil, 250*ms)
	if r.RTT != 240*ms {
		t.Fatalf("RTT %v, want 240ms from the segment sent at 10ms", r.RTT)
	}
	q2 := New(10)
	q2.Push(0, 1000, 0, false)
	q2.Retransmitted(0, 300*ms)
	if r := q2.OnAck(1000, nil, 350*ms); r.RTT != 0 {
		t.Fatalf("only retransmitted data acked, RTT %v, want none", r.RTT)
	}
}

func TestSackMarksWholeSegmentsAndClipsHostileBlocks(t *testing.T) {
	q := New(100)
	sendN(t, q, 0, 10, 0)
	r := q.OnAck(0, []Range{{3000, 5000}, {7000, 7500}, {9500, 1 << 62}, {math.MaxUint64 - 5, 3}, {6000, 6000}}, 40*ms)
	if r.NewlySacked != 2000 || r.Delivered != 2000 || r.DeliveredSegs != 2 {
		t.Fatalf("result %+v, want 2000 SACKed in 2 segments (7000-7500 is half a segment)", r)
	}
	if q.SackedBytes() != 2000 {
		t.Fatalf("sacked %d", q.SackedBytes())
	}
	check(t, q)
	// The same blocks again deliver nothing new.
	if r := q.OnAck(0, []Range{{3000, 5000}}, 41*ms); r.NewlySacked != 0 {
		t.Fatalf("repeat SACK: %+v", r)
	}
	// A cumulative ACK over SACKed data does not count it twice.
	r = q.OnAck(5000, nil, 50*ms)
	if r.CumAcked != 5000 || r.Delivered != 3000 || r.DeliveredSegs != 3 || q.SackedBytes() != 0 {
		t.Fatalf("cum over sacked: %+v sacked %d", r, q.SackedBytes())
	}
	check(t, q)
}

func TestPipeFollowsRFC6675(t *testing.T) {
	q := New(100)
	sendN(t, q, 0, 10, 0) // 10 segments out
	q.OnAck(0, []Range{{5000, 8000}}, 50*ms)
	q.DetectLoss(50*ms, 50*ms) // segments 0..4 were sent before the SACKed ones
	// RACK.rtt = 50ms, reo_wnd = 0 (three SACKed, no reordering): 0..4 lost now.
	if q.LostBytes() != 5000 {
		t.Fatalf("lost %d, want 5000", q.LostBytes())
	}
	// pipe = 10000 outstanding - 3000 sacked - 5000 lost = 2000.
	if q.InFlight() != 2000 {
		t.Fatalf("pipe %d, want 2000", q.InFlight())
	}
	q.Retransmitted(0, 51*ms)
	q.Retransmitted(1000, 51*ms)
	if q.InFlight() != 4000 {
		t.Fatalf("pipe %d after two retransmissions, want 4000", q.InFlight())
	}
	check(t, q)
}

func TestRackMarksOlderSegmentsLostAfterRTTPlusReoWnd(t *testing.T) {
	q := New(100)
	sendN(t, q, 0, 4, 0)        // 0..3 at t=0
	sendN(t, q, 4000, 1, 10*ms) // 4 at t=10ms
	// Segment 4 SACKed first: one SACKed segment, no reordering seen, not in
	// recovery: reo_wnd = min_RTT/4.
	q.OnAck(0, []Range{{4000, 5000}}, 110*ms) // RACK.rtt = 100ms; no Karn minimum before: this is it
	if q.MinRTT() != 100*ms {
		t.Fatalf("min RTT %v", q.MinRTT())
	}
	lost, timer := q.DetectLoss(110*ms, 100*ms)
	// deadline for 0..3 = 0 + 100 + 25 = 125ms; now 110ms: wait 15ms.
	if lost != 0 || timer != 15*ms {
		t.Fatalf("lost %d timer %v, want 0 and 15ms", lost, timer)
	}
	lost, timer = q.DetectLoss(125*ms, 100*ms)
	if lost != 4000 || timer != 0 {
		t.Fatalf("lost %d timer %v, want 4000 and none", lost, timer)
	}
	// A segment sent after RACK's is never marked by it.
	sendN(t, q, 5000, 1, 130*ms)
	if lost, _ := q.DetectLoss(10*time.Second, 100*ms); lost != 0 {
		t.Fatalf("segment sent after RACK.xmit_ts marked lost")
	}
	check(t, q)
}

func TestReoWndIsZeroWithThreeSackedAndNoReordering(t *testing.T) {
	q := New(100)
	sendN(t, q, 0, 5, 0)
	q.OnAck(0, []Range{{1000, 2000}}, 40*ms)
	if w := q.ReoWnd(40 * ms); w != 10*ms {
		t.Fatalf("reo_wnd %v with one SACKed, want min_RTT/4", w)
	}
	q.OnAck(0, []Range{{1000, 4000}}, 41*ms)
	if w := q.ReoWnd(40 * ms); w != 0 {
		t.Fatalf("reo_wnd %v with three SACKed, want 0 (DupThresh)", w)
	}
	q.SetInRecovery(true)
	if w := q.ReoWnd(40 * ms); w != 0 {
		t.Fatalf("reo_wnd %v in recovery", w)
	}
}

func TestReorderingIsDetectedAndWidensTheWindow(t *testing.T) {
	q := New(100)
	sendN(t, q, 0, 5, 0)
	q.OnAck(0, []Range{{1000, 4000}}, 40*ms) // three SACKed above a hole
	if q.ReorderingSeen() {
		t.Fatal("reordering seen before any")
	}
	// The original of segment 0 arrives late: never retransmitted, below FACK.
	q.OnAck(4000, nil, 45*ms)
	if !q.ReorderingSeen() {
		t.Fatal("late original not taken as reordering (RFC 8985 §6.2 step 3)")
	}
	q.SetInRecovery(true)
	q.DetectLoss(45*ms, 100*ms)
	if w := q.ReoWnd(40 * ms); w != 10*ms {
		t.Fatalf("reo_wnd %v after reordering, want min_RTT/4", w)
	}
}

func TestRetransmittedSegmentDeliveredLateIsNotReordering(t *testing.T) {
	q := New(100)
	sendN(t, q, 0, 5, 0)
	q.OnAck(0, []Range{{1000, 5000}}, 40*ms)
	q.DetectLoss(40*ms, 40*ms)
	q.Retransmitted(0, 41*ms)
	q.OnAck(5000, nil, 81*ms)
	if q.ReorderingSeen() {
		t.Fatal("a retransmission's ACK was taken as reordering")
	}
}

func TestDSACKIsDetectedBelowUnaAndInsideTheSecondBlock(t *testing.T) {
	cases := []struct {
		name  string
		una   uint64
		sacks []Range
		dsack bool
	}{
		{"below una", 3000, []Range{{1000, 2000}}, true},
		{"inside second block", 1000, []Range{{3000, 4000}, {3000, 5000}}, true},
		{"ordinary", 1000, []Range{{3000, 4000}, {5000, 6000}}, false},
		{"none", 1000, nil, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			q := New(100)
			sendN(t, q, 0, 8, 0)
			q.OnAck(1000, nil, 30*ms)
			r := q.OnAck(c.una, c.sacks, 40*ms)
			if r.DSACK != c.dsack {
				t.Fatalf("DSACK %v, want %v", r.DSACK, c.dsack)
			}
			check(t, q)
		})
	}
}

func TestDSACKGrowsReoWndOncePerRoundAndDecaysAfterSixteenRecoveries(t *testing.T) {
	q := New(1000)
	sendN(t, q, 0, 10, 0)
	q.OnAck(2000, []Range{{0, 1000}}, 40*ms) // D-SACK: mult 2
	q.OnAck(3000, []Range{{0, 1000}}, 41*ms) // same round: no change
	q.DetectLoss(41*ms, time.Second)
	if w := q.ReoWnd(40 * ms); w != 20*ms {
		t.Fatalf("reo_wnd %v, want 2·min_RTT/4", w)
	}
	q.OnAck(10000, nil, 50*ms) // the round ends at SND.NXT = 10000
	sendN(t, q, 10000, 1, 50*ms)
	q.OnAck(10000, []Range{{9000, 10000}}, 60*ms) // new round: mult 3
	if w := q.ReoWnd(40 * ms); w != 30*ms {
		t.Fatalf("reo_wnd %v, want 3·min_RTT/4", w)
	}
	q.DetectLoss(60*ms, 20*ms)
	if w := q.ReoWnd(40 * ms); w != 20*ms {
		t.Fatalf("reo_wnd %v, want capped at SRTT 20ms", w)
	}
	q.DetectLoss(60*ms, time.Second)
	for i := 0; i < 15; i++ {
		q.SetInRecovery(true)
		q.SetInRecovery(false)
	}
	if w := q.ReoWnd(40 * ms); w != 30*ms {
		t.Fatalf("reo_wnd %v after 15 recoveries, want still 3·min_RTT/4", w)
	}
	q.SetInRecovery(true)
	q.SetInRecovery(false)
	if w := q.ReoWnd(40 * ms); w != 10*ms {
		t.Fatalf("reo_wnd %v after 16 recoveries, want back to min_RTT/4", w)
	}
}

func TestDSACKOfARetransmissionHintsSpurious(t *testing.T) {
	q := New(100)
	sendN(t, q, 0, 4, 0)
	q.OnAck(0, []Range{{1000, 4000}}, 40*ms)
	q.DetectLoss(40*ms, 40*ms)
	s, _ := q.NextToRetransmit()
	q.Retransmitted(s.Start, 41*ms)
	q.OnAck(4000, nil, 42*ms) // the original arrived: acked 1ms after the resend
	r := q.OnAck(4000, []Range{{0, 1000}}, 81*ms)
	if !r.DSACK || !r.SpuriousHint {
		t.Fatalf("result %+v, want a D-SACK flagged spurious", r)
	}
}

func TestHoleOf180SegmentsDrainsInOrderFromNextToRetransmit(t *testing.T) {
	// Recovery must hand out every lost segment at once (up to what cwnd
	// allows), not one per retransmission timeout.
	q := New(1000)
	sendN(t, q, 0, 400, 0)
	q.OnAck(0, []Range{{180 * mss, 400 * mss}}, 200*ms)
	lost, _ := q.DetectLoss(200*ms, 200*ms)
	if lost != 180*mss {
		t.Fatalf("lost %d, want the whole 180-segment hole", lost)
	}
	for i := 0; i < 180; i++ {
		s, ok := q.NextToRetransmit()
		if !ok || s.Start != uint64(i*mss) {
			t.Fatalf("retransmission %d: %+v ok=%v, want offset %d", i, s, ok, i*mss)
		}
		q.Retransmitted(s.Start, 201*ms)
	}
	if s, ok := q.NextToRetransmit(); ok {
		t.Fatalf("extra retransmission %+v", s)
	}
	check(t, q)
}

func TestAfterRTOEveryOutstandingSegmentComesOutInOrder(t *testing.T) {
	for _, sampled := range []bool{false, true} {
		q := New(1000)
		sendN(t, q, 0, 180, 0)
		if sampled {
			// One earlier ACK gave RACK an RTT; the rest were all lost.
			q2 := q
			q2.OnAck(1000, nil, 100*ms)
		}
		q.OnRTO(time.Second)
		start := q.Una()
		n := 0
		for {
			s, ok := q.NextToRetransmit()
			if !ok {
				break
			}
			if s.Start != start {
				t.Fatalf("sampled=%v: got %d, want %d", sampled, s.Start, start)
			}
			q.Retransmitted(s.Start, time.Second)
			start = s.End
			n++
		}
		if start != q.Nxt() || q.InFlight() != q.Outstanding() {
			t.Fatalf("sampled=%v: drained to %d of %d (%d segs); pipe %d", sampled, start, q.Nxt(), n, q.InFlight())
		}
		check(t, q)
	}
}

func TestRTOKeepsRecentSegmentsInFlight(t *testing.T) {
	q := New(100)
	sendN(t, q, 0, 3, 0)
	q.OnAck(1000, nil, 100*ms) // RACK.rtt 100ms
	sendN(t, q, 3000, 1, 950*ms)
	q.OnRTO(1000 * ms)
	segs := q.Segs(nil)
	if !segs[0].Lost || !segs[1].Lost || segs[2].Lost {
		t.Fatalf("lost marks %v %v %v, want the old two only", segs[0].Lost, segs[1].Lost, segs[2].Lost)
	}
}

func TestRTOWithTheSegmentAtUnaSackedClearsReneggedSacks(t *testing.T) {
	q := New(100)
	sendN(t, q, 0, 3, 0)
	q.OnAck(0, []Range{{0, 1000}, {2000, 3000}}, 40*ms) // 0..1000 SACKed, not cum-acked
	q.OnRTO(time.Second)
	if q.SackedBytes() != 0 || q.LostBytes() != 3000 {
		t.Fatalf("sacked %d lost %d, want scoreboard cleared and all lost", q.SackedBytes(), q.LostBytes())
	}
	check(t, q)
}

func TestRetransmissionDeemedLostAgainIsHandedOutAgain(t *testing.T) {
	q := New(100)
	sendN(t, q, 0, 5, 0)
	q.OnAck(0, []Range{{1000, 4000}}, 100*ms)
	q.DetectLoss(100*ms, 100*ms)
	s, _ := q.NextToRetransmit()
	q.Retransmitted(s.Start, 100*ms)
	sendN(t, q, 5000, 1, 110*ms)
	// Data sent after the retransmission is SACKed well past its RTT.
	q.OnAck(0, []Range{{1000, 4000}, {5000, 6000}}, 320*ms)
	lost, _ := q.DetectLoss(320*ms, 100*ms)
	if lost == 0 {
		t.Fatal("lost retransmission not detected")
	}
	if s2, ok := q.NextToRetransmit(); !ok || s2.Start != 0 {
		t.Fatalf("next %+v %v, want segment 0 again", s2, ok)
	}
	check(t, q)
}

func TestPTOIsTwoSRTTPlusDelayedAckForOneSegment(t *testing.T) {
	q := New(1)
	cases := []struct {
		srtt time.Duration
		segs int
		want time.Duration
	}{
		{0, 3, time.Second},
		{50 * ms, 3, 100 * ms},
		{50 * ms, 1, 300 * ms},
	}
	for _, c := range cases {
		if got := q.PTO(c.srtt, c.segs, 200*ms); got != c.want {
			t.Errorf("PTO(%v, %d) = %v, want %v", c.srtt, c.segs, got, c.want)
		}
	}
}

func TestRandomAcksKeepTotalsConsistent(t *testing.T) {
	r := rand.New(rand.NewSource(3))
	for trial := 0; trial < 100; trial++ {
		q := New(200)
		var now time.Duration
		var off uint64
		for step := 0; step < 400; step++ {
			now += time.Duration(r.Intn(5)) * ms
			switch r.Intn(8) {
			case 0, 1:
				n := uint64(1 + r.Intn(1500))
				if q.Push(off, off+n, now, false) == nil {
					off += n
				}
			case 2:
				var sacks []Range
				for k := r.Intn(4); k > 0; k-- {
					a := q.Una() + uint64(r.Intn(int(q.Outstanding()+2000)+1)) - 1000
					sacks = append(sacks, Range{a, a + uint64(r.Intn(5000))})
				}
				una := q.Una()
				if r.Intn(3) == 0 {
					una += uint64(r.Intn(int(q.Outstanding() + 1)))
				}
				q.OnAck(una, sacks, now)
			case 3:
				q.DetectLoss(now, time.Duration(r.Intn(100))*ms)
			case 4:
				if s, ok := q.NextToRetransmit(); ok {
					q.Retransmitted(s.Start, now)
				}
			case 5:
				if r.Intn(10) == 0 {
					q.OnRTO(now)
				}
				q.SetInRecovery(r.Intn(2) == 0)
			case 6: // a resend the link refused
				if segs := q.Segs(nil); len(segs) > 0 {
					prev := segs[r.Intn(len(segs))]
					q.Retransmitted(prev.Start, now)
					q.RetransmitRefused(prev)
				}
			case 7: // new data the link refused
				if segs := q.Segs(nil); len(segs) > 0 && r.Intn(4) == 0 {
					end := segs[len(segs)-1-r.Intn(min(3, len(segs)))].Start
					if q.Truncate(end) == nil {
						off = q.Nxt()
					}
				}
			}
			check(t, q)
		}
	}
}

func TestRepeatedSackBlocksCostNoStepsOverSackedSegments(t *testing.T) {
	// One hole, then 5000 segments SACKed; the same block comes on every
	// ACK. Each repeat must skip the SACKed run, not walk it.
	q := New(10000)
	sendN(t, q, 0, 5001, 0)
	blk := []Range{{Start: mss, End: 5001 * mss}}
	q.OnAck(0, blk, 40*ms)
	q.DetectLoss(41*ms, 40*ms)
	v0 := q.visits
	for i := 0; i < 20000; i++ {
		if r := q.OnAck(0, blk, 41*ms); r.NewlySacked != 0 {
			t.Fatal("repeat SACKed something")
		}
		q.DetectLoss(41*ms, 40*ms)
	}
	if v := q.visits - v0; v > 2*20000 {
		t.Fatalf("20000 repeated ACKs over a 5000-segment SACKed run visited %d segments: linear in the run", v)
	}
	check(t, q)
}
