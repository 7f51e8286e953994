// Package rtxq is the sender's retransmission queue: one entry per segment
// sent and not yet cumulatively acknowledged, with its send times, SACK and
// loss marks. On it run RACK-TLP loss detection (RFC 8985), the RFC 6675
// pipe, and D-SACK detection (RFC 2883). It reads no clock: every event
// carries its time, a time.Duration since the caller's origin.
//
// Offsets are 64-bit stream offsets; the caller converts sequence numbers and
// validates them first. Still, nothing a peer can put in an ACK makes the
// queue panic or grow: SACK blocks outside the outstanding range are clipped,
// and a block covering part of a segment marks nothing (segments are never
// split by SACK), so the entry count is bounded by Push alone. That is a
// departure from RFC 6675 §4's byte-granular scoreboard; it is safe because a
// receiver reports the segments it received, whose edges are ours, and a
// partly SACKed segment is only counted as not delivered: at worst it is
// resent, never dropped.
package rtxq

import (
	"errors"
	"fmt"
	"sort"
	"time"
)

// Range is a half-open range of stream offsets [Start, End): a SACK block.
type Range struct{ Start, End uint64 }

// ErrFull reports a Push beyond the queue's segment bound.
var ErrFull = errors.New("rtxq: queue holds its maximum number of segments")

// ErrNotContiguous reports a Push that does not start where the last ended.
var ErrNotContiguous = errors.New("rtxq: pushed segment is not contiguous with the queue")

// ErrEmptySegment reports a Push with End <= Start. A FIN takes one offset of
// its own, so it is never empty.
var ErrEmptySegment = errors.New("rtxq: empty segment")

// Seg is one segment as sent. Times are the caller's durations since its
// origin. A Lost segment waits for retransmission until Retransmitted; a
// retransmitted one is in flight again and RACK may mark it lost again.
type Seg struct {
	Start, End          uint64
	FirstSent, LastSent time.Duration
	// PrevSent is when the copy before the latest left (FirstSent for the
	// first retransmission); 0 for a segment sent once.
	PrevSent            time.Duration
	Retrans             int
	Sacked, Lost, Acked bool
	Fin                 bool
	// RetransInFlight: a retransmission sent since the segment was last
	// marked lost is outstanding (it counts in pipe, RFC 6675 §4).
	RetransInFlight bool

	xmit       uint64 // send sequence number of the latest transmission (see sentAfter)
	prev, next uint64 // neighbours in the send-order list (sendorder.go)
	linked     bool   // in the send-order list
	queued     bool   // in the lost queue (lostq.go)
}

// Len is End-Start.
func (s Seg) Len() uint64 { return s.End - s.Start }

// AckResult is what one ACK changed.
type AckResult struct {
	CumAcked    uint64        // bytes by which SND.UNA advanced
	NewlySacked uint64        // bytes SACKed by this ACK for the first time
	RTT         time.Duration // Karn-clean sample (newest never-retransmitted segment newly delivered), 0 none
	DSACK       bool          // the first SACK block reports a duplicate (RFC 2883 §4)
	// SpuriousHint: this ACK suggests a retransmission was unnecessary: a
	// D-SACK for a range recently retransmitted, or a retransmitted segment
	// acknowledged sooner than the minimum RTT after its retransmission.
	SpuriousHint bool
	Delivered    uint64 // bytes newly delivered: CumAcked not SACKed before, plus NewlySacked
	// DeliveredSegs is the segments newly delivered whole: cumulatively
	// ACKed and not SACKed before, or newly SACKed. A segment the ACK cuts
	// is counted when its last byte is delivered.
	DeliveredSegs int
	// SpuriousBytes is the retransmitted bytes this ACK shows the peer
	// already had: reported by a D-SACK, or by a timestamp echo older than
	// the retransmission (RFC 3522). Each retransmission counts once.
	SpuriousBytes uint64
}

// DupThresh is RFC 6675's duplicate threshold, used by RFC 8985 §6.2 step 4:
// with this many segments SACKed and no reordering seen, reo_wnd is 0.
const DupThresh = 3

// maxReoMult bounds the D-SACK-driven reo_wnd multiplier; reo_wnd is also
// capped by SRTT, so a larger multiplier would change nothing.
const maxReoMult = 64

// Queue is the retransmission queue. Not safe for concurrent use.
type Queue struct {
	segs    []Seg // live entries are segs[head:], sorted and contiguous
	head    int
	maxSegs int

	una, nxt uint64
	started  bool
	lastSend time.Duration
	sendSeq  uint64 // transmissions so far: stamps each one's order

	base        uint64 // id of segs[0]
	first, last uint64 // ends of the send-order list
	lostQ       []uint64
	// control:rtxq-crawl-field
	// visits counts segments looked at by the per-ACK paths (cumulative
	// ACK, SACK marking, loss detection, the lost queue), so tests can
	// show that cost follows what an ACK changes, not the queue's length.
	visits uint64

	sackedBytes, lostBytes, retxBytes uint64
	sackedSegs                        int

	// RACK state (RFC 8985 §6.1).
	rackValid      bool
	rackXmit       uint64 // send sequence number of RACK's segment
	rackRTT        time.Duration
	fack           uint64
	minRTT         time.Duration
	reorderingSeen bool
	reoMult        int
	reoPersist     int
	dsackRound     uint64
	dsackRoundOn   bool
	inRecovery     bool
	lastSRTT       time.Duration

	// sacked lists the SACKed segments as merged, sorted ranges above
	// SND.UNA, so a block repeated on every ACK costs O(log n) to skip,
	// not one step per segment it covers.
	sacked []Range

	retxRing []retxRec // allocated on the first retransmission
	retxN    int
}

// New returns an empty queue holding at most maxSegs segments (at least 1).
func New(maxSegs int) *Queue {
	if maxSegs < 1 {
		maxSegs = 1
	}
	return &Queue{maxSegs: maxSegs, reoMult: 1, first: noID, last: noID}
}

func (q *Queue) live() []Seg { return q.segs[q.head:] }

// Len is the number of segments held.
func (q *Queue) Len() int { return len(q.segs) - q.head }

// Una is the lowest unacknowledged offset (SND.UNA).
func (q *Queue) Una() uint64 { return q.una }

// Nxt is the offset after the last byte pushed (SND.NXT's high mark).
func (q *Queue) Nxt() uint64 { return q.nxt }

// Outstanding is SND.NXT - SND.UNA: bytes sent and not cumulatively acked.
func (q *Queue) Outstanding() uint64 { return q.nxt - q.una }

// SackedBytes is the bytes SACKed above SND.UNA.
func (q *Queue) SackedBytes() uint64 { return q.sackedBytes }

// LostBytes is the bytes marked lost, not SACKed (retransmitted or not).
func (q *Queue) LostBytes() uint64 { return q.lostBytes }

// InFlight is RFC 6675 §4's pipe: bytes outstanding, less the SACKed and the
// lost, plus the retransmissions in flight.
func (q *Queue) InFlight() uint64 {
	return q.Outstanding() - q.sackedBytes - q.lostBytes + q.retxBytes
}

// MinRTT is the smallest Karn-clean RTT the queue has seen, 0 none yet.
func (q *Queue) MinRTT() time.Duration { return q.minRTT }

// ReorderingSeen reports RACK.reordering_seen (RFC 8985 §6.2 step 3).
func (q *Queue) ReorderingSeen() bool { return q.reorderingSeen }

// Oldest is the segment at SND.UNA.
func (q *Queue) Oldest() (Seg, bool) {
	if q.Len() == 0 {
		return Seg{}, false
	}
	return q.segs[q.head], true
}

// Newest is the last segment pushed and not yet acknowledged (the TLP probe
// candidate when no new data can be sent, RFC 8985 §7.3).
func (q *Queue) Newest() (Seg, bool) {
	if q.Len() == 0 {
		return Seg{}, false
	}
	return q.segs[len(q.segs)-1], true
}

// Segs appends a copy of every segment held to dst (for tests and traces).
func (q *Queue) Segs(dst []Seg) []Seg { return append(dst, q.live()...) }

// Push records newly sent data [start, end), which must continue the queue.
// A send time earlier than the previous send's is taken as the previous's,
// so send times never decrease along the send-order list.
func (q *Queue) Push(start, end uint64, now time.Duration, fin bool) error {
	if end <= start {
		return fmt.Errorf("%w: [%d, %d)", ErrEmptySegment, start, end)
	}
	if q.started && start != q.nxt {
		return fmt.Errorf("%w: start %d, queue ends at %d", ErrNotContiguous, start, q.nxt)
	}
	if q.Len() >= q.maxSegs {
		return fmt.Errorf("%w (%d)", ErrFull, q.maxSegs)
	}
	if !q.started {
		q.started = true
		q.una, q.fack = start, start
	}
	now = q.sent(now)
	if q.head > 0 && q.head >= len(q.segs)/2 {
		n := copy(q.segs, q.live())
		q.segs = q.segs[:n]
		q.base += uint64(q.head)
		q.head = 0
	}
	// control:hosttests-send-order-by-time-1
	// control:tcpinternal-rtxq-send-order-by-time-1
	q.segs = append(q.segs, Seg{Start: start, End: end, FirstSent: now, LastSent: now, Fin: fin, xmit: q.sendSeq})
	q.link(q.idOf(q.Len() - 1))
	q.nxt = end
	return nil
}

// sent stamps a transmission at now: it returns the send time to record,
// never earlier than the previous one, and advances the send sequence.
func (q *Queue) sent(now time.Duration) time.Duration {
	now = max(now, q.lastSend)
	q.lastSend = now
	q.sendSeq++
	return now
}

// find is the index in live of the first segment with End > off.
func (q *Queue) find(off uint64) int {
	l := q.live()
	return sort.Search(len(l), func(i int) bool { return l[i].End > off })
}

// Retransmitted records that the segment starting at start was sent again at
// now (a time before the previous send's is taken as that send's). An offset
// that starts no held segment is ignored. It returns the segment as it was
// before this send, and whether there was one.
func (q *Queue) Retransmitted(start uint64, now time.Duration) (Seg, bool) {
	l := q.live()
	i := q.find(start)
	if i >= len(l) || l[i].Start != start {
		return Seg{}, false
	}
	id := q.idOf(i)
	s := &l[i]
	prev := *s
	now = q.sent(now)
	s.Retrans++
	s.PrevSent, s.LastSent = s.LastSent, now
	// control:hosttests-send-order-by-time-2
	// control:tcpinternal-rtxq-send-order-by-time-2
	s.xmit = q.sendSeq
	if !s.RetransInFlight && !s.Sacked {
		s.RetransInFlight = true
		q.retxBytes += s.Len()
	}
	q.unlink(id)
	if markable(s) {
		q.link(id)
	}
	q.remember(Range{Start: s.Start, End: s.End}, now)
	return prev, true
}

// SetInRecovery tells the queue whether the sender is in fast or RTO
// recovery: RFC 8985 §6.2 step 4 uses a zero reo_wnd in recovery when no
// reordering has been seen, and ages the D-SACK multiplier on each exit.
func (q *Queue) SetInRecovery(in bool) {
	if q.inRecovery && !in {
		q.reoPersist--
		if q.reoPersist <= 0 {
			q.reoMult = 1
		}
	}
	q.inRecovery = in
}

// sentAfter is RFC 8985's RACK_sent_after over send sequence numbers: was
// transmission x1 sent after x2? A departure from RFC 8985 §6.2, which orders
// by send time and breaks ties by sequence end: several transmissions share
// an instant (one send opportunity, or ACKs that arrive together), and a
// retransmission sent after higher-sequence new data in the same instant
// would look older than that data, so RACK would mark it lost as soon as the
// new data was delivered, while it is still queued. The stamp is the order
// the time stands for, so every RFC rule keeps its meaning.
func sentAfter(x1, x2 uint64) bool { return x1 > x2 }

// delivery tracks the segments one ACK newly delivers.
type delivery struct {
	now        time.Duration
	echo       Echo
	karnSent   time.Duration // newest never-retransmitted FirstSent
	karn       bool
	rackT      time.Duration // most recently sent segment that passes the RACK filter
	rackX      uint64
	rack       bool
	minPlain   uint64 // lowest End among never-retransmitted segments
	plain      bool
	maxEnd     uint64
	spurious   bool
	minRTTSeen time.Duration
}

// deliver takes segment s (up to end) as newly delivered by the ACK; own
// says the ACK's timestamp echo is s's own: s was at SND.UNA and the
// cumulative ACK moved past it, so the echo is the TSval of the copy of s
// that arrived (RFC 7323 §4.3).
func (q *Queue) deliver(d *delivery, s *Seg, end uint64, own bool) {
	if end > d.maxEnd {
		d.maxEnd = end
	}
	if s.Retrans == 0 {
		if !d.karn || s.FirstSent > d.karnSent {
			d.karnSent, d.karn = s.FirstSent, true
		}
		if !d.plain || end < d.minPlain {
			d.minPlain, d.plain = end, true
		}
		// control:tcpinternal-rtxq-rack-ignores-echo
	} else if d.echo.Before > 0 && s.LastSent >= d.echo.Before {
		// RFC 8985 §6.2 step 2, first condition (Karn, RFC 6298 §3): the
		// timestamp echo is older than the latest transmission, so the ACK
		// does not answer it. Not a RACK sample: taking one would make every
		// earlier transmission still queued look lost. For a segment
		// SACKed out of order the echo is the left edge's (RFC 7323 §4.3),
		// so a SACKed retransmission is seldom a sample; RACK then learns
		// from the never-retransmitted data sent after it.
		return
		// control:tcpinternal-rtxq-own-echo-still-min-rtt-tested
	} else if !(own && d.echo.From > s.PrevSent) && q.minRTT > 0 && d.now-s.LastSent < q.minRTT {
		// Step 2, second condition: acknowledged too soon to be for the
		// retransmission; the original arrived. Not a RACK sample.
		//
		// Departure from step 2, which applies this test to every
		// retransmission: it is skipped when the echo is s's own and left
		// after the copy before the latest, which proves that the ACK
		// answers the latest copy. The test guards only the ambiguity the
		// echo has resolved, and it errs on short paths: a short segment
		// (a transfer's last) or one that met a little less queueing comes
		// back sooner than min_RTT measured on full segments. On a 1 ms
		// path a loss probe's copy of the segment at SND.UNA came back 9 µs
		// under min_RTT, was taken as needless, and RACK missed the lost
		// tail until the 200 ms RTO. It is safe: the echo says which copy
		// arrived.
		d.spurious = true
		return
	}
	if !d.rack || sentAfter(s.xmit, d.rackX) {
		d.rackT, d.rackX, d.rack = s.LastSent, s.xmit, true
	}
}

// OnAck processes one ACK: the cumulative acknowledgement una and its SACK
// blocks in the order received. Pass the first block even when it lies below
// una: that is a D-SACK (RFC 2883), and it feeds reo_wnd's adaptation.
func (q *Queue) OnAck(una uint64, sacks []Range, now time.Duration) AckResult {
	return q.OnAckEcho(una, sacks, now, Echo{})
}

// Echo is what an ACK's timestamp echo (RFC 7323) says of the transmission
// it answers: that transmission left in [From, Before), the echoed clock
// tick. The zero Echo says nothing.
type Echo struct{ From, Before time.Duration }

// OnAckEcho is OnAck for an ACK with a timestamp echo, which tells which transmission of a
// retransmitted segment the ACK answers (RFC 8985 §6.2 step 2).
func (q *Queue) OnAckEcho(una uint64, sacks []Range, now time.Duration, echo Echo) AckResult {
	var res AckResult
	d := delivery{now: now, echo: echo}
	if !q.started {
		return res
	}
	if una > q.nxt {
		una = q.nxt
	}

	sacks = q.takeDSACK(&res, una, sacks)
	if una > q.una {
		q.cumAck(&res, &d, una, echo.Before)
	}
	for _, b := range sacks {
		q.sackBlock(&res, &d, b)
	}
	q.learn(&res, &d, now)
	return res
}

// takeDSACK reports a D-SACK (RFC 2883 §4: a first block below the
// cumulative ACK or inside the second block) and returns the other blocks.
func (q *Queue) takeDSACK(res *AckResult, una uint64, sacks []Range) []Range {
	if len(sacks) == 0 {
		return sacks
	}
	b0 := sacks[0]
	if b0.Start < b0.End && (b0.Start < max(una, q.una) ||
		(len(sacks) > 1 && sacks[1].Start <= b0.Start && b0.End <= sacks[1].End)) {
		res.DSACK = true
		n := q.countDSACK(b0)
		res.SpuriousBytes += n
		res.SpuriousHint = n > 0 || q.retxOverlaps(b0)
		return sacks[1:]
	}
	return sacks
}

// cumAck delivers and drops every segment below una (una > q.una).
func (q *Queue) cumAck(res *AckResult, d *delivery, una uint64, echo time.Duration) {
	res.CumAcked = una - q.una
	l := q.live()
	if len(l) > 0 {
		res.SpuriousBytes += q.echoSpurious(&l[0], echo)
	}
	k := 0
	for k < len(l) && l[k].Start < una {
		q.visits++
		s := &l[k]
		end := s.End
		if end > una {
			end = una
		}
		n := end - s.Start
		if s.Sacked {
			q.sackedBytes -= n
		} else {
			res.Delivered += n
			q.deliver(d, s, end, k == 0)
			if s.Lost {
				q.lostBytes -= n
			}
			if s.RetransInFlight {
				q.retxBytes -= n
			}
		}
		if end < s.End { // una falls inside: keep the rest
			s.Start = end
			break
		}
		if s.Sacked {
			q.sackedSegs--
		} else {
			res.DeliveredSegs++
		}
		q.unlink(q.idOf(k))
		*s = Seg{}
		k++
	}
	q.head += k
	q.una = una
	q.trimSacked(una)
	if q.Len() == 0 {
		q.base += uint64(len(q.segs))
		q.segs, q.head = q.segs[:0], 0
	}
}

// sackBlock marks the segments block b covers whole as SACKed, walking only
// the gaps between ranges already SACKed.
func (q *Queue) sackBlock(res *AckResult, d *delivery, b Range) {
	if b.Start < q.una {
		b.Start = q.una
	}
	if b.End > q.nxt {
		b.End = q.nxt
	}
	if b.Start >= b.End {
		return
	}
	l := q.live()
	var fresh []Range // newly SACKed, merged, in order
	cur := b.Start
	j := sort.Search(len(q.sacked), func(k int) bool { return q.sacked[k].End > cur })
	for cur < b.End {
		if j < len(q.sacked) && q.sacked[j].Start <= cur {
			cur = q.sacked[j].End
			j++
			continue
		}
		gapEnd := b.End
		if j < len(q.sacked) && q.sacked[j].Start < gapEnd {
			gapEnd = q.sacked[j].Start
		}
		for i := q.find(cur); i < len(l) && l[i].Start < gapEnd; i++ {
			q.visits++
			s := &l[i]
			if s.Sacked || !b.covers(s) {
				continue
			}
			n := s.Len()
			q.unlink(q.idOf(i))
			s.Sacked = true
			q.sackedBytes += n
			q.sackedSegs++
			if s.Lost {
				s.Lost = false
				q.lostBytes -= n
			}
			if s.RetransInFlight {
				s.RetransInFlight = false
				q.retxBytes -= n
			}
			res.NewlySacked += n
			res.Delivered += n
			res.DeliveredSegs++
			q.deliver(d, s, s.End, false)
			if k := len(fresh); k > 0 && fresh[k-1].End == s.Start {
				fresh[k-1].End = s.End
			} else {
				fresh = append(fresh, Range{Start: s.Start, End: s.End})
			}
		}
		cur = gapEnd
	}
	for _, r := range fresh {
		q.addSacked(r)
	}
}

// covers reports whether SACK block b reports segment s received whole.
// Departure from RFC 2018 §3, whose blocks cover sequence space: a block
// ending at a FIN segment's last data byte covers the segment, FIN and all.
// A receiver that reports only the data it holds (RFC 2018 speaks of "blocks
// of data") never SACKs a FIN held out of order, and the segment whose data
// and FIN travelled together would then never count as delivered: a lost
// retransmission before it would wait for the RTO. It is safe: the FIN left
// in the same segment as the data the block reports, and a receiver that cut
// the FIN off (beyond its window) leaves SND.UNA one short of the segment's
// end, where the RTO finds a SACKed head, clears the marks and resends it
// (OnRTO), as for any reneging.
func (b Range) covers(s *Seg) bool {
	end := s.End
	// control:tcpinternal-rtxq-fin-blocks-data-sack
	if s.Fin && s.Len() > 1 {
		end-- // the FIN's own offset
	}
	return b.Start <= s.Start && end <= b.End
}

// learn takes what the ACK's deliveries taught: the Karn-clean RTT sample,
// RACK's newest delivered transmission, reordering and the D-SACK round.
func (q *Queue) learn(res *AckResult, d *delivery, now time.Duration) {
	// Karn-clean RTT sample.
	if d.karn {
		res.RTT = now - d.karnSent
		if res.RTT < 0 {
			res.RTT = 0
		}
		if res.RTT > 0 && (q.minRTT == 0 || res.RTT < q.minRTT) {
			q.minRTT = res.RTT
		}
	}
	if d.spurious {
		res.SpuriousHint = true
	}
	// RFC 8985 §6.2 step 2: RACK.xmit_ts, RACK.end_seq, RACK.rtt.
	if d.rack {
		q.rackRTT = now - d.rackT
		if !q.rackValid || sentAfter(d.rackX, q.rackXmit) {
			q.rackXmit, q.rackValid = d.rackX, true
		}
	}
	// Step 3: a never-retransmitted segment delivered below the highest
	// delivered end is reordering.
	// control:tcpinternal-rtxq-no-reorder-detection
	if d.plain && d.minPlain < q.fack {
		q.reorderingSeen = true
	}
	if d.maxEnd > q.fack {
		q.fack = d.maxEnd
	}
	// Step 4's D-SACK round bookkeeping.
	if q.dsackRoundOn && q.una >= q.dsackRound {
		q.dsackRoundOn = false
	}
	if res.DSACK {
		q.reorderingSeen = true
		if !q.dsackRoundOn {
			q.dsackRound, q.dsackRoundOn = q.nxt, true
			if q.reoMult < maxReoMult {
				q.reoMult++
			}
			q.reoPersist = 16
		}
	}
}

// ReoWnd is RFC 8985 §6.2 step 4's reordering window: zero while no
// reordering has been seen and the sender is in recovery or has DupThresh
// segments SACKed; otherwise reo_wnd_mult·min_RTT/4, capped by the SRTT last
// given to DetectLoss. A zero minRTT uses the queue's own minimum.
func (q *Queue) ReoWnd(minRTT time.Duration) time.Duration {
	if minRTT <= 0 {
		minRTT = q.minRTT
	}
	if !q.reorderingSeen && (q.inRecovery || q.sackedSegs >= DupThresh) {
		return 0
	}
	// control:hosttests-matrix-spurious-reo-wnd-zero
	w := time.Duration(q.reoMult) * minRTT / 4
	if q.lastSRTT > 0 && w > q.lastSRTT {
		w = q.lastSRTT
	}
	return w
}

// DetectLoss is RFC 8985 §6.2 step 5: every segment sent before the most
// recently delivered one, and longer ago than RACK.rtt + reo_wnd, is marked
// lost. It returns the bytes newly marked and, if some segment will become
// lost later, the time from now until then (arm the reordering timer).
func (q *Queue) DetectLoss(now time.Duration, srtt time.Duration) (newlyLost uint64, reoTimer time.Duration) {
	q.lastSRTT = srtt
	if !q.rackValid {
		return 0, 0
	}
	reo := q.ReoWnd(0)
	// Walk the send-order list from its oldest transmission: send times
	// rise along it, so the first segment not lost yet ends the walk.
	// control:tcpinternal-rtxq-loss-walk-from-head
	for id := q.first; id != noID; {
		s := q.at(id)
		q.visits++
		if !sentAfter(q.rackXmit, s.xmit) {
			break
		}
		remaining := s.LastSent + q.rackRTT + reo - now
		if remaining > 0 {
			reoTimer = remaining
			break
		}
		next := s.next
		newlyLost += s.Len()
		q.markLost(id)
		id = next
	}
	return newlyLost, reoTimer
}

// markLost marks segment id lost: out of the send-order list, into the lost
// queue.
func (q *Queue) markLost(id uint64) {
	s := q.at(id)
	if s.RetransInFlight {
		s.RetransInFlight = false
		q.retxBytes -= s.Len()
	}
	if !s.Lost {
		s.Lost = true
		q.lostBytes += s.Len()
	}
	q.unlink(id)
	// control:rtxq-crawl-reset
	q.queueLost(id)
}

// NextToRetransmit is the lowest segment marked lost and not retransmitted
// since. The caller retransmits it, calls Retransmitted, and asks again while
// its congestion window allows: every lost segment comes out in order, so a
// recovery drains a whole hole per round trip, not one segment per timeout.
func (q *Queue) NextToRetransmit() (Seg, bool) {
	// control:rtxq-crawl-next
	for len(q.lostQ) > 0 {
		q.visits++
		if id := q.lostQ[0]; q.held(id) && waiting(q.at(id)) {
			return *q.at(id), true
		}
		q.popLost()
	}
	return Seg{}, false
}

// OnRTO is RFC 8985 §6.3: on the retransmission timeout the segment at
// SND.UNA, and every segment whose RACK deadline has passed, are marked lost
// (before any RTT sample, every segment is). If the segment at SND.UNA was
// SACKed, the receiver has reneged (RFC 2018 §8), and all SACK marks are
// cleared so that nothing is left unsent forever (RFC 6675 §5.1).
func (q *Queue) OnRTO(now time.Duration) {
	l := q.live()
	if len(l) == 0 {
		return
	}
	if l[0].Sacked {
		for i := range l {
			if l[i].Sacked {
				l[i].Sacked = false
				q.sackedBytes -= l[i].Len()
				q.sackedSegs--
			}
		}
		q.sacked = q.sacked[:0]
		q.relink()
	}
	reo := q.ReoWnd(0)
	for i := range l {
		s := &l[i]
		if !markable(s) {
			continue
		}
		// control:hosttests-blackout-recovery-crawl
		if i == 0 || !q.rackValid || s.LastSent+q.rackRTT+reo-now <= 0 {
			q.markLost(q.idOf(i))
		}
	}
}

// PTO is RFC 8985 §7.2's probe timeout: 2·SRTT, plus the worst-case delayed
// ACK when one segment is in flight; 1 s with no SRTT yet. The caller caps it
// by the RTO.
func (q *Queue) PTO(srtt time.Duration, inFlightSegs int, delayedAck time.Duration) time.Duration {
	if srtt <= 0 {
		return time.Second
	}
	pto := 2 * srtt
	if inFlightSegs == 1 {
		pto += delayedAck
	}
	return pto
}

// addSacked merges r into the sorted SACKed ranges.
func (q *Queue) addSacked(r Range) {
	k := sort.Search(len(q.sacked), func(k int) bool { return q.sacked[k].End >= r.Start })
	if k < len(q.sacked) && q.sacked[k].Start <= r.End {
		// Overlaps or touches range k (and maybe the ones after it).
		if r.Start < q.sacked[k].Start {
			q.sacked[k].Start = r.Start
		}
		if r.End > q.sacked[k].End {
			q.sacked[k].End = r.End
		}
		m := k + 1
		for m < len(q.sacked) && q.sacked[m].Start <= q.sacked[k].End {
			if q.sacked[m].End > q.sacked[k].End {
				q.sacked[k].End = q.sacked[m].End
			}
			m++
		}
		q.sacked = append(q.sacked[:k+1], q.sacked[m:]...)
		return
	}
	q.sacked = append(q.sacked, Range{})
	copy(q.sacked[k+1:], q.sacked[k:])
	q.sacked[k] = r
}

// trimSacked drops the SACKed ranges below una.
func (q *Queue) trimSacked(una uint64) {
	k := 0
	for k < len(q.sacked) && q.sacked[k].End <= una {
		k++
	}
	// Reslice rather than copy: a cumulative ACK costs the ranges it
	// passes, not the ones left; append reclaims the space when it grows.
	q.sacked = q.sacked[k:]
	if len(q.sacked) > 0 && q.sacked[0].Start < una {
		q.sacked[0].Start = una
	}
}

// ErrNotBoundary reports a Truncate inside a segment: only whole segments,
// as pushed, can be taken back.
var ErrNotBoundary = errors.New("rtxq: truncation point is inside a segment")

// Seg returns a copy of the held segment starting at start.
func (q *Queue) Seg(start uint64) (Seg, bool) {
	l := q.live()
	i := q.find(start)
	if i >= len(l) || l[i].Start != start {
		return Seg{}, false
	}
	return l[i], true
}

// Truncate takes back every segment at or above end, as if it had never been
// pushed: the link refused them, so they were never sent and must count
// neither in flight nor as lost. The marks of the segments below end are
// kept. end must be a segment boundary at or above SND.UNA.
func (q *Queue) Truncate(end uint64) error {
	if end >= q.nxt {
		return nil
	}
	l := q.live()
	i := q.find(end)
	if end < q.una || i < len(l) && l[i].Start != end {
		return fmt.Errorf("%w: %d", ErrNotBoundary, end)
	}
	for j := i; j < len(l); j++ {
		s := &l[j]
		q.unlink(q.idOf(j))
		switch {
		case s.Sacked:
			q.sackedBytes -= s.Len()
			q.sackedSegs--
		case s.Lost:
			q.lostBytes -= s.Len()
		}
		if s.RetransInFlight {
			q.retxBytes -= s.Len()
		}
	}
	q.segs = q.segs[:q.head+i]
	// control:tcpinternal-rtxq-truncate-drops-sack-marks
	q.nxt = end
	for k := len(q.sacked) - 1; k >= 0; k-- {
		r := &q.sacked[k]
		if r.Start >= end {
			q.sacked = q.sacked[:k]
			continue
		}
		if r.End > end {
			r.End = end
		}
		break
	}
	q.fack = min(q.fack, end)
	return nil
}

// RetransmitRefused takes back a Retransmitted the link refused: the resend
// never left, so the segment gets back the send time and in-flight state it
// had before (prev, as Seg returned it then) and, if lost, is a
// retransmission candidate again.
func (q *Queue) RetransmitRefused(prev Seg) {
	// control:tcpinternal-rtxq-refused-resend-stays-in-flight
	l := q.live()
	i := q.find(prev.Start)
	if i >= len(l) || l[i].Start != prev.Start {
		return
	}
	id := q.idOf(i)
	s := &l[i]
	if s.Retrans > 0 {
		s.Retrans--
	}
	s.PrevSent, s.LastSent = prev.PrevSent, prev.LastSent
	s.xmit = prev.xmit
	if s.RetransInFlight && !prev.RetransInFlight {
		s.RetransInFlight = false
		q.retxBytes -= s.Len()
	}
	q.unlink(id)
	if markable(s) {
		q.insertBySend(id)
	}
	if waiting(s) {
		q.queueLost(id)
	}
	if q.retxN > 0 && q.retxRing[(q.retxN-1)%recentRetx].Start == s.Start {
		q.retxN--
		if q.retxN < recentRetx {
			q.retxRing = q.retxRing[:q.retxN]
		}
	}
}
