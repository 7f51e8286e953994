// Timestamps on input: PAWS (RFC 7323 §5) and TS.Recent (§4.3).

package tcp

import (
	"time"

	"gvisor.dev/gvisor/pkg/tcpip/header"
)

const (
	// pawsReorderTicks is how far (in the peer's timestamp ticks) an
	// in-window data segment's TSval may lag TS.Recent and still be
	// accepted. Departure from RFC 7323 §5.3, which drops any segment with
	// SEG.TSval < TS.Recent: a segment overtaken on the path by later ones
	// arrives with an older TSval, and dropping it turns reordering into
	// loss. It is safe because PAWS guards against old duplicates from a
	// previous wrap of the sequence space, and such a duplicate is older
	// than the wrap time: with ticks of at least 1 ms (§5.4), 64 ticks is
	// 64 ms, while a wrap takes 2^31 bytes, over 64 ms below ~270 Gbit/s.
	pawsReorderTicks = 64

	// pawsIdle is RFC 7323 §5.5's 24 days: a TS.Recent older than that is
	// invalid, since the peer's clock may have wrapped.
	pawsIdle = 24 * 24 * time.Hour
)

// pawsOld is RFC 7323 §5.3's PAWS test, with the allowance of
// pawsReorderTicks: a segment whose tsVal is older than tsRecent is an old
// duplicate, unless it is reorderable (a data segment that starts below the
// window's right edge) and older by less than pawsReorderTicks: a reordered
// one, whose bytes are needed, or whose duplicate earns the D-SACK (RFC 2883)
// that lets the sender undo a spurious retransmission. An endpoint
// (pawsRejects) and a SYN-queue request (synReceived) both judge by it.
func pawsOld(tsRecent, tsVal uint32, reorderable bool) bool {
	lag := int32(tsRecent - tsVal)
	if lag <= 0 {
		return false
	}
	// control:hosttests-paws-no-reorder-tolerance
	// control:tcp-paws-no-reorder-tolerance
	return !reorderable || lag >= pawsReorderTicks
}

// pawsRejects is pawsOld for an endpoint's segment at segOff, when both ends
// send timestamps and TS.Recent is set and not idle too long (§5.5).
func (e *endpoint) pawsRejects(s *segment, opts *header.TCPOptions, segOff uint64, now time.Duration) bool {
	// control:tcp-paws-off
	if !e.tsOK || !opts.TS || s.has(header.TCPFlagRst) || !e.tsRecentSet || now-e.tsRecentT >= pawsIdle {
		return false
	}
	return pawsOld(e.tsRecent, opts.TSVal, s.data.n > 0 && segOff < e.rcvAdv)
}

// updateTSRecent records the segment's TSval as TS.Recent (RFC 7323 §4.3:
// the segment covers Last.ACK.sent). It runs only once the segment has passed
// the sequence and the ACK checks (RFC 5961 §5 with RFC 7323 §4.3): a blind
// segment with an unacceptable ACK must not move TS.Recent, or PAWS would
// then drop the real peer's segments. A reordered segment PAWS let through
// never moves it back.
func (e *endpoint) updateTSRecent(opts *header.TCPOptions, segOff uint64, now time.Duration) {
	if !e.tsOK || !opts.TS || segOff > e.lastAckSent {
		return
	}
	// control:tcp-ts-recent-moves-back
	if e.tsRecentSet && int32(opts.TSVal-e.tsRecent) < 0 && now-e.tsRecentT < pawsIdle {
		return
	}
	e.tsRecent = opts.TSVal
	e.tsRecentT = now
	e.tsRecentSet = true
}
