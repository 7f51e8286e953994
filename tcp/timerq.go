// The protocol's queue of endpoints by when each one's earliest timer is
// due: one clock timer for the whole protocol.

package tcp

import (
	"container/heap"
	"sync"
	"time"

	"gvisor.dev/gvisor/pkg/tcpip"
)

// timerQueue holds the endpoints with a timer armed, by the time their clock
// is set for (timer.go), behind one clock timer set for the earliest. An arm
// or a move costs O(log n) here; the runtime's timer heap holds one timer
// for the protocol, not one per connection: the runtime walks its heap whole
// when a moved timer comes due, which at 10,000 connections, each moving its
// own clock timer, took a tenth of the CPU of osbench cpu -conns 10000.
// The zero value is an empty queue.
type timerQueue struct {
	mu  sync.Mutex
	h   endpointHeap
	clk tcpip.Timer
	at  time.Duration // protocol time clk fires; 0 = not set
	due []*endpoint   // a fire's endpoints, reused; guarded by firing
	// firing serialises fires: the clock may start one while another runs.
	firing sync.Mutex
}

// schedule makes e's onClock run by at. A later time than e's place in the
// queue leaves it where it is (its onClock sets it again for the rest).
func (p *protocol) schedule(e *endpoint, now, at time.Duration) {
	q := &p.tq
	q.mu.Lock()
	switch {
	case e.tqAt == 0:
		e.tqAt = at
		heap.Push(&q.h, e)
	case at < e.tqAt:
		e.tqAt = at
		heap.Fix(&q.h, e.tqIndex)
	}
	// control:tcp-timerq-clock-not-moved-earlier
	// control:tcp-timer-rearm-eager
	if q.at == 0 || at < q.at {
		q.at = at
		// control:tcp-timerq-one-clock-timer-each
		if q.clk == nil {
			q.clk = p.clock.AfterFunc(at-now, p.onTimerQueue)
		} else {
			q.clk.Reset(at - now)
		}
	}
	q.mu.Unlock()
}

// unschedule takes e out of the queue, for an endpoint that ends.
func (p *protocol) unschedule(e *endpoint) {
	q := &p.tq
	q.mu.Lock()
	if e.tqAt != 0 {
		heap.Remove(&q.h, e.tqIndex)
		e.tqAt = 0
	}
	q.mu.Unlock()
}

// onTimerQueue takes every endpoint that is due off the queue, sets the
// clock for the next, and runs each one's onClock with the queue unlocked
// (an endpoint's lock comes before the queue's).
func (p *protocol) onTimerQueue() {
	q := &p.tq
	q.firing.Lock()
	defer q.firing.Unlock()
	q.mu.Lock()
	now := p.now()
	q.at = 0
	for len(q.h) > 0 && q.h[0].tqAt <= now {
		e := heap.Pop(&q.h).(*endpoint)
		e.tqAt = 0
		q.due = append(q.due, e)
	}
	if len(q.h) > 0 {
		q.at = q.h[0].tqAt
		q.clk.Reset(q.at - now)
	}
	q.mu.Unlock()
	for i, e := range q.due {
		e.onClock()
		q.due[i] = nil
	}
	q.due = q.due[:0]
}

// endpointHeap orders endpoints by tqAt (container/heap); each knows its
// index, tqIndex.
type endpointHeap []*endpoint

func (h endpointHeap) Len() int           { return len(h) }
func (h endpointHeap) Less(i, j int) bool { return h[i].tqAt < h[j].tqAt }
func (h endpointHeap) Swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].tqIndex, h[j].tqIndex = i, j
}

func (h *endpointHeap) Push(x any) {
	e := x.(*endpoint)
	e.tqIndex = len(*h)
	*h = append(*h, e)
}

func (h *endpointHeap) Pop() any {
	old := *h
	e := old[len(old)-1]
	old[len(old)-1] = nil
	*h = old[:len(old)-1]
	return e
}
