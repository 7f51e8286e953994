package recovery

import "testing"

// RFC 5681 §3.2 step 2: the third duplicate ACK, not the second, starts a
// recovery, and asks for the head's retransmission.
func TestThirdDuplicateAckStartsNewReno(t *testing.T) {
	r := New(smss)
	if r.OnDupAck() || r.OnDupAck() {
		t.Fatal("fewer than three duplicate ACKs called for a recovery")
	}
	if !r.OnDupAck() {
		t.Fatal("the third duplicate ACK called for none")
	}
	if !r.StartNewReno(0, 8*smss) || r.State() != NewReno || !r.WantHead() || r.Point() != 8*smss {
		t.Fatalf("state %v head %v point %d", r.State(), r.WantHead(), r.Point())
	}
	if r.OnDupAck() {
		t.Fatal("a fourth duplicate ACK called for a second recovery")
	}
}

// RFC 5681 §3.2: progress resets the count; duplicate ACKs during an RTO
// recovery start nothing.
func TestDuplicateAckCountRestartsOnProgress(t *testing.T) {
	r := New(smss)
	r.OnDupAck()
	r.OnDupAck()
	r.OnProgress()
	if r.DupAcks() != 0 || r.OnDupAck() {
		t.Fatal("the count survived progress")
	}
	r2 := New(smss)
	r2.OnRTO(0, 4*smss, 1)
	r2.OnDupAck()
	r2.OnDupAck()
	if r2.OnDupAck() || r2.StartNewReno(0, 4*smss) {
		t.Fatal("duplicate ACKs started a NewReno recovery inside an RTO recovery")
	}
}

// RFC 6582 §3.2 step 3: a partial ACK retransmits the new head at once; an
// ACK at the recovery point is a full ACK and ends the recovery instead.
func TestPartialAckRetransmitsTheNewHead(t *testing.T) {
	r := New(smss)
	r.StartNewReno(0, 8*smss)
	r.HeadDone()
	r.OnSent(smss, true)
	r.OnPartialAck(3 * smss)
	if !r.WantHead() || !r.MaySend(smss, 8*smss, 2*smss, true) {
		t.Fatal("a partial ACK did not ask for the new head at once")
	}
	r.HeadDone()
	r.OnPartialAck(8 * smss)
	if r.WantHead() {
		t.Fatal("a full ACK asked for a retransmission")
	}
	// Outside NewReno a partial ACK means nothing.
	f := New(smss)
	f.OnLoss(0, 8*smss)
	f.OnPartialAck(3 * smss)
	if f.WantHead() {
		t.Fatal("a partial ACK in a SACK recovery asked for the head")
	}
}
