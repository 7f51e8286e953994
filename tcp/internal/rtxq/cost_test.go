package rtxq

import (
	"fmt"
	"testing"
	"time"
)

// ackSim drives a queue as a sender on a path of fixed round trip would:
// every step one transmission reaches the receiver (or is dropped) and its
// ACK comes back, the sender processes the ACK, detects loss, resends what
// is lost and sends new data to keep window segments outstanding. One new
// segment in every dropEvery is dropped (resends are not). The receiver
// acknowledges cumulatively and SACKs the run holding the segment that just
// arrived, as the first block of a real SACK option would.
type ackSim struct {
	q         *Queue
	window    int
	dropEvery uint64
	now       time.Duration
	flight    []simTx // transmissions in send order, oldest first
	got       []bool  // by segment number: arrived above cum
	cum       uint64  // receiver's next expected offset
	resent    int
}

type simTx struct {
	start, end uint64
	drop       bool
}

const simSeg = 48 // issue 9's tiny MSS

func newAckSim(window int, dropEvery uint64) *ackSim {
	s := &ackSim{q: New(4 * window), window: window, dropEvery: dropEvery}
	for s.q.Len() < window {
		s.sendNew()
	}
	return s
}

func (s *ackSim) sendNew() {
	start := s.q.Nxt()
	if err := s.q.Push(start, start+simSeg, s.now, false); err != nil {
		panic(err)
	}
	drop := s.dropEvery > 0 && (start/simSeg)%s.dropEvery == s.dropEvery/2
	s.flight = append(s.flight, simTx{start, start + simSeg, drop})
	s.got = append(s.got, false)
}

// step delivers the oldest transmission and processes its ACK.
func (s *ackSim) step() {
	s.now += time.Microsecond
	tx := s.flight[0]
	s.flight = s.flight[1:]
	var sacks []Range
	if !tx.drop {
		got := func(off uint64) bool { return off/simSeg < uint64(len(s.got)) && s.got[off/simSeg] }
		s.got[tx.start/simSeg] = true
		for got(s.cum) {
			s.cum += simSeg
		}
		if tx.start >= s.cum {
			lo, hi := tx.start, tx.end
			for lo-simSeg >= s.cum && got(lo-simSeg) {
				lo -= simSeg
			}
			for got(hi) {
				hi += simSeg
			}
			sacks = []Range{{lo, hi}}
		}
	}
	s.q.OnAck(s.cum, sacks, s.now)
	s.q.DetectLoss(s.now, time.Duration(s.window)*time.Microsecond)
	for {
		seg, ok := s.q.NextToRetransmit()
		if !ok {
			break
		}
		s.q.Retransmitted(seg.Start, s.now)
		s.resent++
		s.flight = append(s.flight, simTx{seg.Start, seg.End, false})
	}
	for len(s.flight) < s.window {
		s.sendNew()
	}
}

// visitsPerAck runs warm steps, then measures n steps: the segments the
// queue looked at per ACK. With limit > 0 it fails as soon as the visits of
// all steps so far exceed limit per step (plus a start-up allowance), so a
// queue whose cost grows with its length fails in seconds, not hours.
func visitsPerAck(t *testing.T, window, warm, n int, limit float64) float64 {
	t.Helper()
	s := newAckSim(window, 100)
	v, r := s.q.visits, s.resent
	for i := 1; i <= warm+n; i++ {
		if i == warm+1 {
			v, r = s.q.visits, s.resent
		}
		s.step()
		if limit > 0 && float64(s.q.visits) > limit*float64(i)+1000 {
			t.Fatalf("window %d: %d segments visited in %d ACKs, over %.2f per ACK: cost grows with the queue",
				window, s.q.visits, i, limit)
		}
	}
	if s.resent-r < n/100-window/100-1 {
		t.Fatalf("window %d: %d resends in %d ACKs: the losses were not repaired", window, s.resent-r, n)
	}
	return float64(s.q.visits-v) / float64(n)
}

func TestAckCostWithSACKIsFlatInOutstandingSegments(t *testing.T) {
	// Issue 9: at 82k outstanding segments each ACK walked the queue from
	// its head. The work per ACK must follow what the ACK changes: the
	// same at 1k and at 100k outstanding segments, within ×1.5.
	small := visitsPerAck(t, 1000, 3000, 20000, 0)
	large := visitsPerAck(t, 100000, 210000, 20000, 1.5*small)
	t.Logf("segments visited per ACK: %.2f at 1k outstanding, %.2f at 100k", small, large)
	if large > 1.5*small {
		t.Fatalf("visits per ACK %.2f at 100k outstanding vs %.2f at 1k: grows with the queue", large, small)
	}
}

// BenchmarkAckWithSACK is one ACK's processing (SACK update, loss detection,
// resends) with 1%% of segments lost, at 1k, 10k and 100k outstanding.
func BenchmarkAckWithSACK(b *testing.B) {
	for _, n := range []int{1000, 10000, 100000} {
		b.Run(fmt.Sprintf("outstanding=%d", n), func(b *testing.B) {
			s := newAckSim(n, 100)
			for i := 0; i < 2*n+1000; i++ {
				s.step()
			}
			v0 := s.q.visits
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				s.step()
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N), "ns/ACK")
			b.ReportMetric(float64(s.q.visits-v0)/float64(b.N), "visits/ACK")
		})
	}
}
