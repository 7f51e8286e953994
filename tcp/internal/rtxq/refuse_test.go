package rtxq

import (
	"errors"
	"testing"
	"time"
)

// pushN pushes n segments of size bytes from offset 0, one microsecond apart.
func pushN(t *testing.T, q *Queue, n int, size uint64) {
	t.Helper()
	for i := 0; i < n; i++ {
		s := uint64(i) * size
		if err := q.Push(s, s+size, time.Duration(i)*time.Microsecond, false); err != nil {
			t.Fatal(err)
		}
	}
}

func TestTruncateTakesBackRefusedSegmentsAndKeepsMarksBelow(t *testing.T) {
	q := New(64)
	pushN(t, q, 10, 100)
	// Segment 2 SACKed, segment 1 lost by RACK once segments past it arrive.
	q.OnAck(0, []Range{{200, 300}}, time.Millisecond)
	q.OnRTO(2 * time.Millisecond) // everything unSACKed is lost now
	lostBefore := q.LostBytes()
	if err := q.Truncate(700); err != nil {
		t.Fatal(err)
	}
	if q.Nxt() != 700 || q.Len() != 7 {
		t.Fatalf("after Truncate(700): nxt %d, %d segments; want 700, 7", q.Nxt(), q.Len())
	}
	if q.SackedBytes() != 100 {
		t.Fatalf("SACK mark below the cut lost: sacked %d, want 100", q.SackedBytes())
	}
	if got, want := q.LostBytes(), lostBefore-300; got != want {
		t.Fatalf("lost bytes %d, want %d (the three taken back no longer count)", got, want)
	}
	if q.InFlight() != q.Outstanding()-q.SackedBytes()-q.LostBytes() {
		t.Fatalf("pipe %d inconsistent after truncation", q.InFlight())
	}
	// The queue continues from the cut.
	if err := q.Push(700, 800, 3*time.Millisecond, false); err != nil {
		t.Fatalf("push after truncation: %v", err)
	}
}

func TestTruncateRefusesAPointInsideASegmentOrBelowUna(t *testing.T) {
	q := New(8)
	pushN(t, q, 4, 100)
	q.OnAck(100, nil, time.Millisecond)
	for _, end := range []uint64{150, 50} {
		if err := q.Truncate(end); !errors.Is(err, ErrNotBoundary) {
			t.Errorf("Truncate(%d) = %v, want ErrNotBoundary", end, err)
		}
	}
	if q.Nxt() != 400 || q.Len() != 3 {
		t.Fatalf("a refused Truncate changed the queue: nxt %d, %d segments", q.Nxt(), q.Len())
	}
}

func TestRefusedRetransmissionIsLostAgainAndNotInFlight(t *testing.T) {
	q := New(8)
	pushN(t, q, 4, 100)
	q.OnRTO(10 * time.Millisecond)
	s, ok := q.NextToRetransmit()
	if !ok || s.Start != 0 {
		t.Fatalf("first candidate %+v %v, want the segment at 0", s, ok)
	}
	prev, _ := q.Seg(s.Start)
	pipe := q.InFlight()
	q.Retransmitted(s.Start, 11*time.Millisecond)
	if q.InFlight() != pipe+100 {
		t.Fatalf("a retransmission did not count in flight")
	}
	q.RetransmitRefused(prev)
	if q.InFlight() != pipe {
		t.Fatalf("pipe %d after a refused retransmission, want %d", q.InFlight(), pipe)
	}
	got, _ := q.Seg(0)
	if got.Retrans != 0 || got.LastSent != prev.LastSent || !got.Lost || got.RetransInFlight {
		t.Fatalf("segment after refusal %+v, want as before the resend", got)
	}
	if again, ok := q.NextToRetransmit(); !ok || again.Start != 0 {
		t.Fatalf("the refused segment is not a candidate again: %+v %v", again, ok)
	}
}
