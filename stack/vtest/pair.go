package vtest

import (
	"errors"
	"fmt"
	"net/netip"
	"time"

	"gvisor.dev/gvisor/pkg/tcpip"
	"gvisor.dev/gvisor/pkg/tcpip/network/ipv4"
	gstack "gvisor.dev/gvisor/pkg/tcpip/stack"
	"gvisor.dev/gvisor/pkg/waiter"

	"github.com/netramp/netramp/nic/wire"
	"github.com/netramp/netramp/stack"
	"github.com/netramp/netramp/stack/vclock"
	"github.com/netramp/netramp/tcp"
)

// Side names a stack of a Pair: A is on the wire's A end.
type Side int

const (
	SideA Side = iota
	SideB
)

// Epoch is the virtual wall time at which every Pair's clock starts.
var Epoch = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// Addresses of the two stacks.
var (
	AddrA = netip.MustParseAddr("198.18.0.1")
	AddrB = netip.MustParseAddr("198.18.0.2")
)

// ErrTimeout reports a run that reached its virtual-time horizon first.
var ErrTimeout = errors.New("vtest: virtual-time horizon reached")

// ErrMismatch reports a transfer whose received bytes hash differently.
var ErrMismatch = errors.New("vtest: received bytes differ from the stream sent")

// Pair is two stacks joined by a wire, on one virtual clock.
type Pair struct {
	Clock *vclock.Clock
	Wire  *wire.Wire
	A, B  *stack.Stack

	listeners map[listenKey]*listener
}

type listenKey struct {
	side Side
	port uint16
}

type listener struct {
	ep tcpip.Endpoint
	wq *waiter.Queue
}

// Conn is one endpoint with its waiter queue.
type Conn struct {
	EP tcpip.Endpoint
	WQ *waiter.Queue
}

// Close closes the endpoint.
func (c *Conn) Close() { c.EP.Close() }

// NewPair builds two netramp stacks with the given TCP options on a wire of
// cfg, on a new virtual clock. seed makes each stack's random choices
// (ports, ISNs, secrets) repeatable (A uses seed, B seed+1), and seeds the
// wire when cfg.Seed is zero.
func NewPair(cfg wire.Config, optsA, optsB tcp.Options, seed int64) (*Pair, error) {
	return NewPairWith(cfg, stack.Options{TCP: optsA}, stack.Options{TCP: optsB}, seed)
}

// NewPairWith is NewPair with whole stack options. Clock and NICs are filled
// in; a zero Seed takes seed (A) or seed+1 (B). GVisorTCP does not work
// here: gVisor's TCP hands segments to goroutines of its own, which the
// virtual clock's driver neither waits for nor orders, so its handshake never
// completes inside Run. Run gVisor's TCP on a real-time wire instead.
func NewPairWith(cfg wire.Config, a, b stack.Options, seed int64) (*Pair, error) {
	return NewPairLinks(cfg, a, b, seed, nil)
}

// LinkWrap lets a test put its own link endpoint (a filter, a recorder)
// between a stack and its wire end; it returns the endpoint the stack uses.
// It receives the pair's clock, so a wrapper that delays, holds or stamps
// frames runs in the same virtual time as the stacks.
type LinkWrap func(side Side, ep gstack.LinkEndpoint, clk *vclock.Clock) gstack.LinkEndpoint

// NewPairLinks is NewPairWith with each wire end passed through wrap (nil:
// none) before its stack is built on it.
func NewPairLinks(cfg wire.Config, a, b stack.Options, seed int64, wrap LinkWrap) (*Pair, error) {
	if a.GVisorTCP || b.GVisorTCP {
		return nil, fmt.Errorf("%w: GVisorTCP does not run in virtual time (NewPairWith)", stack.ErrBadOptions)
	}
	clk := vclock.New(Epoch)
	if cfg.Seed == 0 {
		cfg.Seed = seed
	}
	w, err := wire.New(clk, cfg)
	if err != nil {
		return nil, err
	}
	a.Clock, b.Clock = clk, clk
	var la, lb gstack.LinkEndpoint = w.A(), w.B()
	if wrap != nil {
		la, lb = wrap(SideA, la, clk), wrap(SideB, lb, clk)
	}
	a.NICs = []stack.NIC{{Link: la, Addr: netip.PrefixFrom(AddrA, 24), Name: "wire-a"}}
	b.NICs = []stack.NIC{{Link: lb, Addr: netip.PrefixFrom(AddrB, 24), Name: "wire-b"}}
	if a.Seed == 0 {
		// control:hosttests-vtest-seed-from-clock
		a.Seed = seed
	}
	if b.Seed == 0 {
		b.Seed = seed + 1
	}
	sa, err := stack.New(a)
	if err != nil {
		return nil, fmt.Errorf("vtest: stack A: %w", err)
	}
	sb, err := stack.New(b)
	if err != nil {
		sa.Close()
		return nil, fmt.Errorf("vtest: stack B: %w", err)
	}
	return &Pair{Clock: clk, Wire: w, A: sa, B: sb, listeners: make(map[listenKey]*listener)}, nil
}

// Close closes both stacks.
func (p *Pair) Close() {
	for _, l := range p.listeners {
		l.ep.Close()
	}
	p.A.Close()
	p.B.Close()
}

// Stack returns side's stack; Addr its address.
func (p *Pair) Stack(s Side) *stack.Stack {
	if s == SideA {
		return p.A
	}
	return p.B
}

// Addr is side's address.
func (p *Pair) Addr(s Side) netip.Addr {
	if s == SideA {
		return AddrA
	}
	return AddrB
}

func other(s Side) Side { return 1 - s }

// NewEndpoint creates an unconnected TCP endpoint on side's stack.
func (p *Pair) NewEndpoint(s Side) (*Conn, error) {
	wq := new(waiter.Queue)
	ep, err := p.Stack(s).Gvisor().NewEndpoint(tcp.ProtocolNumber, ipv4.ProtocolNumber, wq)
	if err != nil {
		return nil, fmt.Errorf("vtest: new endpoint on %v: %s", s, err)
	}
	return &Conn{EP: ep, WQ: wq}, nil
}

func (p *Pair) listen(s Side, port uint16) (*listener, error) {
	k := listenKey{s, port}
	if l, ok := p.listeners[k]; ok {
		return l, nil
	}
	c, err := p.NewEndpoint(s)
	if err != nil {
		return nil, err
	}
	if err := c.EP.Bind(tcpip.FullAddress{Port: port}); err != nil {
		c.EP.Close()
		return nil, fmt.Errorf("vtest: bind %v:%d: %s", s, port, err)
	}
	if err := c.EP.Listen(1024); err != nil {
		c.EP.Close()
		return nil, fmt.Errorf("vtest: listen %v:%d: %s", s, port, err)
	}
	l := &listener{ep: c.EP, wq: c.WQ}
	p.listeners[k] = l
	return l, nil
}

// Dial connects a new endpoint on side from to a listener on the other side
// at port (created on first use), running the clock until the handshake is
// done and the server's endpoint accepted: at most 120 s of virtual time,
// room for SYN retransmissions on a lossy path.
func (p *Pair) Dial(from Side, port uint16) (client, server *Conn, err error) {
	l, err := p.listen(other(from), port)
	if err != nil {
		return nil, nil, err
	}
	client, err = p.NewEndpoint(from)
	if err != nil {
		return nil, nil, err
	}
	dst := tcpip.FullAddress{Addr: tcpip.AddrFromSlice(p.Addr(other(from)).AsSlice()), Port: port}
	switch e := client.EP.Connect(dst); e.(type) {
	case nil, *tcpip.ErrConnectStarted:
	default:
		client.EP.Close()
		return nil, nil, fmt.Errorf("vtest: connect: %s", e)
	}
	var connErr tcpip.Error
	connected := false
	var pending []*Conn // accepted endpoints that belong to no Dial of ours
	horizon := p.Clock.Elapsed() + 120*time.Second
	ok := p.Clock.RunUntil(func() bool {
		if !connected && client.EP.Readiness(waiter.WritableEvents|waiter.EventErr|waiter.EventHUp) != 0 {
			connected = true
			connErr = client.EP.LastError()
		}
		for server == nil {
			ep, nwq, aerr := l.ep.Accept(nil)
			if aerr != nil {
				break
			}
			c := &Conn{EP: ep, WQ: nwq}
			if p.matches(client, c) {
				server = c
			} else {
				pending = append(pending, c)
			}
		}
		return connected && server != nil
	}, horizon)
	for _, c := range pending {
		c.Close()
	}
	if connErr != nil {
		client.Close()
		if server != nil {
			server.Close()
		}
		return nil, nil, fmt.Errorf("vtest: connect: %s", connErr)
	}
	if !ok {
		client.Close()
		if server != nil {
			server.Close()
		}
		return nil, nil, fmt.Errorf("%w: handshake (connected %v, accepted %v)", ErrTimeout, connected, server != nil)
	}
	return client, server, nil
}

// matches reports whether server is the far end of client.
func (p *Pair) matches(client, server *Conn) bool {
	ca, err1 := client.EP.GetLocalAddress()
	sa, err2 := server.EP.GetRemoteAddress()
	return err1 == nil && err2 == nil && ca.Port == sa.Port
}

// Start sets up a Source of n bytes of seed's stream on src and a Sink on
// dst, and starts both; the clock runs them (see Run).
func (p *Pair) Start(src, dst *Conn, n, seed int64) (*Source, *Sink) {
	so := NewSource(p.Clock, src.EP, src.WQ, seed, n)
	si := NewSink(p.Clock, dst.EP, dst.WQ)
	si.Start()
	so.Start()
	return so, si
}

// Run fires the clock's events until cond holds or d of virtual time has
// passed; it returns ErrTimeout in the latter case.
func (p *Pair) Run(cond func() bool, d time.Duration) error {
	if p.Clock.RunUntil(cond, p.Clock.Elapsed()+d) {
		return nil
	}
	return fmt.Errorf("%w after %v", ErrTimeout, d)
}

// Transfer sends n bytes of seed's stream from src to dst, runs the clock
// until the sink sees EOF (at most horizon of virtual time), and checks the
// received bytes' SHA-256 against the stream's.
func (p *Pair) Transfer(src, dst *Conn, n, seed int64, horizon time.Duration) (*Source, *Sink, error) {
	so, si := p.Start(src, dst, n, seed)
	err := p.Run(si.Done, horizon)
	if err != nil {
		return so, si, fmt.Errorf("%w (received %d of %d, source sent %d, source err %v)", err, si.Bytes(), n, so.Sent(), so.Err())
	}
	return so, si, Check(so, si, n)
}

// Check reports a sink that failed, ended short, or hashed differently from
// the source's stream.
func Check(so *Source, si *Sink, n int64) error {
	if err := so.Err(); err != nil {
		return err
	}
	if err := si.Err(); err != nil {
		return err
	}
	if si.Bytes() != n {
		return fmt.Errorf("%w: received %d bytes, want %d", ErrMismatch, si.Bytes(), n)
	}
	if !si.Discard && si.Hash() != so.Hash() {
		return fmt.Errorf("%w: SHA-256 differs", ErrMismatch)
	}
	return nil
}
