package stack

import (
	gstack "gvisor.dev/gvisor/pkg/tcpip/stack"

	"github.com/netramp/netramp/nic"
)

// burstLink is a NIC's link as the stack sees it under netramp's TCP: the
// link itself, except that Attach hands it a dispatcher that also hears its
// delivery bursts (nic.BurstDispatcher) and passes them to the TCP. A link
// that reports no bursts delivers through it unchanged.
type burstLink struct {
	gstack.LinkEndpoint
	bursts nic.Bursts
}

// Attach implements gstack.LinkEndpoint.
func (l *burstLink) Attach(d gstack.NetworkDispatcher) {
	if d != nil {
		d = &burstDispatcher{NetworkDispatcher: d, Bursts: l.bursts}
	}
	l.LinkEndpoint.Attach(d)
}

// SupportedGSO implements gstack.GSOEndpoint with the link's GSO, if any:
// the route asks the NIC's endpoint, which is this wrapper.
func (l *burstLink) SupportedGSO() gstack.SupportedGSO {
	// control:stack-burst-link-hides-gso
	if g, ok := l.LinkEndpoint.(gstack.GSOEndpoint); ok {
		return g.SupportedGSO()
	}
	return gstack.GSONotSupported
}

// GSOMaxSize implements gstack.GSOEndpoint.
func (l *burstLink) GSOMaxSize() uint32 {
	if g, ok := l.LinkEndpoint.(gstack.GSOEndpoint); ok {
		return g.GSOMaxSize()
	}
	return 0
}

// burstDispatcher is the NIC's dispatcher with the TCP's burst signal.
type burstDispatcher struct {
	gstack.NetworkDispatcher
	nic.Bursts
}

var _ nic.BurstDispatcher = (*burstDispatcher)(nil)
