package cc

// The limited gate: an ACK may grow cwnd only if the window was in use when
// the sender last stopped. Application and peer-window stops grow nothing
// (RFC 9438 §5.8, RFC 7661 §4.3); a congestion-window stop always may grow.
//
// The card rule (arm B) is a deliberate departure from RFC 9438 §5.8. Under
// §5.8's definition a flow sending less than cwnd allows is application
// limited, whatever held it, so a sender stopped by the card's TX credit with
// cwnd room left would grow nothing. Here a card stop counts as window-limited
// when at least half of cwnd was in flight. Why it is safe: a flight of at
// least half of cwnd is RFC 7661 §4.3's validated window, whose mechanisms
// RFC 9438 §4.6 admits; the stop that opens the gate has cwnd ≤ 2·flight, so
// growth starts only from a window the path has half carried, and the next
// stop judges the grown cwnd afresh. A loss sets ssthresh from the flight, not
// from cwnd (RFC 9438 §4.6, reducedWindow), so an unvalidated part of cwnd
// never becomes the next ssthresh.
//
// Arm A keeps the old rule: a card stop counts only with less than one SMSS
// of cwnd room left.

// gate remembers the last stop and whether it left the window in use.
type gate struct {
	arm      Arm
	smss     int
	stop     StopReason
	inFlight int
	isLim    bool
}

// newGate starts window-limited: before the first reported stop the sender
// is taken to be filling its initial window.
func newGate(arm Arm, smss int) gate {
	return gate{arm: arm, smss: smss, stop: StopCwnd, isLim: true}
}

// onStop judges a stop against cwnd at that moment.
func (g *gate) onStop(reason StopReason, inFlight, cwnd int) {
	g.stop = reason
	g.inFlight = inFlight
	g.isLim = stopIsLimited(g.arm, reason, inFlight, cwnd, g.smss)
}

func (g *gate) limited() bool { return g.isLim }

// stopIsLimited is the gate's rule for one stop: may the ACKs after it grow cwnd?
func stopIsLimited(arm Arm, reason StopReason, inFlight, cwnd, smss int) bool {
	switch reason {
	// control:cc-app-stop-limited
	case StopCwnd:
		return true
	case StopCard:
		// control:cc-card-always-limited
		if arm == ArmA {
			return cwnd-inFlight < smss
		}
		// At least half of cwnd in flight: 2·inFlight ≥ cwnd, exact for odd
		// cwnd, written so it cannot overflow.
		// control:cc-half-less-a-segment
		// control:cc-old-card-rule-in-arm-b
		// control:cc-quarter-window
		return inFlight >= cwnd-inFlight
	default:
		// StopApp, StopPeerWindow and any unknown reason: not limited by cwnd.
		return false
	}
}
