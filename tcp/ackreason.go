package tcp

import "github.com/netramp/netramp/counters"

// ackReason is why a pure ACK (one without data) is owed or sent. Each has
// its counter, tcp.acks.sent.<name>, so the ACKs of a transfer add up by cause.
type ackReason uint8

const (
	ackNone        ackReason = iota
	ackEverySecond           // every second full-sized segment (RFC 5681 §4.2)
	ackShort                 // a short segment, not delayed past the peer's Nagle
	ackOutOfOrder            // data above a hole, with SACK (RFC 5681 §4.2)
	ackHoleFilled            // data that filled a hole (RFC 5681 §4.2)
	ackDuplicate             // data already received, with D-SACK (RFC 2883)
	ackFin                   // the peer's FIN, or a retransmission after it
	ackHandshake             // the ACK of a SYN-ACK (RFC 9293 §3.5)
	ackDelayed               // the delayed-ACK timer (RFC 9293 §3.8.6.3)
	ackWindow                // a read opened the window (RFC 9293 §3.8.6.2.2)
	ackInvalid               // an unacceptable segment or a challenge (RFC 5961)
	ackRefused               // again, after the link refused it
	ackProbe                 // a keepalive or zero-window probe (RFC 9293 §3.8.4, §3.8.6.1)
	ackBurstEnd              // the end of a link's delivery burst, for the every-second ACKs held in it (coalesce.go)
	numAckReasons
)

var ackReasonDocs = [numAckReasons]struct{ name, doc string }{
	ackEverySecond: {"every-second", "pure ACKs of every second full-sized segment (RFC 5681 §4.2)"},
	ackShort:       {"short", "pure ACKs sent at once for a short segment (not held past the peer's Nagle)"},
	ackOutOfOrder:  {"out-of-order", "pure ACKs sent at once for data above a hole, with SACK"},
	ackHoleFilled:  {"hole-filled", "pure ACKs sent at once for data that filled a hole"},
	ackDuplicate:   {"duplicate", "pure ACKs sent at once for data already received (D-SACK)"},
	ackFin:         {"fin", "pure ACKs of the peer's FIN or of a segment after it"},
	ackHandshake:   {"handshake", "pure ACKs of a SYN-ACK"},
	ackDelayed:     {"delayed", "pure ACKs sent by the delayed-ACK timer"},
	ackWindow:      {"window-update", "pure ACKs sent because a read opened the receive window"},
	ackInvalid:     {"invalid", "pure ACKs answering an unacceptable segment, or challenge ACKs (RFC 5961)"},
	ackRefused:     {"refused", "pure ACKs sent again after the link refused them"},
	ackProbe:       {"probe", "keepalives and zero-window probes"},
	ackBurstEnd:    {"burst-end", "pure ACKs sent at the end of a link's delivery burst for the every-second ACKs held in it (coalesce.go)"},
}

// newAckCounters registers tcp.acks.sent.<reason> for every reason.
func newAckCounters(r *counters.Registry) [numAckReasons]*counters.Counter {
	var cs [numAckReasons]*counters.Counter
	for i := ackEverySecond; i < numAckReasons; i++ {
		cs[i] = r.MustRegister("tcp.acks.sent."+ackReasonDocs[i].name, ackReasonDocs[i].doc)
	}
	return cs
}

// owe asks for an ACK at the end of this segment's processing for why; the
// first reason asked for is the one counted.
func (e *endpoint) owe(why ackReason) {
	if e.ackNow == ackNone {
		e.ackNow = why
	}
}
