package cc

import (
	"testing"
	"time"

	"github.com/netramp/netramp/counters"
)

const smss = 1460

// sim drives one Controller through a sender's events in virtual time.
type sim struct {
	t   *testing.T
	c   *Controller
	reg *counters.Registry
	now time.Duration
	una uint64
	nxt uint64
}

func newSim(t *testing.T, cfg Config) *sim {
	t.Helper()
	if cfg.SMSS == 0 {
		cfg.SMSS = smss
	}
	reg := counters.NewRegistry()
	if cfg.Counters == nil {
		cfg.Counters = NewCounters(reg)
	}
	c, err := New(cfg)
	if err != nil {
		t.Fatalf("New(%+v): %v", cfg, err)
	}
	return &sim{t: t, c: c, reg: reg}
}

func (s *sim) inFlight() int { return int(s.nxt - s.una) }

// send sends n bytes and ends the opportunity on reason.
func (s *sim) send(n int, reason StopReason) {
	s.nxt += uint64(n)
	s.c.OnSend(s.now, s.nxt)
	s.c.OnSendStop(reason, s.inFlight())
}

// fill sends up to cwnd and stops on the congestion window.
func (s *sim) fill() {
	if room := s.c.Cwnd() - s.inFlight(); room > 0 {
		s.nxt += uint64(room)
		s.c.OnSend(s.now, s.nxt)
	}
	s.c.OnSendStop(StopCwnd, s.inFlight())
}

// ack acknowledges n bytes with one RTT sample (0 = none) and returns cwnd's growth.
func (s *sim) ack(n int, rtt time.Duration) int {
	before := s.c.Cwnd()
	s.una += uint64(n)
	if s.una > s.nxt {
		s.nxt = s.una
	}
	s.c.OnAck(Ack{Now: s.now, Acked: n, SndUna: s.una, SndNxt: s.nxt, RTT: rtt, SRTT: rtt, InFlight: s.inFlight()})
	return s.c.Cwnd() - before
}

func (s *sim) counter(name string) uint64 {
	c := s.reg.Lookup(name)
	if c == nil {
		s.t.Fatalf("counter %s not registered", name)
	}
	return c.Load()
}

func (s *sim) advance(d time.Duration) { s.now += d }

const ms = time.Millisecond

// round sends len(rtts) segments ending on the congestion window, then
// acknowledges them one a time with the given RTT samples; the last ACK
// reaches windowEnd and ends the round.
func (s *sim) round(rtts ...time.Duration) {
	s.send(len(rtts)*smss, StopCwnd)
	for _, r := range rtts {
		s.ack(smss, r)
	}
}

// rep returns n copies of d.
func rep(n int, d time.Duration) []time.Duration {
	out := make([]time.Duration, n)
	for i := range out {
		out[i] = d
	}
	return out
}

func cat(parts ...[]time.Duration) []time.Duration {
	var out []time.Duration
	for _, p := range parts {
		out = append(out, p...)
	}
	return out
}
