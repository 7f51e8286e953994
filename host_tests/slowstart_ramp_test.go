package hosttests

import (
	"bytes"
	"testing"
	"time"

	"gvisor.dev/gvisor/pkg/tcpip"
	gstack "gvisor.dev/gvisor/pkg/tcpip/stack"

	"github.com/netramp/netramp/stack"
	"github.com/netramp/netramp/stack/tcptest"
	"github.com/netramp/netramp/stack/vclock"
	"github.com/netramp/netramp/stack/vtest"
)

// helloBytes is osbench's hello, which the source writes ahead of its
// payload and which leaves as a short segment of its own.
const helloBytes = 30

// rampBytes outlasts the rounds the test counts on parity-100m-100ms and
// ends before its queue builds.
const rampBytes = 1_000_000

// sentSeg is a data segment as the sender sent it, at a virtual time.
type sentSeg struct {
	at  time.Duration
	end uint32 // sequence number past its last byte
}

// helloRamp is a transfer shaped like a bench row's: a short hello, then n
// bytes, A→B with arm B at both ends, on the parity preset named. It keeps
// what the sender sent.
type helloRamp struct {
	sent []sentSeg
}

func runHelloRamp(t *testing.T, path string, n int64) *helloRamp {
	t.Helper()
	r := &helloRamp{}
	var clk *vclock.Clock
	now := func() time.Duration { return clk.Elapsed() }
	wrap := func(side vtest.Side, ep gstack.LinkEndpoint, c *vclock.Clock) gstack.LinkEndpoint {
		clk = c
		tap := tcptest.NewTap(ep)
		if side == vtest.SideA {
			tap.OnSend = func(s tcptest.Seg) {
				if len(s.Payload) > 0 {
					r.sent = append(r.sent, sentSeg{now(), s.Seq + uint32(len(s.Payload))})
				}
			}
		}
		return tap
	}
	opts := armsABP[1].opts
	p, err := vtest.NewPairLinks(preset(t, path), stack.Options{TCP: opts}, stack.Options{TCP: opts}, 1, wrap)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Close)
	c, s := dial(t, p, vtest.SideA, 5001)
	if _, err := c.EP.Write(bytes.NewReader(make([]byte, helloBytes)), tcpip.WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	_, si := p.Start(c, s, n, 1)
	si.Discard = true
	if err := p.Run(func() bool { return si.Bytes() == helloBytes+n }, time.Minute); err != nil {
		t.Fatalf("%v: received %d of %d", err, si.Bytes(), helloBytes+n)
	}
	return r
}

// flights groups the sent segments into flights: a gap of more than half
// the round trip starts the next one.
func (r *helloRamp) flights(rtt time.Duration) []int {
	var out []int
	for i, s := range r.sent {
		if i == 0 || s.at-r.sent[i-1].at > rtt/2 {
			out = append(out, 0)
		}
		out[len(out)-1]++
	}
	return out
}

// TestSlowStartDoublesEachRoundAfterAShortFirstSegment: with osbench's
// short hello in the initial window, slow start still sends 10, 20, 40 and
// 80 segments in its first rounds (100 Mbit/s, 100 ms, within the initial
// receive window), as a stack counting cwnd in segments does. Counted by
// bytes, the hello left every round one segment short.
func TestSlowStartDoublesEachRoundAfterAShortFirstSegment(t *testing.T) {
	r := runHelloRamp(t, "parity-100m-100ms", rampBytes)
	got := r.flights(100 * time.Millisecond)
	want := []int{10, 20, 40, 80}
	if len(got) < len(want) {
		t.Fatalf("flights %v, want %v first", got, want)
	}
	for i, w := range want {
		if got[i] != w {
			t.Fatalf("flights %v, want %v first", got[:len(want)], want)
		}
	}
}
