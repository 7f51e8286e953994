// Package rtt is the retransmission-timer estimator of RFC 6298: smoothed RTT
// and its variation (§2), exponential backoff (§5.5), and a windowed minimum
// RTT for loss detection and slow-start exit. It reads no clock: every sample
// carries its time as an argument.
//
// Karn's rule (§3) is the caller's: it passes only samples from segments that
// were never retransmitted, or from timestamps (RFC 7323 §4).
package rtt

import "time"

// Defaults for a zero Config field.
const (
	// DefaultInitialRTO is RFC 6298 §2.1's initial RTO.
	DefaultInitialRTO = time.Second
	// DefaultMinRTO departs from RFC 6298 §2.4 (which says 1 s): 200 ms, as
	// deployed stacks use, and it floors the RTO's variation term (RTO) as
	// well as the RTO. It is safe because the RTO is the last resort here:
	// RACK-TLP (RFC 8985) recovers tail and reordering losses first, a
	// spurious timeout is detected and undone (RFC 8985 §6.3, RFC 9438 §4.9),
	// and backoff still doubles the timer on every repeat, so a congested path
	// sees at most one extra retransmission per RTO.
	// control:hosttests-pilot-stall-long-min-rto
	DefaultMinRTO = 200 * time.Millisecond
	// DefaultMaxRTO is above RFC 6298 §2.5's floor of 60 s for the maximum.
	DefaultMaxRTO = 120 * time.Second
	// DefaultGranularity is the clock granularity G of RFC 6298 §2.
	DefaultGranularity = time.Millisecond
	// MinRTTWindow is how long a minimum RTT sample stays valid; a path whose
	// delay rises for longer than this reports the new, higher minimum.
	MinRTTWindow = 10 * time.Second
)

// Config bounds the estimator. A zero field takes its default.
type Config struct {
	InitialRTO, MinRTO, MaxRTO, Granularity time.Duration
}

// minBuckets splits the min-RTT window into this many sub-windows; the
// reported minimum is over the sub-windows that started within the window,
// so a stale minimum ages out within MinRTTWindow·(1+1/minBuckets).
const minBuckets = 4

type bucket struct {
	start time.Duration
	min   time.Duration
	used  bool
}

// Estimator holds one connection's RTT state. Not safe for concurrent use.
type Estimator struct {
	cfg      Config
	has      bool
	srtt     time.Duration
	rttvar   time.Duration
	latest   time.Duration
	backoffs int
	buckets  [minBuckets + 1]bucket // ring of sub-window minima
	cur      int
}

// New returns an estimator with no sample yet; its RTO is InitialRTO.
func New(c Config) *Estimator {
	if c.InitialRTO <= 0 {
		c.InitialRTO = DefaultInitialRTO
	}
	if c.MinRTO <= 0 {
		c.MinRTO = DefaultMinRTO
	}
	if c.MaxRTO <= 0 {
		c.MaxRTO = DefaultMaxRTO
	}
	if c.MaxRTO < c.MinRTO {
		c.MaxRTO = c.MinRTO
	}
	if c.Granularity <= 0 {
		c.Granularity = DefaultGranularity
	}
	return &Estimator{cfg: c}
}

// Sample folds one valid RTT measurement taken at now into the estimate
// (RFC 6298 §2.2, §2.3). A negative rtt is ignored. A new measurement
// collapses any backoff, as RFC 6298 §5 notes after step 5.7.
func (e *Estimator) Sample(now, rtt time.Duration) {
	if rtt < 0 {
		return
	}
	e.latest = rtt
	if !e.has {
		e.has = true
		e.srtt = rtt
		e.rttvar = rtt / 2
	} else {
		// control:tcpinternal-rtt-variance-after-srtt-1
		d := e.srtt - rtt
		if d < 0 {
			d = -d
		}
		// control:tcpinternal-rtt-variance-after-srtt-2
		// RTTVAR first, with the old SRTT (§2.3); beta = 1/4, alpha = 1/8.
		e.rttvar = (3*e.rttvar + d) / 4
		// control:tcpinternal-rtt-variance-after-srtt-3
		e.srtt = (7*e.srtt + rtt) / 8
	}
	e.backoffs = 0
	e.noteMin(now, rtt)
}

func (e *Estimator) noteMin(now, rtt time.Duration) {
	sub := MinRTTWindow / minBuckets
	b := &e.buckets[e.cur]
	if !b.used {
		*b = bucket{start: now, min: rtt, used: true}
		return
	}
	if now-b.start >= sub || now < b.start {
		e.cur = (e.cur + 1) % len(e.buckets)
		e.buckets[e.cur] = bucket{start: now, min: rtt, used: true}
		return
	}
	if rtt < b.min {
		b.min = rtt
	}
}

// HasSample reports whether any sample has been taken.
func (e *Estimator) HasSample() bool { return e.has }

// SRTT is the smoothed RTT, 0 before the first sample.
func (e *Estimator) SRTT() time.Duration { return e.srtt }

// RTTVar is the RTT variation, 0 before the first sample.
func (e *Estimator) RTTVar() time.Duration { return e.rttvar }

// Latest is the most recent sample.
func (e *Estimator) Latest() time.Duration { return e.latest }

// MinRTT is the minimum over samples of the last MinRTTWindow (measured back
// from the newest sample's time), 0 before the first sample.
func (e *Estimator) MinRTT() time.Duration {
	if !e.has {
		return 0
	}
	newest := e.buckets[e.cur].start
	var m time.Duration
	found := false
	for i := range e.buckets {
		b := e.buckets[i]
		if !b.used || newest-b.start >= MinRTTWindow {
			continue
		}
		if !found || b.min < m {
			m, found = b.min, true
		}
	}
	return m
}

// RTO is the current retransmission timeout: SRTT + max(G, 4·RTTVAR,
// MinRTO), at least MinRTO and at most MaxRTO (RFC 6298 §2.3-2.5), doubled
// once per Backoff (§5.5) and clamped again.
//
// Departure from RFC 6298 §2.3-2.4, which floor the sum SRTT + max(G,
// 4·RTTVAR) at the minimum: here the minimum floors the variation term, as
// deployed stacks do. Samples come once per ACK (timestamps), so where the
// RTT changes smoothly RTTVAR decays to almost nothing within a round and the
// RTO sat a few milliseconds past SRTT: a queue that grew while a loss was
// repaired outlasted it (20 Mbit/s, 600 ms, 0.1% loss: RTO 763 ms, the
// resend's round trip 782 ms). It is safe: the RTO is only later than the
// sum's, by at most MinRTO, and RACK-TLP (RFC 8985) repairs losses first.
func (e *Estimator) RTO() time.Duration {
	rto := e.cfg.InitialRTO
	if e.has {
		// control:tcpinternal-rtt-rto-variation-unfloored
		v := max(4*e.rttvar, e.cfg.Granularity, e.cfg.MinRTO)
		rto = e.srtt + v
	}
	if rto < e.cfg.MinRTO {
		rto = e.cfg.MinRTO
	}
	for i := 0; i < e.backoffs && rto < e.cfg.MaxRTO; i++ {
		rto *= 2
	}
	if rto > e.cfg.MaxRTO {
		rto = e.cfg.MaxRTO
	}
	return rto
}

// Backoff doubles the RTO after a retransmission timeout (RFC 6298 §5.5).
// The count saturates at 64; the RTO itself stops at MaxRTO.
func (e *Estimator) Backoff() {
	if e.backoffs < 64 {
		e.backoffs++
	}
}

// ResetBackoff undoes all backoff, e.g. when an ACK acknowledges new data
// after a timeout.
func (e *Estimator) ResetBackoff() { e.backoffs = 0 }

// Backoffs is how many times the RTO has been doubled since the last reset
// or sample; a caller gives up the connection when it exceeds its budget.
func (e *Estimator) Backoffs() int { return e.backoffs }
