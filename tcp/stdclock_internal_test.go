package tcp

import (
	"testing"

	"gvisor.dev/gvisor/pkg/tcpip"
	"gvisor.dev/gvisor/pkg/tcpip/faketime"
	"gvisor.dev/gvisor/pkg/tcpip/network/ipv4"
	"gvisor.dev/gvisor/pkg/tcpip/stack"
)

// wrappedClock is a caller's clock built on the standard one: not the
// standard clock itself, so it must be read through its interface.
type wrappedClock struct{ tcpip.Clock }

func TestOnlyTheStandardClockIsReadDirectly(t *testing.T) {
	for _, c := range []struct {
		name  string
		clock tcpip.Clock
		want  bool
	}{
		{"standard", tcpip.NewStdClock(), true},
		{"manual", faketime.NewManualClock(), false},
		{"wrapped standard", wrappedClock{tcpip.NewStdClock()}, false},
		{"nil", nil, false},
	} {
		if got := isStdClock(c.clock); got != c.want {
			t.Errorf("%s clock: isStdClock %v, want %v", c.name, got, c.want)
		}
	}
}

// The direct reading is the standard clock's time since the protocol was
// made: never ahead of the clock read after it, and never going back.
func TestDirectReadingKeepsTheClocksTimeBase(t *testing.T) {
	newProto := func(clock tcpip.Clock) *protocol {
		f, err := NewProtocolFactory(Options{})
		if err != nil {
			t.Fatal(err)
		}
		s := stack.New(stack.Options{NetworkProtocols: []stack.NetworkProtocolFactory{ipv4.NewProtocol}, TransportProtocols: []stack.TransportProtocolFactory{f}, Clock: clock})
		t.Cleanup(s.Destroy)
		return s.TransportProtocolInstance(ProtocolNumber).(*protocol)
	}
	clock := tcpip.NewStdClock()
	p := newProto(clock)
	if p.start.IsZero() {
		t.Fatal("a protocol on the standard clock reads it through its interface")
	}
	prev := p.now()
	for range 1000 {
		d := p.now()
		after := clock.NowMonotonic().Sub(p.origin)
		if d > after {
			t.Fatalf("direct reading %v ahead of the clock's %v", d, after)
		}
		if d < prev {
			t.Fatalf("direct reading went back from %v to %v", prev, d)
		}
		prev = d
	}

	manual := faketime.NewManualClock()
	q := newProto(manual)
	manual.Advance(1234)
	if got := q.now(); got != 1234 {
		t.Fatalf("a manual clock's protocol reads %v, want exactly its 1.234µs", got)
	}
}
