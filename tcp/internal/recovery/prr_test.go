package recovery

import "testing"

// RFC 6937 §3, pipe > ssthresh: sndcnt = CEIL(prr_delivered·ssthresh /
// RecoverFS) - prr_out, so a flight of 20 reduced to ssthresh 14 lets out
// 7 segments for every 10 delivered.
func TestPRRSendsInProportionAboveSsthresh(t *testing.T) {
	r := New(smss)
	r.OnLoss(0, 20*smss)
	r.StartPRR(20 * smss)
	sent := uint64(0)
	for i := 0; i < 10; i++ {
		r.OnDelivered(smss, 19*smss-uint64(i)*smss+sent, 14*smss)
		for r.MaySend(smss, 0, 0, false) {
			r.OnSent(smss, false)
			sent += smss
		}
	}
	if sent != 7*smss {
		t.Fatalf("sent %d segments for 10 delivered, want 7", sent/smss)
	}
}

// RFC 6937 §3, pipe ≤ ssthresh (PRR-SSRB): sndcnt = min(ssthresh - pipe,
// max(prr_delivered - prr_out, DeliveredData) + MSS).
func TestPRRSlowStartsBackBelowSsthresh(t *testing.T) {
	r := New(smss)
	r.StartNewReno(0, 20*smss)
	r.StartPRR(20 * smss)
	r.OnDelivered(2*smss, 5*smss, 14*smss)
	if got := r.PRRSendCount(); got != 3*smss {
		t.Fatalf("sndcnt %d, want delivered + MSS = %d", got, 3*smss)
	}
	r.OnDelivered(20*smss, 12*smss, 14*smss)
	if got := r.PRRSendCount(); got != 2*smss {
		t.Fatalf("sndcnt %d, want ssthresh - pipe = %d", got, 2*smss)
	}
}

// PRR runs only in fast and NewReno recoveries: elsewhere deliveries change
// nothing and cwnd governs.
func TestPRRIsIdleOutsideFastRecovery(t *testing.T) {
	r := New(smss)
	r.OnDelivered(10*smss, 0, 14*smss)
	if r.PRRSendCount() != 0 {
		t.Fatal("PRR counted deliveries while Open")
	}
}
