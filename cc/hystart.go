package cc

import (
	"math"
	"time"
)

// HyStart++ (RFC 9406) in the initial slow start only: while ssthresh is
// still infinite. After any loss or RTO, ssthresh is finite and slow start is
// RFC 5681's (reno.go), by construction.
//
// Constants are RFC 9406 §4.3's.
const (
	hsMinRTTThresh  = 4 * time.Millisecond
	hsMaxRTTThresh  = 16 * time.Millisecond
	hsMinRTTDivisor = 8
	hsNRTTSample    = 8
	hsCSSGrowthDiv  = 4
	hsCSSRounds     = 5
	hsLUnpaced      = 8 // L when the sender does not pace (§4.3)
	noRTT           = time.Duration(math.MaxInt64)
	// hsMaxRTTSample bounds a sample so last + RttThresh cannot overflow.
	hsMaxRTTSample = time.Hour
)

// hsEvent is what one RTT sample did to HyStart++.
type hsEvent struct {
	entered      bool // entered CSS
	firstInRound bool // ... for the first time in this round
	resumed      bool // left CSS for slow start: the RTT rise was spurious
}

// hystart is the per-connection HyStart++ state (RFC 9406 §4.2).
type hystart struct {
	active bool // arm B and the initial slow start not yet ended
	l      int  // segments per ACK; 0 = unlimited (a pacing sender)

	roundOpen       bool
	windowEnd       uint64
	lastRoundMin    time.Duration
	currentRoundMin time.Duration
	samples         int

	css              bool
	cssBaseline      time.Duration
	cssRounds        int
	cssRemainder     int // bytes of growth not yet applied in CSS (a quarter's remainder)
	enteredThisRound bool
}

func newHystart(enabled, pacing bool) hystart {
	l := hsLUnpaced
	if pacing {
		l = 0
	}
	return hystart{
		active:          enabled,
		l:               l,
		lastRoundMin:    noRTT,
		currentRoundMin: noRTT,
		cssBaseline:     noRTT,
	}
}

// stop ends HyStart++ for good: a loss or RTO ends the initial slow start.
func (h *hystart) stop() {
	h.active = false
	h.css = false
}

// startRoundIfNone opens a round at an ACK when none is open (the first, or
// after a round ended with nothing outstanding): windowEnd = SND.NXT. RFC 9406
// §4.2 starts the first round at the connection's start; starting it at the
// first ACK only moves which round the first samples fall in.
func (h *hystart) startRoundIfNone(sndNxt uint64) {
	if !h.roundOpen {
		h.roundOpen = true
		h.windowEnd = sndNxt
	}
}

// growth is the ACK's cwnd increase: min(N, L·SMSS) in slow start, a quarter
// of that in CSS with the remainder carried, so CSS's growth over many ACKs is
// exactly a quarter of slow start's (RFC 9406 §4.2).
func (h *hystart) growth(acked, smss int) int {
	g := acked
	if h.l > 0 && g > h.l*smss {
		g = h.l * smss
	}
	if !h.css {
		return g
	}
	g += h.cssRemainder
	h.cssRemainder = g % hsCSSGrowthDiv
	return g / hsCSSGrowthDiv
}

// rttThresh is RFC 9406 §4.2's clamp(lastRoundMinRTT/8, 4 ms, 16 ms).
func rttThresh(lastRoundMin time.Duration) time.Duration {
	return max(hsMinRTTThresh, min(lastRoundMin/hsMinRTTDivisor, hsMaxRTTThresh))
}

// onRTT takes one RTT sample (0 = none) and checks, on every ACK of a round
// with at least N_RTT_SAMPLE samples, for CSS entry in slow start or for a
// spurious entry in CSS (RFC 9406 §4.2). A round's minimum only falls, so one
// round can enter and resume more than once.
func (h *hystart) onRTT(rtt time.Duration) (ev hsEvent) {
	if !h.active || rtt <= 0 {
		return ev
	}
	rtt = min(rtt, hsMaxRTTSample)
	h.currentRoundMin = min(h.currentRoundMin, rtt)
	h.samples++
	if h.samples < hsNRTTSample {
		return ev
	}
	if !h.css {
		if h.currentRoundMin == noRTT || h.lastRoundMin == noRTT {
			return ev
		}
		if h.currentRoundMin >= h.lastRoundMin+rttThresh(h.lastRoundMin) {
			h.css = true
			h.cssBaseline = h.currentRoundMin
			h.cssRounds = 0
			h.cssRemainder = 0
			ev.entered = true
			ev.firstInRound = !h.enteredThisRound
			h.enteredThisRound = true
		}
		return ev
	}
	if h.currentRoundMin < h.cssBaseline {
		h.css = false
		h.cssBaseline = noRTT
		ev.resumed = true
	}
	return ev
}

// onCumAck ends the round when the cumulative ACK reaches windowEnd and
// starts the next with windowEnd = SND.NXT; with nothing outstanding the next
// round opens at the next ACK instead. It counts CSS rounds (the partial
// round of entry counts, RFC 9406 §4.2) and reports whether CSS_ROUNDS are
// done, which ends slow start.
func (h *hystart) onCumAck(sndUna, sndNxt uint64) (exit bool) {
	if !h.active || !h.roundOpen || sndUna < h.windowEnd {
		return false
	}
	h.enteredThisRound = false
	h.lastRoundMin = h.currentRoundMin
	h.currentRoundMin = noRTT
	h.samples = 0
	h.windowEnd = sndNxt
	h.roundOpen = sndNxt > sndUna
	if h.css {
		h.cssRounds++
		if h.cssRounds >= hsCSSRounds {
			h.stop()
			return true
		}
	}
	return false
}

// finite maps the internal infinity to 0 ("none") for State.
func finite(d time.Duration) time.Duration {
	if d == noRTT {
		return 0
	}
	return d
}
