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
	hsMinRTTThresh = 4 * time.Millisecond
	// control:cc-max-rtt-thresh-32ms
	hsMaxRTTThresh  = 16 * time.Millisecond
	hsMinRTTDivisor = 8
	// control:cc-one-sample
	hsNRTTSample = 8
	// control:cc-css-divisor-one
	hsCSSGrowthDiv = 4
	// control:host-hystart-never-exits
	// control:hosttests-stretch-css-never-completes
	hsCSSRounds = 5
	// hsL is L, the per-ACK growth cap in segments, for the ACK-clocked
	// arm B: RFC 9406 §4.3's L = 8 for a sender that does not pace. Arm B
	// keeps it on stretch ACKs, where a 16-segment ACK grows 8 (1.5× a
	// round, not slow start's doubling): the t14 model is fitted to metal
	// rows measured with it, and a larger L leaves that fit (L = 12: B's
	// 100 ms mark 4.16 MB against the fit's 1.58–4.12).
	//
	// The paced arm P uses L = infinity, as §4.3 recommends, with its delay
	// check counting a stretch ACK as the ACKs it stands for (onRTT). So
	// does the default arm D, with the same departures (onRTT), whose
	// growth past the ACK clock is paced (ClockPacing): a departure from
	// §4.3, which asks L = 8 of a sender that does not pace all it sends.
	// Why it is safe: what D sends unpaced is only what the ACK clock
	// releases, the bytes each ACK delivered (the rate the path has just
	// carried) and the initial window; the growth, up to a window a round,
	// leaves at cwnd/min_rtt, as a pacing sender's would, so no ACK puts
	// more than its own delivery into the queue at once, and growing by all
	// an ACK covers is what the kernel's slow start does on stretch ACKs.
	// With L = 8 a 16-segment ACK grows 1.5× a round: on 100 Mbit/s,
	// 100 ms, one ACK per 16 segments, arm B had 2.1 MB by 1 s where D has
	// 5.0 and the kernel's cubic 4.9 (metal/README.md).
	// Counted one sample an ACK, a round of 16-segment ACKs held too few
	// samples to check before the doubled flight had filled the queue:
	// measured on 100 Mbit/s, 50 ms, one ACK per 16 segments and a 1 BDP
	// queue, 145 KB dropped in one burst with L = infinity; with the count,
	// none.
	// control:cc-l-one
	// control:hosttests-matrix-arm-b-never-grows
	hsL   = 8
	noRTT = time.Duration(math.MaxInt64)
	// hsMaxRTTSample bounds a sample so last + RttThresh cannot overflow.
	hsMaxRTTSample = time.Hour
)

// hsEvent is what one RTT sample did to HyStart++.
type hsEvent struct {
	entered      bool // entered CSS
	firstInRound bool // ... for the first time in this round
	resumed      bool // left CSS for slow start: the RTT rise was spurious
	exit         bool // CSS saw the minimum rise again: slow start ends now
}

// hystart is the per-connection HyStart++ state (RFC 9406 §4.2).
type hystart struct {
	active bool // arm B and the initial slow start not yet ended
	paced  bool // arm P (paces all) or arm D (paces its growth): L = infinity and onRTT's paced departures

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

	recent [hsNRTTSample]time.Duration // the round's latest samples, a ring (onRTT)
}

func newHystart(enabled, paced bool) hystart {
	return hystart{
		active:          enabled,
		paced:           paced,
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

// growth is the ACK's cwnd increase: min(N, L·SMSS) in slow start (N for a
// paced sender, L = infinity), a quarter of that in CSS with the remainder
// carried, so CSS's growth over many ACKs is exactly a quarter of slow
// start's (RFC 9406 §4.2).
func (h *hystart) growth(acked, smss int) int {
	g := acked
	// control:hosttests-paced-growth-capped
	if !h.paced {
		g = min(acked, hsL*smss)
	}
	if !h.css {
		return g
	}
	g += h.cssRemainder
	h.cssRemainder = g % hsCSSGrowthDiv
	return g / hsCSSGrowthDiv
}

// samplesIn is how many RTT samples an ACK of acked bytes counts as (onRTT).
func (h *hystart) samplesIn(acked, smss int) int {
	// control:hosttests-stretch-samples-counted-per-ack
	if !h.paced {
		return 1
	}
	return max(1, min(acked/(2*smss), hsNRTTSample))
}

// recentMin is the minimum of the round's latest N_RTT_SAMPLE samples.
func (h *hystart) recentMin() time.Duration {
	m := h.recent[0]
	for _, r := range h.recent[1:] {
		m = min(m, r)
	}
	return m
}

// rttThresh is RFC 9406 §4.2's clamp(lastRoundMinRTT/8, 4 ms, 16 ms).
func rttThresh(lastRoundMin time.Duration) time.Duration {
	return max(hsMinRTTThresh, min(lastRoundMin/hsMinRTTDivisor, hsMaxRTTThresh))
}

// onRTT takes one RTT sample (0 = none) and checks, on every ACK of a round
// with at least N_RTT_SAMPLE samples, for CSS entry in slow start, for a
// spurious entry in CSS, and, for a paced sender, for a queue that keeps
// growing in CSS.
//
// Departure from RFC 9406 §4.2, which compares the round's running minimum:
// here each check reads the minimum of the round's latest N_RTT_SAMPLE
// samples. A queue that forms mid-round leaves the round's first samples at
// the base RTT, so the running minimum sees it only in the next round, by
// which time slow start has grown the flight by up to another round's worth
// (the overshoot on a 1 BDP queue). The latest eight samples are still eight,
// so one jittery sample neither enters nor resumes.
//
// Second departure, for a paced sender (arms P and D) only: where CSS sees that minimum
// rise a further RttThresh over its baseline, slow start ends there instead
// of after CSS_ROUNDS, whose 1.25× a round for five rounds would triple the
// flight into a queue already seen. A paced flight makes no burst queues of
// its own, so a second rise is the standing queue growing. An unpaced
// sender's ACK-clocked bursts make the latest samples noisier: on the t14
// path this exit fired in 4 of 5 connections where the field's metal rows
// (RFC CSS) show none, so arm B keeps CSS_ROUNDS. Arm D takes it: its
// growth is paced, and the bursts its ACK clock releases are each ACK's own
// delivery, which the path carried a round before; on the t14 path (three
// rows of 5 × 250 MB) it exited in 2 to 4 connections of 5, retransmitted
// nothing, and its 100 ms mark is 6.1–7.4 MB against the kernel's 4.6–5.3
// (B 2.0–2.6). It is what ends D's slow start on
// parity-50m-40ms at 329 KB with nothing lost, where arm B's CSS_ROUNDS
// grew to 1.22 MB on a 250 KB path and lost 45 KB. Both departures are
// safe: each only ends growth sooner, never grows more than §4.2.
//
// Third departure, for a paced sender (arms P and D) only: an ACK that delivers 2k
// segments counts as k samples (at most N_RTT_SAMPLE), the ACKs of a
// receiver that acknowledges every second segment, where §4.2 counts one a
// sample. A stretch ACK stands for the ACKs the path coalesced into it, and
// its sample, its newest segment's, is the smallest of theirs, so the
// minimum over the latest N_RTT_SAMPLE samples is the one they would have
// given. Counted one an ACK, a round of 16-segment ACKs has a few samples,
// and with L = infinity the check came after the doubled flight had filled
// the queue (see hsL). It only lets the check run sooner in a round; arm
// B (L = 8, which grows 1.5× a round on such ACKs) keeps §4.2's count,
// which the t14 fit was measured with.
func (h *hystart) onRTT(rtt time.Duration, acked, smss int) (ev hsEvent) {
	if !h.active || rtt <= 0 {
		return ev
	}
	rtt = min(rtt, hsMaxRTTSample)
	h.currentRoundMin = min(h.currentRoundMin, rtt)
	for range h.samplesIn(acked, smss) {
		h.recent[h.samples%hsNRTTSample] = rtt
		h.samples++
	}
	if h.samples < hsNRTTSample {
		return ev
	}
	recent := h.recentMin()
	switch {
	case !h.css:
		// control:cc-css-entry-on-round-minimum
		// control:cc-entry-on-first-round
		// control:cc-strict-threshold
		if h.lastRoundMin != noRTT && recent >= h.lastRoundMin+rttThresh(h.lastRoundMin) {
			h.enterCSS(recent, &ev)
		}
	// control:cc-no-resume
	case recent < h.cssBaseline:
		h.css = false
		h.cssBaseline = noRTT
		ev.resumed = true
	// control:cc-css-no-exit-on-second-rise
	case h.paced && recent >= h.cssBaseline+rttThresh(h.cssBaseline):
		h.stop()
		ev.exit = true
	}
	return ev
}

// enterCSS starts CSS with the baseline the entry saw; the round's minimum
// restarts there, so samples from before the queue formed do not count.
func (h *hystart) enterCSS(baseline time.Duration, ev *hsEvent) {
	h.currentRoundMin = baseline
	h.css = true
	h.cssBaseline = baseline
	h.cssRounds = 0
	h.cssRemainder = 0
	ev.entered = true
	// control:cc-entry-round-always-first
	ev.firstInRound = !h.enteredThisRound
	h.enteredThisRound = true
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
	// control:cc-entry-round-never-reset
	h.enteredThisRound = false
	h.lastRoundMin = h.currentRoundMin
	h.currentRoundMin = noRTT
	h.samples = 0
	h.windowEnd = sndNxt
	h.roundOpen = sndNxt > sndUna
	if h.css {
		h.cssRounds++
		// control:cc-css-rounds-plus-one
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
