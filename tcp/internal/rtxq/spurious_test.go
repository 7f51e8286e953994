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
			q := New(100)
			sendN(t, q, 0, 1, 0)
			q.OnAck(1000, nil, 20*ms) // min_RTT 20 ms
			sendN(t, q, 1000, 4, 30*ms)
			q.SetInRecovery(true)
			q.OnAck(1000, []Range{{3000, 5000}}, 60*ms)
			if lost, _ := q.DetectLoss(60*ms, 30*ms); lost != 2000 {
				t.Fatalf("lost %d, want segments 1 and 2", lost)
			}
			q.Retransmitted(1000, 100*ms)
			q.Retransmitted(2000, 110*ms)
			q.OnAckEcho(1000, []Range{{2000, 5000}}, 150*ms, c.echo)
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
	r := q.OnAckEcho(1000, nil, 720*ms, 301*ms) // answers the first resend
	total += r.SpuriousBytes
	if r.SpuriousBytes != 1000 {
		t.Fatalf("echo counted %d, want the second resend (1000)", r.SpuriousBytes)
	}
	total += q.OnAckEcho(1000, []Range{{0, 1000}}, 740*ms, 301*ms).SpuriousBytes
	q.Retransmitted(1000, 750*ms)
	total += q.OnAckEcho(2000, nil, 760*ms, 1*ms).SpuriousBytes
	total += q.OnAckEcho(2000, []Range{{1000, 2000}}, 790*ms, 1*ms).SpuriousBytes
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
