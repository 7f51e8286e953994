package tcp

import (
	"github.com/netramp/netramp/cc"
	"github.com/netramp/netramp/counters"
)

// stats are the protocol's counters, shared by all its endpoints.
type stats struct {
	sentBytes, retransBytes, rto, recoveries, lossProbes     *counters.Counter
	segsIn, segsOut, rstSent, rstRecv, csumErrors            *counters.Counter
	cardStops, cardRefusals, cookiesSent, cookiesOK          *counters.Counter
	stops                                                    [4]*counters.Counter
	spurious, challengeAcks, giveUps                         *counters.Counter
	rcvEdgeRetreats, persistGiveUps, spuriousBytes           *counters.Counter
	segCapStops, pmtuLowered, pmtuIgnored, synAckRetransmits *counters.Counter
	swsOverrides                                             *counters.Counter

	dropBadSeq, dropPAWS, dropOOOFull, dropSynQueue, dropMalformed *counters.Counter
	dropNoListener, dropBadAck, dropBadSACK, dropAcceptFull        *counters.Counter
	acksRateLimited, challengeRateLimited, dropState               *counters.Counter
	dropSynTimeout                                                 *counters.Counter
	connsOpened, connsClosed                                       *counters.Counter
	gsoPackets, gsoSegments                                        *counters.Counter

	acks          [numAckReasons]*counters.Counter // pure ACKs sent, by reason (ackreason.go)
	acksCoalesced *counters.Counter

	cc *cc.Counters
}

func newStats(r *counters.Registry) *stats {
	m := r.MustRegister
	return &stats{
		sentBytes:    m("tcp.sent.bytes", "payload bytes sent for the first time"),
		retransBytes: m("tcp.retransmitted.bytes", "payload bytes sent again (recovery, RTO, loss probes)"),
		rto:          m("tcp.rto", "retransmission timeouts fired (RFC 6298 §5.4)"),
		recoveries:   m("tcp.recoveries", "loss recovery episodes entered on SACK or duplicate-ACK evidence"),
		lossProbes:   m("tcp.loss-probes", "tail loss probes sent (RFC 8985 §7)"),
		segsIn:       m("tcp.segments.in", "segments received by TCP endpoints and the listener demux"),
		segsOut:      m("tcp.segments.out", "segments handed to the network layer"),
		rstSent:      m("tcp.resets.sent", "RST segments sent"),
		rstRecv:      m("tcp.resets.received", "acceptable RST segments that reset a connection"),
		csumErrors:   m("tcp.checksum-errors", "segments dropped for a bad checksum"),
		cardStops:    m("tcp.card-stops", "send opportunities that ended on the card's TX credit"),
		stops: [4]*counters.Counter{
			cc.StopApp:        m("tcp.stops.app", "send opportunities that ended with no more data to send (or Nagle holding a runt)"),
			cc.StopPeerWindow: m("tcp.stops.peer-window", "send opportunities that ended on the peer's receive window"),
			cc.StopCwnd:       m("tcp.stops.cwnd", "send opportunities that ended on the congestion window"),
			cc.StopCard:       m("tcp.stops.card", "send opportunities that ended on the card's TX credit (same as tcp.card-stops)"),
		},
		cardRefusals:      m("tcp.card-refusals", "segments the link refused (ErrNoBufferSpace), rolled back as never sent"),
		cookiesSent:       m("tcp.syn-cookies.sent", "SYN-ACKs carrying a SYN cookie because the SYN queue was full"),
		cookiesOK:         m("tcp.syn-cookies.accepted", "connections established from a valid SYN cookie"),
		synAckRetransmits: m("tcp.syn-acks.retransmitted", "SYN-ACKs of half-open connections sent again on their timer"),
		spurious:          m("tcp.spurious", "recoveries or timeouts undone as spurious (DSACK or timestamps)"),
		spuriousBytes:     m("tcp.retransmitted.spurious.bytes", "retransmitted bytes the peer already had (D-SACK, or a timestamp echo older than the retransmission)"),
		segCapStops:       m("tcp.stops.segment-cap", "send opportunities that ended on the cap of segments outstanding (a peer forcing a tiny MSS); also in tcp.stops.peer-window"),
		pmtuLowered:       m("tcp.pmtu.lowered", "ICMP Packet Too Big messages that lowered a connection's MSS"),
		pmtuIgnored:       m("tcp.pmtu.ignored", "ICMP Packet Too Big messages ignored: no usable MTU, not below the MSS, or quoting no segment in flight"),
		challengeAcks:     m("tcp.challenge-acks", "challenge ACKs sent (RFC 5961)"),
		giveUps:           m("tcp.give-ups", "connections reset after the RTO retransmission budget ran out"),
		persistGiveUps:    m("tcp.give-ups.zero-window", "connections reset after their zero-window probes went unanswered (the RTO budget, or the user timeout)"),
		swsOverrides:      m("tcp.sws-overrides", "runts sent into a window under a segment when the persist timer ran out, the override of sender SWS avoidance (RFC 9293 §3.8.6.2.1)"),
		rcvEdgeRetreats:   m("tcp.rcv.edge-retreats", "ACKs whose scaled window fell back by under a unit because the receive ring's spare was spent"),

		dropBadSeq:           m("tcp.drops.bad-seq", "segments dropped as outside the receive window"),
		dropPAWS:             m("tcp.drops.paws", "segments dropped by PAWS (RFC 7323 §5)"),
		dropOOOFull:          m("tcp.drops.ooo-full", "out-of-order bytes dropped because the store was full"),
		dropSynQueue:         m("tcp.drops.syn-queue-full", "SYNs dropped because the SYN queue was full and cookies could not be used"),
		dropMalformed:        m("tcp.drops.malformed", "segments dropped as malformed (header, options, lengths)"),
		dropNoListener:       m("tcp.drops.no-listener", "segments for no endpoint, answered by RST"),
		dropBadAck:           m("tcp.drops.bad-ack", "segments dropped for an ACK outside what was sent (RFC 5961 §5)"),
		dropBadSACK:          m("tcp.drops.bad-sack", "SACK blocks ignored as outside (SND.UNA, SND.NXT]"),
		dropAcceptFull:       m("tcp.drops.accept-queue-full", "handshakes dropped because the accept queue was full"),
		acksRateLimited:      m("tcp.acks.rate-limited", "ACKs owed to unacceptable segments or as challenges, not sent: one per 500 ms per connection"),
		challengeRateLimited: m("tcp.challenge-acks.rate-limited", "challenge ACKs not sent: the stack-wide limit per second (RFC 5961 §7)"),
		dropState:            m("tcp.drops.state", "segments dropped as unacceptable in the endpoint's state"),
		dropSynTimeout:       m("tcp.drops.syn-queue-timeout", "half-open connections dropped when their last SYN-ACK went unanswered"),
		connsOpened:          m("tcp.conns.opened", "connections begun: an active open's first SYN sent, or a passive open's endpoint made on the handshake's last ACK"),
		connsClosed:          m("tcp.conns.closed", "connections of tcp.conns.opened that reached CLOSED, by any ending; the difference is those still open"),
		gsoPackets:           m("tcp.gso.packets", "packets of several segments handed to a link that segments them (GSO); tcp.segments.out counts their segments"),
		gsoSegments:          m("tcp.gso.segments", "segments carried in tcp.gso.packets: their ratio is the mean GSO packet's size in segments"),

		acks:          newAckCounters(r),
		acksCoalesced: m("tcp.acks.coalesced", "every-second ACKs not sent because segments arrived during a flush or a link's delivery burst: one ACK follows for them all (coalesce.go)"),
		cc:            cc.NewCounters(r),
	}
}
