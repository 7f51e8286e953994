package pacer

import (
	"math"
	"testing"
	"time"
)

func TestUnpacedSendsNow(t *testing.T) {
	p := New()
	for _, now := range []time.Duration{0, time.Second, 5 * time.Second} {
		if got := p.NextSend(now, 1500); got != now {
			t.Fatalf("NextSend = %v at %v", got, now)
		}
		p.Sent(now, 1<<20)
	}
	p.SetRate(1e6, 3000)
	p.SetRate(0, 3000)
	if got := p.NextSend(7*time.Second, 1500); got != 7*time.Second {
		t.Fatalf("rate 0 paced: %v", got)
	}
	p.SetRate(math.NaN(), 1)
	if p.Rate() != 0 {
		t.Fatal("NaN rate accepted")
	}
}

func TestBurstLeavesAtOnceThenTheRateHolds(t *testing.T) {
	p := New()
	p.SetRate(1e6, 3000) // 1 MB/s: 1500 bytes per 1.5 ms
	now := time.Duration(0)
	for i := 0; i < 2; i++ {
		if got := p.NextSend(now, 1500); got != now {
			t.Fatalf("burst segment %d delayed to %v", i, got)
		}
		p.Sent(now, 1500)
	}
	next := p.NextSend(now, 1500)
	if next != 1500*time.Microsecond {
		t.Fatalf("third segment at %v, want 1.5ms", next)
	}
	// Over a long run the average rate is the set rate.
	sent := 0
	for now < time.Second {
		now = p.NextSend(now, 1500)
		p.Sent(now, 1500)
		sent += 1500
	}
	if sent < 1e6 || sent > 1e6+3000+1500 {
		t.Fatalf("sent %d bytes in 1s at 1MB/s with a 3000-byte burst", sent)
	}
}

func TestNextSendIsNeverInThePast(t *testing.T) {
	p := New()
	p.SetRate(1000, 100)
	p.Sent(time.Second, 5000) // deep debt
	for _, now := range []time.Duration{0, time.Second, 2 * time.Second, 10 * time.Second} {
		if got := p.NextSend(now, 1500); got < now {
			t.Fatalf("NextSend(%v) = %v, in the past", now, got)
		}
	}
}

func TestSegmentLargerThanTheBurstStillGoes(t *testing.T) {
	p := New()
	p.SetRate(1e6, 1000)
	p.Sent(0, 1000)
	got := p.NextSend(0, 9000)
	if got != time.Millisecond {
		t.Fatalf("a 9000-byte segment waits until %v, want 1ms (one burst of tokens)", got)
	}
	if p.NextSend(got, 9000) != got {
		t.Fatal("segment not allowed at its own NextSend")
	}
}

func TestIdleTimeEarnsAtMostTheBurst(t *testing.T) {
	p := New()
	p.SetRate(1e6, 4500)
	p.NextSend(0, 1)
	now := 10 * time.Second
	n := 0
	for p.NextSend(now, 1500) == now {
		p.Sent(now, 1500)
		n++
	}
	if n != 3 {
		t.Fatalf("%d segments back to back after idle, want 3 (burst 4500)", n)
	}
}

// TestACKCreditLeavesAtOnceAndIsNotSaved: the bytes an ACK delivered leave
// at once, beyond the bucket; the next ACK's credit replaces what was left,
// so credit the sender could not use is not saved into a later burst.
func TestACKCreditLeavesAtOnceAndIsNotSaved(t *testing.T) {
	p := New()
	p.SetRate(1e6, 1500)
	p.Sent(0, 1500) // the bucket is empty
	p.Credit(3000, 1<<20)
	for i := 0; i < 2; i++ {
		if got := p.NextSend(0, 1500); got != 0 {
			t.Fatalf("credited segment %d held until %v", i, got)
		}
		p.Sent(0, 1500)
	}
	if got := p.NextSend(0, 1500); got == 0 {
		t.Fatal("a segment beyond the credit and the bucket left at once")
	}
	p.Credit(6000, 1<<20)
	p.Credit(1500, 1<<20) // a second ACK before the first's credit was used
	p.Sent(0, 1500)
	if got := p.NextSend(0, 1500); got == 0 {
		t.Fatal("credit of an earlier ACK was saved")
	}
	p.Credit(1<<20, 3000) // capped at the window
	p.Sent(0, 1500)
	p.Sent(0, 1500)
	if got := p.NextSend(0, 1500); got == 0 {
		t.Fatal("credit beyond the window's limit left at once")
	}
	p.SetRate(0, 1500)
	p.Credit(3000, 1<<20)
	p.SetRate(1e6, 1500)
	p.Sent(0, 1500)
	p.Sent(0, 1500)
	if got := p.NextSend(0, 1500); got == 0 {
		t.Fatal("credit given while unpaced was kept")
	}
}
