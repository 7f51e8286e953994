package cc

import (
	"math"
	"time"
)

// CUBIC's constants (RFC 9438 §4.1, §4.3): C in segments per second cubed.
const (
	cubicC    = 0.4
	betaNum   = 7
	betaDen   = 10
	beta      = float64(betaNum) / betaDen
	alphaReno = 3 * (1 - beta) / (1 + beta) // §4.3's α_cubic until W_est reaches cwnd_prior
)

// cubic is CUBIC's congestion-avoidance state (RFC 9438 §4). Windows are in
// bytes as float64; the RFC's segment-based formulas are scaled by SMSS, so
// W_cubic(t) = C·SMSS·(t−K)³ + W_max and K = ∛((W_max − cwnd_epoch)/(C·SMSS)).
type cubic struct {
	smss float64
	fc   bool // fast convergence (§4.7)

	wMax       float64
	k          float64 // seconds
	epochValid bool
	epochStart time.Duration // shifted forward by time the gate excluded (§5.8)
	lastAck    time.Duration
	cwndEpoch  float64
	wEst       float64
	remainder  float64 // fractional bytes of concave/convex growth not yet in cwnd
	afterRTO   bool    // the next epoch is the first after an RTO (§4.8)
}

func newCubic(smss int, fc bool) cubic {
	return cubic{smss: float64(smss), fc: fc}
}

// kFor is §4.2's K in seconds for a window rising from cwndEpoch to wMax.
// Departure: when cwnd_epoch ≥ W_max the formula's K is negative, placing the
// curve's plateau in the past and the epoch already on its convex side; here
// K = 0 and W_max = cwnd_epoch instead (startEpoch), which grows no faster, so
// it is safe.
func kFor(wMax, cwndEpoch, smss float64) float64 {
	if wMax <= cwndEpoch {
		return 0
	}
	return math.Cbrt((wMax - cwndEpoch) / (cubicC * smss))
}

// wCubic is §4.2's window at t seconds into the epoch, in bytes.
func (q *cubic) wCubic(t float64) float64 {
	d := t - q.k
	return cubicC*q.smss*d*d*d + q.wMax
}

// startEpoch begins a congestion-avoidance stage at now with cwnd (§4.2).
// After an RTO, K = 0 and W_max = cwnd (§4.8); otherwise K comes from the
// W_max saved at the last reduction. W_est starts at cwnd (§4.3).
func (q *cubic) startEpoch(now time.Duration, cwnd int) {
	w := float64(cwnd)
	q.epochValid = true
	q.epochStart = now
	q.lastAck = now
	q.cwndEpoch = w
	q.wEst = w
	q.remainder = 0
	// control:cc-rto-keeps-wmax
	if q.afterRTO || q.wMax < w {
		q.wMax = w
	}
	q.afterRTO = false
	q.k = kFor(q.wMax, w, q.smss)
}

// handOff starts CUBIC where HyStart++ ended slow start: K = 0 and W_max =
// cwnd (RFC 9438 §4.10; the caller sets cwnd_prior = cwnd).
func (q *cubic) handOff(now time.Duration, cwnd int) {
	q.afterRTO = false
	q.wMax = float64(cwnd)
	q.startEpoch(now, cwnd)
}

// onReduction records W_max for the coming epoch at a congestion event, with
// fast convergence (§4.7): a loss below the previous W_max suggests new flows,
// so W_max is lowered to cwnd·(1+β)/2 to release bandwidth sooner.
func (q *cubic) onReduction(cwnd int) {
	w := float64(cwnd)
	// control:cc-no-fast-convergence
	if q.fc && w < q.wMax {
		q.wMax = w * (1 + beta) / 2
	} else {
		q.wMax = w
	}
	q.epochValid = false
}

// onRTO marks the next epoch as the first after a timeout (§4.8).
func (q *cubic) onRTO() {
	q.epochValid = false
	q.afterRTO = true
}

// excludeUntil drops the time since the last ACK from t: the sender was not
// using its window (§5.8).
func (q *cubic) excludeUntil(now time.Duration) {
	if q.epochValid && now > q.lastAck {
		q.epochStart += now - q.lastAck
		q.lastAck = now
	}
}

// alpha is §4.3's α_cubic: 3(1−β)/(1+β) until W_est reaches cwnd_prior, then 1.
func (q *cubic) alpha(cwndPrior int) float64 {
	// control:cc-alpha-never-one
	if q.wEst >= float64(cwndPrior) {
		return 1
	}
	return alphaReno
}

// cubicMaxSteps bounds the per-segment steps one ACK is split into; beyond
// it a step covers more than one segment.
const cubicMaxSteps = 64

// onAck applies one congestion-avoidance ACK of acked bytes to *cwnd and
// reports whether it was in the Reno-friendly region. Time the gate found not
// limited is cut from t (§5.8 with the gate of limited.go); such ACKs grow
// nothing. The ACK is applied as one step per SMSS acknowledged, each growing
// cwnd by (target − cwnd)/cwnd of its bytes with the fraction carried, so one
// ACK of N segments grows like N ACKs of one (§4.4, §4.5; RFC 3465's byte
// counting).
func (q *cubic) onAck(now time.Duration, acked int, cwnd *int, cwndPrior int, rtt time.Duration, limited bool) (renoFriendly bool) {
	if !q.epochValid {
		q.startEpoch(now, *cwnd)
	}
	if !limited {
		// control:cc-app-limited-time-counted
		q.excludeUntil(now)
		return false
	}
	if now > q.lastAck {
		q.lastAck = now
	}
	if acked <= 0 || *cwnd <= 0 {
		return false
	}
	t := max((now - q.epochStart).Seconds(), 0)
	ahead := max(t+rtt.Seconds(), 0)
	steps := (acked + int(q.smss) - 1) / int(q.smss)
	steps = min(steps, cubicMaxSteps)
	for i := 0; i < steps; i++ {
		// Bytes of step i: acked split as evenly as integers allow.
		part := acked*(i+1)/steps - acked*i/steps
		if q.step(t, ahead, float64(part), cwnd, cwndPrior) {
			renoFriendly = true
		}
	}
	return renoFriendly
}

// step grows *cwnd for part bytes acknowledged at t seconds into the epoch.
func (q *cubic) step(t, ahead, part float64, cwnd *int, cwndPrior int) (renoFriendly bool) {
	w := float64(*cwnd)

	// §4.3: the Reno estimate grows by α·acked/cwnd segments.
	q.wEst += q.alpha(cwndPrior) * q.smss * part / w
	if q.wEst > maxWindow {
		q.wEst = maxWindow
	}
	if q.wCubic(t) < q.wEst {
		if q.wEst > w {
			*cwnd = int(q.wEst)
		}
		q.remainder = 0
		return true
	}

	// §4.4/§4.5: the target one RTT ahead, held within [cwnd, 1.5·cwnd].
	target := q.wCubic(ahead)
	// control:cc-no-floor
	if target < w {
		target = w
	}
	// control:cc-no-cap
	if target > 1.5*w {
		target = 1.5 * w
	}
	inc := (target-w)*part/w + q.remainder
	if inc > target-w {
		inc = target - w
	}
	whole := math.Floor(inc)
	// control:cc-no-remainder
	q.remainder = inc - whole
	*cwnd = int(math.Min(w+whole, maxWindow))
	return false
}
