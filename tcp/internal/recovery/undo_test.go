package recovery

import "testing"

// RFC 2883 §4 with RFC 9438 §4.9: a recovery is undone when every
// retransmission it made has been D-SACKed, and one D-SACK among several
// retransmissions proves nothing.
func TestUndoNeedsEveryRetransmissionDSACKed(t *testing.T) {
	r := New(smss)
	r.OnLoss(0, 20*smss)
	for i := 0; i < 3; i++ {
		r.OnSent(smss, true)
	}
	d := Evidence{DSACKOfRetransmission: true}
	if r.OnEvidence(d) || r.OnEvidence(d) {
		t.Fatal("undone before every retransmission was D-SACKed")
	}
	if !r.OnEvidence(d) || r.State() != Open || r.Undoable() {
		t.Fatalf("the third D-SACK did not undo: state %v", r.State())
	}
	if r.OnEvidence(d) {
		t.Fatal("one recovery undone twice")
	}
}

// A refused retransmission was never sent, so it is not waited for.
func TestRefusedRetransmissionIsNotWaitedFor(t *testing.T) {
	r := New(smss)
	r.OnLoss(0, 20*smss)
	r.OnSent(smss, true)
	r.OnSent(smss, true)
	r.OnRefused(true)
	if !r.OnEvidence(Evidence{DSACKOfRetransmission: true}) {
		t.Fatal("the one retransmission sent was D-SACKed, yet no undo")
	}
}

// RFC 3522 §2: after a timeout, an ACK of new data that echoes a TSval older
// than the timeout's retransmission answers the original: spurious. An echo
// of the retransmission's own TSval, or an ACK without progress, is not.
func TestTimestampEchoOlderThanTheTimeoutUndoesIt(t *testing.T) {
	for _, tc := range []struct {
		ev   Evidence
		want bool
	}{
		{Evidence{Progress: true, HasTSEcr: true, TSEcr: 99}, true},
		{Evidence{Progress: true, HasTSEcr: true, TSEcr: 100}, false},
		{Evidence{Progress: false, HasTSEcr: true, TSEcr: 99}, false},
		{Evidence{Progress: true, HasTSEcr: false, TSEcr: 99}, false},
	} {
		r := New(smss)
		r.OnRTO(0, 10*smss, 100)
		if got := r.OnEvidence(tc.ev); got != tc.want {
			t.Fatalf("%+v: spurious %v, want %v", tc.ev, got, tc.want)
		}
	}
	// In a fast recovery the timestamp rule does not apply.
	r := New(smss)
	r.OnRTO(0, 10*smss, 100)
	r.MaybeEnd(10 * smss)
	r.OnLoss(10*smss, 20*smss)
	if r.OnEvidence(Evidence{Progress: true, HasTSEcr: true, TSEcr: 99}) {
		t.Fatal("a timestamp echo undid a fast recovery")
	}
}
