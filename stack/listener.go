// Opening our TCP's connections: the dial and the listener that hand the
// application a conn.

package stack

import (
	"context"
	"net"
	"sync"
	"sync/atomic"

	"gvisor.dev/gvisor/pkg/tcpip"
	"gvisor.dev/gvisor/pkg/waiter"

	"github.com/netramp/netramp/tcp"
)

// listenBacklog is the accept queue's bound: Linux's default somaxconn
// since 5.4, which Go's net.Listen uses on Linux.
const listenBacklog = 4096

// dial makes an endpoint of our TCP, connects it and waits for the
// handshake, bounded by ctx. The endpoint reports the handshake's end with
// WritableEvents (or HUp when it failed) and its outcome with LastError.
func (s *Stack) dial(ctx context.Context, fa tcpip.FullAddress, proto tcpip.NetworkProtocolNumber) (net.Conn, error) {
	dialErr := func(err error) error {
		return &net.OpError{Op: "dial", Net: "tcp", Addr: tcpAddr(fa), Err: err}
	}
	if err := ctx.Err(); err != nil {
		return nil, dialErr(err)
	}
	c := &conn{}
	ep, terr := s.s.NewEndpoint(tcp.ProtocolNumber, proto, &c.q)
	if terr != nil {
		return nil, dialErr(errOf(terr))
	}
	c.init(ep, &c.q)
	// The handshake's own entry and channel, left behind once it is over:
	// a conn that never waits holds none.
	entry, done := waiter.NewChannelEntry(c.wd.mask)
	c.q.EventRegister(&entry)
	defer c.q.EventUnregister(&entry)
	terr = ep.Connect(fa)
	if _, ok := terr.(*tcpip.ErrConnectStarted); ok {
		for ep.Readiness(waiter.WritableEvents|waiter.EventHUp|waiter.EventErr) == 0 {
			select {
			case <-ctx.Done():
				ep.Close()
				return nil, dialErr(ctx.Err())
			case <-done:
			}
		}
		terr = ep.LastError()
		if terr == nil && ep.Readiness(waiter.EventHUp) != 0 {
			terr = &tcpip.ErrConnectionAborted{} // closed with no error of its own: the stack is closing
		}
	}
	if terr != nil {
		ep.Close()
		return nil, dialErr(errOf(terr))
	}
	c.setAddrs()
	return c, nil
}

// listen makes a listening endpoint of our TCP bound to fa.
func (s *Stack) listen(fa tcpip.FullAddress, proto tcpip.NetworkProtocolNumber) (net.Listener, error) {
	l := &listener{}
	ep, terr := s.s.NewEndpoint(tcp.ProtocolNumber, proto, &l.q)
	if terr != nil {
		return nil, &net.OpError{Op: "listen", Net: "tcp", Addr: tcpAddr(fa), Err: errOf(terr)}
	}
	if terr := ep.Bind(fa); terr != nil {
		ep.Close()
		return nil, &net.OpError{Op: "listen", Net: "tcp", Addr: tcpAddr(fa), Err: errOf(terr)}
	}
	if terr := ep.Listen(listenBacklog); terr != nil {
		ep.Close()
		return nil, &net.OpError{Op: "listen", Net: "tcp", Addr: tcpAddr(fa), Err: errOf(terr)}
	}
	l.ep = ep
	l.addr = tcpAddr(fa)
	if a, err := ep.GetLocalAddress(); err == nil {
		l.addr = tcpAddr(a)
	}
	l.wake = make(chan struct{}, 1)
	l.entry.Init(waiter.ChannelNotifier(l.wake), waiter.ReadableEvents|waiter.EventHUp|waiter.EventErr)
	return l, nil
}

// listener is a net.Listener over a listening endpoint of our TCP; Accept
// returns a conn. Its entry and channel are made once, as a conn's are.
type listener struct {
	ep     tcpip.Endpoint
	q      waiter.Queue
	addr   net.Addr
	closed atomic.Bool

	mu    sync.Mutex // serialises Accepts; guards entry's registration
	entry waiter.Entry
	wake  chan struct{} // capacity 1: the entry and Close send without blocking
}

// Accept implements net.Listener: it waits for an established connection,
// or returns net.ErrClosed once the listener is closed.
func (l *listener) Accept() (net.Conn, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	registered := false
	defer func() {
		if registered {
			l.q.EventUnregister(&l.entry)
		}
	}()
	for {
		if l.closed.Load() {
			return nil, &net.OpError{Op: "accept", Net: "tcp", Addr: l.addr, Err: net.ErrClosed}
		}
		ep, wq, terr := l.ep.Accept(nil)
		switch terr.(type) {
		case nil:
			return newConn(ep, wq), nil
		case *tcpip.ErrWouldBlock:
		default:
			if l.closed.Load() {
				continue
			}
			return nil, &net.OpError{Op: "accept", Net: "tcp", Addr: l.addr, Err: errOf(terr)}
		}
		if !registered {
			// Registered, try again: a connection that came between the
			// try and the registration is not missed.
			l.q.EventRegister(&l.entry)
			registered = true
			continue
		}
		<-l.wake
	}
}

// Close implements net.Listener: the listener resets the connections it
// has not handed out, and a waiting Accept returns net.ErrClosed.
func (l *listener) Close() error {
	if !l.closed.CompareAndSwap(false, true) {
		return &net.OpError{Op: "close", Net: "tcp", Addr: l.addr, Err: net.ErrClosed}
	}
	l.ep.Close()
	select {
	case l.wake <- struct{}{}:
	default:
	}
	return nil
}

// Addr implements net.Listener.
func (l *listener) Addr() net.Addr { return l.addr }
