package bench

import (
	"sort"
	"sync"
	"time"
)

// DefaultLateLimit is the p99 timer lateness above which a real-time
// emulated row is rejected: on the 2 ms RTT of t14, half a millisecond late
// is a quarter of the path's round trip added as jitter.
const DefaultLateLimit = 500 * time.Microsecond

// realTimeWire is implemented by arms whose path is a nic/wire driven by the
// host's timers: their rows are only as good as those timers are punctual.
type realTimeWire interface {
	realTimeWire() bool
}

func (gvisorArm) realTimeWire() bool { return true }

// lateProbe measures how late the runtime's timers fire while a real-time
// row runs: it asks for a 1 ms timer over and over and records the overshoot.
// The emulated wire runs on the same timers, so a late probe means a late
// path (queues drain late, ACKs bunch), and the row measures the host's load.
type lateProbe struct {
	mu   sync.Mutex
	late []time.Duration
	stop chan struct{}
	done chan struct{}
}

func startLateProbe() *lateProbe {
	p := &lateProbe{stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(p.done)
		t := time.NewTimer(time.Millisecond)
		defer t.Stop()
		for {
			start := time.Now()
			t.Reset(time.Millisecond)
			select {
			case <-p.stop:
				return
			case <-t.C:
				p.mu.Lock()
				if len(p.late) < 1<<20 {
					p.late = append(p.late, time.Since(start)-time.Millisecond)
				}
				p.mu.Unlock()
			}
		}
	}()
	return p
}

// Lateness is a row's timer overshoot: median, 99th percentile, maximum.
type Lateness struct {
	Samples       int
	P50, P99, Max time.Duration
}

func (p *lateProbe) finish() Lateness {
	close(p.stop)
	<-p.done
	p.mu.Lock()
	defer p.mu.Unlock()
	s := append([]time.Duration(nil), p.late...)
	if len(s) == 0 {
		return Lateness{}
	}
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	q := func(f float64) time.Duration { return s[int(f*float64(len(s)-1))] }
	return Lateness{Samples: len(s), P50: q(0.5), P99: q(0.99), Max: s[len(s)-1]}
}
