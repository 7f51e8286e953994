// Layout of the package:
//
//	protocol.go  the stack.TransportProtocol: endpoints, stateless RSTs, packet building
//	endpoint.go  the endpoint's state and the unlock that writes its outbox, then notifies
//	conn.go      the tcpip.Endpoint API: Connect, Bind, Listen, Accept, Read, Write, Close, options
//	input.go     "SEGMENT ARRIVES" (RFC 9293 §3.10.7): checks, ACK processing, receive path, timers' work
//	output.go    the send opportunity and its stop reason, segment building, retransmission, refusals
//	timer.go     timers on the stack's clock
//	counters.go  the tcp.* counters
//
// Departures from the RFCs, each safe for the reason given where it is made:
//   - the zero-window probe is an ACK at SND.UNA-1, not a byte of new data (output.go);
//   - challenge ACKs are limited per connection, ten a second (input.go, RFC 5961 §7);
//   - a SYN-cookie connection without timestamps has no window scale or SACK
//     (listen.go; with timestamps they ride in the TSval, syncookie);
//   - ICMP errors are advisory only (input.go, RFC 5927 §4.1);
//   - a RST in TIME-WAIT is ignored (RFC 1337 §3);
//   - the minimum RTO is 200 ms (tcp/internal/rtt).

package tcp
