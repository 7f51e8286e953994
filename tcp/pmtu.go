// Path MTU: every segment is sent with DF set, and a Packet Too Big for a
// segment in flight lowers the MSS.

package tcp

import (
	"encoding/binary"

	"gvisor.dev/gvisor/pkg/tcpip/header"
	"gvisor.dev/gvisor/pkg/tcpip/network/ipv6"
	"gvisor.dev/gvisor/pkg/tcpip/stack"
)

// Path MTU discovery (RFC 1191 for IPv4, RFC 8201 for IPv6), in its classic
// form driven by ICMP:
//
//   - Segments go out with DF set. Such a datagram is atomic (RFC 6864):
//     it needs no unique IP ID, so gVisor's IPv4 layer draws none (a
//     random draw that allocated once per datagram without DF).
//   - An ICMPv4 fragmentation-needed or ICMPv6 packet-too-big quoting a
//     sequence number in [SND.UNA, SND.NXT) (the check of RFC 5927 §4.1,
//     which a blind attacker must guess) lowers the MSS to what the reported
//     MTU carries. Nothing raises it again during the connection (RFC 1191
//     lets a host try a larger estimate after a while; we do not).
//   - The MSS never falls below what a minimal datagram carries: 576 bytes
//     for IPv4 (RFC 1122 §3.3.2), 1280 for IPv6 (RFC 8200 §5). A report
//     below that keeps the floor, and for IPv4 the connection then sends
//     without DF so a router may fragment: a forged report cannot shrink
//     segments to a few bytes (RFC 5927 §7.2), and a real path that small
//     still carries them.
//
// Departures, each safe as said:
//   - Segments already built larger than the new MSS are not re-cut: their
//     retransmissions keep their size and go without DF (IPv4), so a router
//     fragments them. The dropped ones are found lost by RACK, a loss probe
//     or the RTO like any other loss (RFC 1191 allows that; it suggests
//     resending at once, without a cwnd reduction, as an improvement):
//     slower, never more aggressive. Over IPv6 no router fragments, and such
//     a retransmission is lost again until the RTO budget ends; before this
//     change every segment of such a path was.
//   - cc keeps the SMSS of the handshake. Its growth per ACK is capped by
//     the bytes acked and by a multiple of SMSS, so smaller segments are
//     credited no more than their bytes unless one ACK covers several: at
//     most old/new times the growth the new SMSS would give, and only on
//     stretch ACKs.

// minTransportMTU is the transport payload of the smallest datagram every
// host of the endpoint's IP version must accept.
func (e *endpoint) minTransportMTU() int {
	if e.netProto == ipv6.ProtocolNumber {
		return header.IPv6MinimumMTU - header.IPv6MinimumSize
	}
	return 576 - header.IPv4MinimumSize
}

// HandleError implements stack.TransportEndpoint. Packet Too Big lowers the
// MSS (packetTooBig); every other ICMP error is advisory and ignored (RFC
// 5927 §4.1 lets a TCP treat soft errors so).
func (e *endpoint) HandleError(te stack.TransportError, pkt *stack.PacketBuffer) {
	if te.Kind() != stack.PacketTooBigTransportError {
		return
	}
	e.mu.Lock()
	e.packetTooBig(int(te.Info()), pkt)
	e.unlock()
}

// packetTooBig takes a Packet Too Big whose datagram carried mtu bytes of
// transport header and payload at most (gVisor's IP layers report the
// next-hop MTU less the IP header; 0 when the router gave none usable), and
// pkt holds the quoted TCP header.
func (e *endpoint) packetTooBig(mtu int, pkt *stack.PacketBuffer) {
	q, ok := pkt.Data().PullUp(8) // ports and sequence number: all ICMP must quote
	if !ok || !e.state.synchronized() || mtu == 0 {
		e.p.st.pmtuIgnored.Inc()
		return
	}
	seq, ok := unwrap(e.iss, e.sndUna, binary.BigEndian.Uint32(q[4:8]))
	if !ok || seq < e.sndUna || seq >= e.sndNxt {
		e.p.st.pmtuIgnored.Inc()
		return
	}
	floor := e.minTransportMTU()
	if mtu < floor {
		mtu = floor
		e.noDF = e.netProto != ipv6.ProtocolNumber
	}
	mss := mtu - header.TCPMinimumSize
	if mss >= e.mss {
		e.p.st.pmtuIgnored.Inc()
		return
	}
	// control:tcp-pmtu-not-lowered
	e.mss = mss
	e.p.st.pmtuLowered.Inc()
}

// mayFragment reports whether a segment of size bytes of payload and
// options goes without DF: one built before the MSS was lowered, or any
// once a report went below the floor.
func (e *endpoint) mayFragment(size int) bool { return e.noDF || size > e.mss }
