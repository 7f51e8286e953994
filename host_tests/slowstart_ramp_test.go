package hosttests

import (
	"bytes"
	"testing"
	"time"

	"gvisor.dev/gvisor/pkg/tcpip"
	"gvisor.dev/gvisor/pkg/tcpip/header"
	gstack "gvisor.dev/gvisor/pkg/tcpip/stack"

	"github.com/netramp/netramp/stack"
	"github.com/netramp/netramp/stack/tcptest"
	"github.com/netramp/netramp/stack/vclock"
	"github.com/netramp/netramp/stack/vtest"
)

// helloBytes is osbench's hello, which the source writes ahead of its
// payload and which leaves as a short segment of its own.
const helloBytes = 30

// rampBytes outlasts six rounds of slow start from 10 segments (630
// segments) on parity-100m-100ms and ends before its queue builds.
const rampBytes = 1_000_000

// sentSeg is a data segment as the sender sent it, or as the receiver got
// it, at a virtual time.
type sentSeg struct {
	at  time.Duration
	end uint32 // sequence number past its last byte
}

// ackSeen is an ACK the receiver sent.
type ackSeen struct {
	at  time.Duration
	ack uint32
}

// helloRamp is a transfer shaped like a bench row's: a short hello, then n
// bytes, A→B with arm B at both ends, on the parity preset named. It keeps
// what the sender sent, what the receiver got and the ACKs it sent.
type helloRamp struct {
	sent, got []sentSeg
	acks      []ackSeen
	pair      *vtest.Pair
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
			return tap
		}
		tap.OnRecv = func(s tcptest.Seg) {
			if len(s.Payload) > 0 {
				r.got = append(r.got, sentSeg{now(), s.Seq + uint32(len(s.Payload))})
			}
		}
		tap.OnSend = func(s tcptest.Seg) {
			if len(s.Payload) == 0 && s.Has(header.TCPFlagAck) {
				r.acks = append(r.acks, ackSeen{now(), s.Ack})
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
	r.pair = p
	return r
}

// flights groups the sent segments into flights, one a round: a segment
// sent the path's round trip or more after the current flight's first
// starts the next, since no ACK of a flight can release data sooner. Arm B
// paces the growth beyond its ACK clock, so a flight of 320 segments at
// 100 Mbit/s spreads over 54 ms and the gap before the next can be under
// half the round trip.
func (r *helloRamp) flights(rtt time.Duration) []int {
	var out []int
	var first time.Duration
	for i, s := range r.sent {
		if i == 0 || s.at-first >= rtt {
			out = append(out, 0)
			first = s.at
		}
		out[len(out)-1]++
	}
	return out
}

// TestSlowStartDoublesEachRoundAfterAShortFirstSegment: with osbench's
// short hello in the initial window, slow start still sends 10, 20, 40, 80,
// 160 and 320 segments in its first rounds (100 Mbit/s, 100 ms, below any
// RTT rise), as a stack counting cwnd in segments does. Counted by bytes,
// the hello left every round one segment short.
func TestSlowStartDoublesEachRoundAfterAShortFirstSegment(t *testing.T) {
	r := runHelloRamp(t, "parity-100m-100ms", rampBytes)
	got := r.flights(100 * time.Millisecond)
	want := []int{10, 20, 40, 80, 160, 320}
	if len(got) < len(want) {
		t.Fatalf("flights %v, want %v first", got, want)
	}
	for i, w := range want {
		if got[i] != w {
			t.Fatalf("flights %v, want %v first", got[:len(want)], want)
		}
	}
}

// TestEveryFlightIsAckedToItsEndAtOnce: in slow start the receiver's ACKs
// fall on every second segment of each flight, so a flight of even length is
// ACKed to its last segment as it arrives, though the hello and the
// autotuning window updates made ACKs out of turn. None waits for the
// delayed-ACK timer (40 ms, a round's last ACK that late at 100 ms).
func TestEveryFlightIsAckedToItsEndAtOnce(t *testing.T) {
	r := runHelloRamp(t, "parity-100m-100ms", rampBytes)
	const limit = 5 * time.Millisecond
	k := 0
	for _, g := range r.got {
		for k < len(r.acks) && seqBefore(r.acks[k].ack, g.end) {
			k++
		}
		if k == len(r.acks) {
			t.Fatalf("segment ending at %d (received at %v) never ACKed", g.end, g.at)
		}
		if wait := r.acks[k].at - g.at; wait > limit {
			t.Fatalf("segment ending at %d, received at %v, ACKed %v later (over %v): a flight's last segment waited for the delayed ACK",
				g.end, g.at, wait, limit)
		}
	}
}

// TestReceiveWindowKeepsAheadOfSlowStart: the receiver's autotuned window
// never stops a sender doubling its window per round (100 Mbit/s, 100 ms,
// six rounds from 10 segments, from the initial 128 KB buffer).
func TestReceiveWindowKeepsAheadOfSlowStart(t *testing.T) {
	r := runHelloRamp(t, "parity-100m-100ms", rampBytes)
	if n := counter(r.pair.A.Counters(), "tcp.stops.peer-window"); n != 0 {
		t.Fatalf("the sender stopped on the peer's window %d times in slow start (flights %v)", n, r.flights(100*time.Millisecond))
	}
}

func seqBefore(a, b uint32) bool { return int32(a-b) < 0 }
