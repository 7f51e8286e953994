package cc_test

import (
	"fmt"
	"time"

	"github.com/netramp/netramp/cc"
	"github.com/netramp/netramp/counters"
)

// A sender reports each send opportunity's stop and each ACK; the controller
// answers with cwnd.
func ExampleController() {
	reg := counters.NewRegistry()
	c, err := cc.New(cc.Config{SMSS: 1460, Counters: cc.NewCounters(reg)})
	if err != nil {
		panic(err)
	}
	// The initial window goes out and the congestion window stops the sender.
	c.OnSend(0, 14600)
	c.OnSendStop(cc.StopCwnd, 14600)
	// One stretch ACK of all ten segments: the default arm's slow start grows
	// by all ten (HyStart++ with L = infinity; arm B would grow 8).
	c.OnAck(cc.Ack{Now: 10 * time.Millisecond, Acked: 14600, SndUna: 14600, SndNxt: 14600, RTT: 10 * time.Millisecond})
	fmt.Println("after the initial window:", c.Cwnd())

	// The card's credit stops the sender with half of cwnd in flight: the
	// window counts as in use, so the next ACK grows it.
	c.OnSend(10*time.Millisecond, 14600+14600)
	c.OnSendStop(cc.StopCard, 14600)
	c.OnAck(cc.Ack{Now: 20 * time.Millisecond, Acked: 1460, SndUna: 16060, SndNxt: 29200, RTT: 10 * time.Millisecond})
	fmt.Println("after a card stop at half:", c.Cwnd())

	// A loss: β = 0.7 of the flight, once per recovery.
	c.OnCongestion(30*time.Millisecond, 11680)
	fmt.Println("after a loss:", c.Cwnd(), c.Ssthresh(), c.InSlowStart())
	fmt.Println("tcp.cc.reductions:", reg.Lookup("tcp.cc.reductions").Load())
	// Output:
	// after the initial window: 29200
	// after a card stop at half: 30660
	// after a loss: 8176 8176 false
	// tcp.cc.reductions: 1
}

// Bad configuration is an error naming the field, testable with errors.Is.
func ExampleNew_badConfig() {
	_, err := cc.New(cc.Config{SMSS: 0})
	fmt.Println(err)
	// Output: cc: bad config: SMSS 0 must be positive
}
