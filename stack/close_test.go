package stack

import (
	"net/netip"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"gvisor.dev/gvisor/pkg/tcpip"
	"gvisor.dev/gvisor/pkg/tcpip/link/channel"
	"gvisor.dev/gvisor/pkg/tcpip/network/ipv4"
	gstack "gvisor.dev/gvisor/pkg/tcpip/stack"
)

// lateLink is a link whose reader goroutine is inside a delivery when the
// stack closes: it has read a frame and handed it up past the NIC's enabled
// check, where detaching the NIC cannot recall it, and the rest of that
// delivery needs the stack's lock, as a reset reply's route does
// (FindRoute) and as gVisor's IPv4 input does (FindNICNameFromID). The
// reader resumes when the NIC is detached (Attach(nil)), which gVisor does
// holding that lock, so the lock is taken, or wanted, before the rest of the
// delivery runs: the ordering that a TAP reader meets by chance, every time.
type lateLink struct {
	*channel.Endpoint
	stk      *gstack.Stack // set before start
	start    chan struct{} // closed by the test: deliver now
	inside   chan struct{} // closed by the reader: its delivery is under way
	detached chan struct{} // closed by Attach(nil) or Close
	detach   sync.Once
	done     chan struct{} // closed when the reader has returned
	started  atomic.Bool
}

func newLateLink() *lateLink {
	return &lateLink{
		Endpoint: channel.New(8, 1500, ""),
		start:    make(chan struct{}),
		inside:   make(chan struct{}),
		detached: make(chan struct{}),
		done:     make(chan struct{}),
	}
}

// Attach implements gstack.LinkEndpoint: the first dispatcher starts the
// reader, nil releases it.
func (l *lateLink) Attach(d gstack.NetworkDispatcher) {
	l.Endpoint.Attach(d)
	if d == nil {
		l.detach.Do(func() { close(l.detached) })
		return
	}
	if l.started.CompareAndSwap(false, true) {
		go l.read()
	}
}

// Close implements gstack.LinkEndpoint; like a TAP endpoint's, it stops the
// reader but, unlike it, does not wait for it: Wait does.
func (l *lateLink) Close() {
	l.detach.Do(func() { close(l.detached) })
	l.Endpoint.Close()
}

// Wait implements gstack.LinkEndpoint: it returns once the reader has.
func (l *lateLink) Wait() {
	if l.started.Load() {
		<-l.done
	}
}

func (l *lateLink) read() {
	defer close(l.done)
	select {
	case <-l.start:
	case <-l.detached:
		return
	}
	close(l.inside)
	<-l.detached
	// The rest of the delivery: the route for its reply.
	peer := tcpip.AddrFrom4([4]byte{198, 18, 0, 2})
	if r, err := l.stk.FindRoute(0, tcpip.Address{}, peer, ipv4.ProtocolNumber, false); err == nil {
		r.Release()
	}
}

// closeHang is how long a Close may take before the test calls it hung.
// It bounds a deadlock, not a speed: the ordering is forced, so a Close
// that waits for the reader holding the stack's lock never returns, and
// one that does not returns whatever the load.
const closeHang = 10 * time.Second

// TestCloseReturnsWhileLinkReaderNeedsStackLock closes a stack, either
// TCP, while its link's reader is inside a delivery that needs the stack's
// lock to finish, and checks that Close returns, and only once the reader
// has stopped.
func TestCloseReturnsWhileLinkReaderNeedsStackLock(t *testing.T) {
	for _, tc := range []struct {
		name string
		gv   bool
	}{{"netramp", false}, {"gvisor", true}} {
		t.Run(tc.name, func(t *testing.T) {
			l := newLateLink()
			s, err := New(Options{GVisorTCP: tc.gv, NICs: []NIC{{Link: l, Addr: netip.MustParsePrefix("198.18.0.1/24")}}})
			if err != nil {
				t.Fatal(err)
			}
			l.stk = s.Gvisor()
			close(l.start)
			<-l.inside
			closed := make(chan struct{})
			go func() { s.Close(); close(closed) }()
			select {
			case <-closed:
			case <-time.After(closeHang):
				t.Fatal("stack.Close did not return: it waits for the link's reader while holding the lock the reader's delivery needs")
			}
			select {
			case <-l.done:
			default:
				t.Fatal("stack.Close returned before the link's reader stopped")
			}
		})
	}
}
