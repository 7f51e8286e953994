package rtxq

import (
	"testing"
	"time"
)

func TestRetransmissionSentWithNewDataInOneInstantIsNotOlderThanIt(t *testing.T) {
	// Segment 0 is lost; at 100 ms one instant carries new data (segment 5)
	// and then the retransmission of segment 0. When segment 5 is SACKed,
	// RACK must not take the retransmission, sent after it, as sent before.
	q := New(100)
	sendN(t, q, 0, 5, 0)
	q.SetInRecovery(true) // reo_wnd 0: nothing hides a wrong order
	q.OnAck(0, []Range{{1000, 5000}}, 40*ms)
	if lost, _ := q.DetectLoss(40*ms, 40*ms); lost != 1000 {
		t.Fatalf("lost %d, want segment 0", lost)
	}
	sendN(t, q, 5000, 1, 100*ms)
	q.Retransmitted(0, 100*ms)
	q.OnAck(0, []Range{{1000, 6000}}, 140*ms)
	if lost, _ := q.DetectLoss(140*ms, 40*ms); lost != 0 {
		t.Fatalf("the retransmission sent after the SACKed segment was marked lost (%d bytes)", lost)
	}
	check(t, q)
}

// recoveryQueue is a queue in recovery with a min_RTT of 20 ms: segment 0
// acknowledged at 20 ms, segments 1-4 sent at 30 ms, and at 60 ms an ACK
// that SACKs block sacked, after which RACK must mark lost bytes lost.
func recoveryQueue(t *testing.T, sacked Range, lost uint64) *Queue {
	t.Helper()
	q := New(100)
	sendN(t, q, 0, 1, 0)
	q.OnAck(1000, nil, 20*ms)
	sendN(t, q, 1000, 4, 30*ms)
	q.SetInRecovery(true)
	q.OnAck(1000, []Range{sacked}, 60*ms)
	if n, _ := q.DetectLoss(60*ms, 30*ms); n != lost {
		t.Fatalf("lost %d, want %d", n, lost)
	}
	return q
}

func TestAckEchoingAnEarlierCopyIsNoRACKSampleOfTheRetransmission(t *testing.T) {
	// Segments 1 and 2 are resent at 100 and 110 ms and both resends queue
	// behind a deep buffer. At 150 ms segment 2 is SACKed, longer than
	// min_RTT after its resend; the timestamp echo tells whether the ACK
	// answers the resend. If it answers the original, RACK learns nothing
	// from it and the resend of segment 1 stays in flight (RFC 8985 §6.2
	// step 2); if it answers the resend, segment 1's resend, sent earlier
	// and not yet delivered, is lost.
	cases := []struct {
		name     string
		echo     time.Duration
		wantLost uint64
	}{
		{"echo of the original", 31 * ms, 0},
		{"echo of the resend", 111 * ms, 1000},
		{"no echo", 0, 1000},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			q := recoveryQueue(t, Range{3000, 5000}, 2000) // segments 1 and 2 lost
			q.Retransmitted(1000, 100*ms)
			q.Retransmitted(2000, 110*ms)
			q.OnAckEcho(1000, []Range{{2000, 5000}}, 150*ms, Echo{Before: c.echo})
			if lost, _ := q.DetectLoss(150*ms, 30*ms); lost != c.wantLost {
				t.Fatalf("lost %d, want %d", lost, c.wantLost)
			}
			check(t, q)
		})
	}
}

func TestSpuriousBytesCountEachNeedlessCopyOnce(t *testing.T) {
	// Segment 0 is resent twice. The first resend arrives (the ACK echoes
	// it), so the second was needless: the echo counts it, and the D-SACK it
	// causes later does not count it again. Segment 1's original arrives
	// after its resend was sent: the echo shows it, and its D-SACK adds
	// nothing. Segment 2's resend is reported only by a D-SACK.
	q := New(100)
	sendN(t, q, 0, 4, 0)
	q.OnRTO(300 * ms)
	q.Retransmitted(0, 300*ms)
	q.Retransmitted(0, 700*ms)
	var total uint64
	r := q.OnAckEcho(1000, nil, 720*ms, Echo{Before: 301 * ms}) // answers the first resend
	total += r.SpuriousBytes
	if r.SpuriousBytes != 1000 {
		t.Fatalf("echo counted %d, want the second resend (1000)", r.SpuriousBytes)
	}
	total += q.OnAckEcho(1000, []Range{{0, 1000}}, 740*ms, Echo{Before: 301 * ms}).SpuriousBytes
	q.Retransmitted(1000, 750*ms)
	total += q.OnAckEcho(2000, nil, 760*ms, Echo{Before: 1 * ms}).SpuriousBytes
	total += q.OnAckEcho(2000, []Range{{1000, 2000}}, 790*ms, Echo{Before: 1 * ms}).SpuriousBytes
	q.Retransmitted(2000, 800*ms)
	total += q.OnAck(3000, nil, 810*ms).SpuriousBytes
	total += q.OnAck(3000, []Range{{2000, 3000}}, 850*ms).SpuriousBytes
	if total != 3000 {
		t.Fatalf("spurious bytes %d, want 3000: one for each needless copy", total)
	}
	// A second D-SACK of a resend already accounted counts nothing.
	if r := q.OnAck(3000, []Range{{2000, 2500}}, 860*ms); r.SpuriousBytes != 0 {
		t.Fatalf("second D-SACK of one resend counted %d", r.SpuriousBytes)
	}
}

func TestAckEchoingTheLatestCopyIsARACKSampleSoonerThanMinRTT(t *testing.T) {
	// Segment 1's fast retransmission (65 ms) is lost, and so is the tail,
	// segment 4. A loss probe resends segment 1 at 100 ms; the ACK that
	// moves SND.UNA past it comes 19 ms later, under the 20 ms min_RTT (a
	// short segment, less queueing). Its echo is segment 1's own: if it
	// echoes the probe's tick, the ACK answers the probe, RACK takes the
	// sample and marks the tail lost. An echo of the earlier copy, or none
	// (min_RTT then decides: too soon), is no sample.
	cases := []struct {
		name     string
		echo     Echo
		wantLost uint64
	}{
		{"echo of the probe", Echo{From: 100 * ms, Before: 101 * ms}, 1000},
		{"echo of the lost resend", Echo{From: 65 * ms, Before: 66 * ms}, 0},
		{"no echo", Echo{}, 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			q := recoveryQueue(t, Range{2000, 4000}, 1000) // segment 1 lost
			q.Retransmitted(1000, 65*ms)
			q.Retransmitted(1000, 100*ms) // the probe
			q.OnAckEcho(4000, nil, 119*ms, c.echo)
			if lost, _ := q.DetectLoss(119*ms, 30*ms); lost != c.wantLost {
				t.Fatalf("lost %d, want %d", lost, c.wantLost)
			}
			check(t, q)
		})
	}
}
