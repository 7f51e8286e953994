// Package pacer spreads a sender's segments over time at a rate the
// congestion controller chooses (RFC 9406 §4.3 lets a pacing sender drop
// HyStart++'s per-ACK growth limit): a token bucket of bytes filled at the
// rate, which lets a burst of up to its depth leave back to back. A sender
// that keeps its ACK clock (arm B) also credits the bytes each ACK delivered
// (Credit): up to them, segments leave at once, and only what goes beyond
// them waits for the rate.
// It reads no clock; times are durations since the caller's origin.
package pacer

import (
	"math"
	"time"
)

// Pacer is one connection's token bucket. The zero value is unpaced.
// Not safe for concurrent use.
type Pacer struct {
	rate   float64 // bytes per second; 0 = unpaced
	burst  int     // bucket depth in bytes
	tokens float64 // may go negative after a segment larger than the tokens
	last   time.Duration
	seen   bool
	clock  int // bytes the ACK clock released (Credit) not yet sent; taken before tokens
}

// New returns an unpaced pacer.
func New() *Pacer { return &Pacer{} }

// SetRate sets the pacing rate (bytes per second; 0 or less turns pacing off)
// and the burst allowance in bytes (at least 1). The tokens held are kept,
// clipped to the new depth.
func (p *Pacer) SetRate(bytesPerSec float64, burst int) {
	if bytesPerSec <= 0 || math.IsNaN(bytesPerSec) || math.IsInf(bytesPerSec, 0) {
		bytesPerSec = 0
		p.clock = 0 // credit given while unpaced must not become a burst later
	}
	if burst < 1 {
		burst = 1
	}
	if p.rate == 0 && bytesPerSec > 0 {
		p.tokens = float64(burst) // a newly paced sender starts with a full bucket
	}
	p.rate, p.burst = bytesPerSec, burst
	if p.tokens > float64(burst) {
		p.tokens = float64(burst)
	}
}

// Rate is the pacing rate in bytes per second (0 = unpaced).
func (p *Pacer) Rate() float64 { return p.rate }

func (p *Pacer) refill(now time.Duration) {
	if !p.seen {
		p.seen, p.last = true, now
		return
	}
	if now <= p.last {
		return
	}
	p.tokens += p.rate * (now - p.last).Seconds()
	// control:tcpinternal-pacer-burst-unbounded
	if p.tokens > float64(p.burst) {
		p.tokens = float64(p.burst)
	}
	p.last = now
}

// Credit sets the bytes the ACK clock released (what an ACK delivered, at
// most limit, the congestion window), which may leave at once without
// tokens. It replaces what the last ACK released: credit the sender could
// not send at once (the peer's window or the application held it) is not
// saved into a burst for later. Unpaced, it is ignored.
func (p *Pacer) Credit(bytes, limit int) {
	if p.rate == 0 || bytes <= 0 {
		return
	}
	// control:tcpinternal-pacer-credit-saved
	p.clock = max(min(bytes, limit), 0)
}

// ClockCovers reports whether the ACK clock's credit covers a size-byte
// segment: NextSend lets it go at once and Sent takes it from the credit,
// neither reading the rate.
func (p *Pacer) ClockCovers(size int) bool { return p.rate > 0 && p.clock >= size }

// NextSend is the earliest time, never before now, at which a size-byte
// segment may leave: now when unpaced, when the ACK clock's credit covers
// it, or when the bucket holds min(size, burst) tokens.
func (p *Pacer) NextSend(now time.Duration, size int) time.Duration {
	if p.rate == 0 || p.clock >= size {
		return now
	}
	p.refill(now)
	need := float64(size)
	if need > float64(p.burst) {
		need = float64(p.burst)
	}
	if p.tokens >= need {
		return now
	}
	wait := time.Duration(math.Ceil((need - p.tokens) / p.rate * float64(time.Second)))
	if wait < 1 {
		wait = 1
	}
	return now + wait
}

// Sent takes a size-byte segment's ACK-clock credit if it covers the
// segment, else its tokens, at now.
func (p *Pacer) Sent(now time.Duration, size int) {
	if p.rate == 0 {
		return
	}
	if p.clock >= size {
		p.clock -= size
		return
	}
	p.refill(now)
	p.tokens -= float64(size)
	// The debt is bounded: a caller that ignores NextSend cannot make the
	// pacer wait longer than one second's worth of tokens after it.
	if floor := -p.rate; p.tokens < floor {
		p.tokens = floor
	}
}
