// Package soak runs many clients against one listener for hours of virtual
// time and then checks that nothing was lost or left behind: every byte of
// every completed connection intact both ways, every connection ended (by
// completion, a reset or a timeout it reports), and, once TIME-WAIT is over,
// the goroutines, the clock's pending timers, the live heap and the tcp.conns
// counters back where they started.
//
// One server stack has one NIC per client and one listener; each client is a
// stack of its own on its own nic/wire path to the server, all on one
// vclock.Clock. Connections open at random times; each sends a request of a
// random size (a 16-byte header naming the connection and the size of the
// response it wants, then a seeded stream) and receives a response of another
// random size, each direction checked by SHA-256 at its EOF. Every few virtual
// seconds a client's path changes (rate, delay, loss, burst loss, jitter with
// reordering, duplication, corruption, path MTU drops answered by ICMP
// fragmentation-needed, blackouts). Some clients misbehave:
// one aborts mid-transfer (a reset), one never reads (its window stays shut),
// and now and then a client vanishes: its path goes dark both ways and its
// connections are dropped without a word, so the server's ends must give up.
//
// Everything runs on the goroutine that calls Run, inside the clock's
// callbacks; the same Config gives the same run.
package soak
