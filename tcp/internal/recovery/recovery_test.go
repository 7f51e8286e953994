package recovery

import "testing"

const smss = 1000

// RFC 6675 §5 / RFC 6582 §3.2 step 3 / RFC 8985 §6.3: a recovery ends when
// the cumulative ACK reaches its recovery point, SND.NXT at its start, and
// not before; the end is reported once.
func TestRecoveryEndsAtTheRecoveryPoint(t *testing.T) {
	for _, start := range []func(r *Recovery){
		func(r *Recovery) { r.OnLoss(100, 20100) },
		func(r *Recovery) { r.StartNewReno(100, 20100) },
		func(r *Recovery) { r.OnRTO(100, 20100, 7) },
	} {
		r := New(smss)
		start(r)
		if !r.InRecovery() || r.Point() != 20100 {
			t.Fatalf("%v: in recovery %v, point %d; want true, 20100", r.State(), r.InRecovery(), r.Point())
		}
		if r.MaybeEnd(20099) {
			t.Fatalf("%v: ended a byte below the recovery point", r.State())
		}
		if !r.MaybeEnd(20100) || r.State() != Open {
			t.Fatalf("%v: did not end at the recovery point", r.State())
		}
		if r.MaybeEnd(30000) {
			t.Fatal("an Open recovery reported an end")
		}
	}
}

// RFC 6675 §5: a loss inside a fast recovery starts no second one (one
// reduction per window), nor does it move the recovery point.
func TestLossInsideFastRecoveryStartsNothing(t *testing.T) {
	r := New(smss)
	if !r.OnLoss(0, 10000) {
		t.Fatal("the first loss started no recovery")
	}
	if r.OnLoss(2000, 30000) || r.Point() != 10000 {
		t.Fatalf("a second loss started a recovery or moved the point to %d", r.Point())
	}
	r2 := New(smss)
	r2.StartNewReno(0, 10000)
	if r2.OnLoss(0, 20000) || r2.State() != NewReno {
		t.Fatal("a RACK loss inside a NewReno recovery started a fast recovery")
	}
}

// sack.go's stated departure: a loss RACK finds after a timeout starts a
// fast recovery (PRR paces the repair), with a new recovery point.
func TestLossAfterTimeoutStartsFastRecovery(t *testing.T) {
	r := New(smss)
	r.OnRTO(0, 10000, 1)
	if !r.OnLoss(1000, 12000) || r.State() != Fast || r.Point() != 12000 {
		t.Fatalf("state %v point %d; want fast at 12000", r.State(), r.Point())
	}
}

// RFC 5681 §3.2 step 2, RFC 6675 §5 step 4.2: the first retransmission of a
// recovery goes whatever PRR allows; the next waits for PRR.
func TestFirstRetransmissionIgnoresTheWindow(t *testing.T) {
	r := New(smss)
	r.OnLoss(0, 10*smss)
	r.StartPRR(10 * smss)
	if !r.MaySend(smss, 10*smss, 5*smss, true) {
		t.Fatal("the first retransmission was held")
	}
	if r.MaySend(smss, 10*smss, 5*smss, false) {
		t.Fatal("new data went before PRR allowed any")
	}
	r.OnSent(smss, true)
	if r.MaySend(smss, 10*smss, 5*smss, true) {
		t.Fatal("a second retransmission went before PRR allowed it")
	}
}

// Open and RTO: cwnd decides; a retransmission may go into an empty pipe,
// and a bare FIN always may.
func TestCwndGovernsOutsideFastRecovery(t *testing.T) {
	r := New(smss)
	if !r.MaySend(smss, 9*smss, 10*smss, false) || r.MaySend(smss+1, 9*smss, 10*smss, false) {
		t.Fatal("Open: cwnd does not decide")
	}
	r.OnRTO(0, 10*smss, 1)
	if r.MaySend(2*smss, 0, smss, false) || !r.MaySend(2*smss, 0, smss, true) {
		t.Fatal("RTO: a retransmission into an empty pipe must go, new data beyond cwnd must not")
	}
	if !r.MaySend(0, 5*smss, smss, false) {
		t.Fatal("a bare FIN was held")
	}
}
