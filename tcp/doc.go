// Layout of the package:
//
//	protocol.go  the stack.TransportProtocol: endpoints, stateless RSTs, packet building
//	endpoint.go  the endpoint's state and the unlock that writes its outbox, then notifies
//	conn.go      the tcpip.Endpoint API: Connect, Bind, Listen, Accept, Read, Write, Close, options
//	input.go     "SEGMENT ARRIVES" (RFC 9293 §3.10.7): checks, ACK processing, receive path, timers' work
//	output.go    the send opportunity and its stop reason, segment building, retransmission, refusals
//	timer.go     timers on the stack's clock
//	pmtu.go      DF on every segment, and Packet Too Big lowering the MSS
//	gso.go       an opportunity's new segments as one packet on a link that segments (GSO)
//	coalesce.go  every-second ACKs held over a flush's backlog or a link's delivery burst
//	burst.go     a NIC's delivery bursts (nic.Bursts), as its link reports them
//	txbatch.go   an outbox written as one link write on a link that sends bursts (TxBatch)
//	counters.go  the tcp.* counters
//
// Loss recovery (its state, recovery point, duplicate ACKs, PRR, undo and RTO
// attempts) lives in tcp/internal/recovery; the endpoint feeds it events and
// forwards its verdicts to cc and rtxq.
//
// Departures from the RFCs, each safe for the reason given where it is made:
//   - the zero-window probe is an ACK at SND.UNA-1, not a byte of new data (output.go);
//   - challenge ACKs are limited per connection, ten a second (input.go, RFC 5961 §7);
//   - a SYN-cookie connection without timestamps reads the peer's window
//     with a scale rounded down to the cookie's table, under-reading it,
//     never over-reading it (listen.go, syncookie; with timestamps the exact
//     scale rides in the TSval);
//   - ICMP errors but Packet Too Big are advisory only (pmtu.go, RFC 5927 §4.1);
//   - after a Packet Too Big, segments already built keep their size and go
//     without DF, and cc keeps its SMSS (pmtu.go);
//   - a RST in TIME-WAIT is ignored (RFC 1337 §3);
//   - the minimum RTO is 200 ms (tcp/internal/rtt);
//   - a loss RACK finds after an RTO starts a PRR-paced fast recovery
//     (tcp/internal/recovery/sack.go, RFC 6675 §5.1 leaves it to slow start);
//   - segments that arrive together (during a flush, or in a burst a link
//     reports) draw one ACK for up to 16, not one every second segment
//     (coalesce.go, RFC 5681 §4.2).

package tcp
