package recovery

import "testing"

// RFC 9293 §3.8.3 (R2) with seed 000's rule: only timeouts count toward
// giving up, ACK-clocked retransmissions never do, and progress refills it.
func TestOnlyTimeoutsSpendTheGiveUpBudget(t *testing.T) {
	r := New(smss)
	r.OnLoss(0, 50*smss)
	for i := 0; i < 40; i++ {
		r.OnSent(smss, true)
	}
	if r.RTOAttempts() != 0 {
		t.Fatalf("%d attempts after ACK-clocked retransmissions", r.RTOAttempts())
	}
	if n := r.OnRTO(0, 50*smss, 1); n != 1 {
		t.Fatalf("first timeout is attempt %d", n)
	}
	if n := r.OnRTO(0, 50*smss, 2); n != 2 {
		t.Fatalf("second timeout is attempt %d", n)
	}
	r.OnProgress()
	if r.RTOAttempts() != 0 {
		t.Fatal("progress did not refill the budget")
	}
}

// RFC 6298 §5.4–5.7 with RFC 8985 §6.3: a timeout starts an RTO recovery at
// SND.NXT, even inside a fast recovery, and cwnd (not PRR) governs it.
func TestTimeoutReplacesFastRecovery(t *testing.T) {
	r := New(smss)
	r.OnLoss(0, 10*smss)
	r.StartPRR(10 * smss)
	r.OnRTO(0, 12*smss, 9)
	if r.State() != RTO || r.Point() != 12*smss {
		t.Fatalf("state %v point %d", r.State(), r.Point())
	}
	if !r.MaySend(smss, 0, smss, false) {
		t.Fatal("cwnd did not govern the RTO recovery")
	}
}
