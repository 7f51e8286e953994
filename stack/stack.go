// Package stack builds a gVisor network stack with netramp's TCP registered as
// protocol 6 (or gVisor's own TCP, for interop arms), gVisor's IPv4, IPv6 and
// ARP, and one NIC per link endpoint, and offers Dial and Listen returning
// net.Conn and net.Listener.
package stack

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	orand "math/rand"
	mrand "math/rand/v2"
	"net"
	"net/netip"
	"sync"

	"gvisor.dev/gvisor/pkg/tcpip"
	"gvisor.dev/gvisor/pkg/tcpip/adapters/gonet"
	"gvisor.dev/gvisor/pkg/tcpip/header"
	"gvisor.dev/gvisor/pkg/tcpip/network/arp"
	"gvisor.dev/gvisor/pkg/tcpip/network/ipv4"
	"gvisor.dev/gvisor/pkg/tcpip/network/ipv6"
	gstack "gvisor.dev/gvisor/pkg/tcpip/stack"
	gtcp "gvisor.dev/gvisor/pkg/tcpip/transport/tcp"

	"github.com/netramp/netramp/counters"
	"github.com/netramp/netramp/nic"
	"github.com/netramp/netramp/tcp"
)

// ErrBadOptions reports stack options that cannot build a stack.
var ErrBadOptions = errors.New("stack: bad options")

// NIC is one link endpoint with its address and prefix.
type NIC struct {
	Link gstack.LinkEndpoint
	Addr netip.Prefix // the NIC's address and on-link prefix, e.g. 198.18.0.1/24
	Name string       // optional
}

// Options configure a stack.
type Options struct {
	TCP       tcp.Options // validated even with GVisorTCP, which then does not use it
	GVisorTCP bool        // use gVisor's own TCP instead of netramp's, for interop arms
	Clock     tcpip.Clock
	NICs      []NIC
	Counters  *counters.Registry
	// Seed, when nonzero, makes every random choice of the stack (ephemeral
	// ports, initial sequence numbers, secrets) a function of Seed, so a
	// virtual-time run repeats exactly. Zero uses crypto/rand.
	Seed int64
}

// Stack is a gVisor stack with its NICs, routes and counters.
type Stack struct {
	s       *gstack.Stack
	reg     *counters.Registry
	credits map[tcpip.NICID]nic.Credit
	links   []gstack.LinkEndpoint // each NIC's link, for Close to wait on
	gvisor  bool                  // runs gVisor's TCP: Dial and Listen hand out gonet's conns
}

// seededReader is a deterministic byte stream for Options.Seed; it is not
// secret, and is meant for repeatable test and bench runs only.
type seededReader struct {
	mu sync.Mutex
	r  *mrand.ChaCha8
}

func (s *seededReader) Read(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.r.Read(p)
}

// New builds the stack: protocols, NICs, addresses, and a route per NIC (its
// prefix on that NIC, and a default route through the first NIC of each IP
// version).
func New(o Options) (*Stack, error) {
	if len(o.NICs) == 0 {
		return nil, fmt.Errorf("%w: NICs is empty", ErrBadOptions)
	}
	st := &Stack{
		reg:     o.Counters,
		credits: make(map[tcpip.NICID]nic.Credit),
		gvisor:  o.GVisorTCP,
	}
	if st.reg == nil {
		st.reg = counters.NewRegistry()
	}
	clk := o.Clock
	if clk == nil {
		clk = tcpip.NewStdClock()
	}
	gopts := gstack.Options{
		NetworkProtocols: []gstack.NetworkProtocolFactory{ipv4.NewProtocol, ipv6.NewProtocol, arp.NewProtocol},
		Clock:            clk,
		HandleLocal:      true,
	}
	if o.Seed != 0 {
		var key [32]byte
		binary.LittleEndian.PutUint64(key[:], uint64(o.Seed))
		var sr io.Reader = &seededReader{r: mrand.NewChaCha8(key)}
		gopts.SecureRNG = sr
		gopts.RandSource = orand.NewSource(o.Seed)
	}
	for i, n := range o.NICs {
		if n.Link == nil {
			return nil, fmt.Errorf("%w: NICs[%d].Link is nil", ErrBadOptions, i)
		}
		if !n.Addr.IsValid() {
			return nil, fmt.Errorf("%w: NICs[%d].Addr %v is not a valid prefix", ErrBadOptions, i, n.Addr)
		}
		id := tcpip.NICID(i + 1)
		if cl, ok := n.Link.(nic.CreditLink); ok {
			if c := cl.TxCredit(); c != nil {
				st.credits[id] = c
			}
		}
	}
	to := o.TCP
	if to.Counters == nil {
		to.Counters = st.reg
	}
	if to.Credit == nil && len(st.credits) > 0 {
		credits := st.credits
		to.Credit = func(id tcpip.NICID) nic.Credit { return credits[id] }
	}
	ours, err := tcp.NewProtocolFactory(to)
	if err != nil {
		return nil, fmt.Errorf("%w: TCP: %w", ErrBadOptions, err)
	}
	gopts.TransportProtocols = []gstack.TransportProtocolFactory{ours}
	if o.GVisorTCP {
		gopts.TransportProtocols = []gstack.TransportProtocolFactory{gtcp.NewProtocol}
	}
	s := gstack.New(gopts)
	st.s = s
	if o.GVisorTCP {
		sack := tcpip.TCPSACKEnabled(true)
		s.SetTransportProtocolOption(gtcp.ProtocolNumber, &sack)
		mod := tcpip.TCPModerateReceiveBufferOption(true)
		s.SetTransportProtocolOption(gtcp.ProtocolNumber, &mod)
	}
	var routes []tcpip.Route
	var def4, def6 bool
	for i, n := range o.NICs {
		id := tcpip.NICID(i + 1)
		name := n.Name
		if name == "" {
			name = fmt.Sprintf("nic%d", id)
		}
		link := n.Link
		if b := tcp.Bursts(s, id); b != nil {
			link = &burstLink{LinkEndpoint: link, bursts: b}
		}
		qd := &directQDisc{link: n.Link}
		if bw, ok := n.Link.(nic.BurstWriter); ok && bw.WritesBursts() && tcp.SetTxBatch(s, id, qd) {
			qd.gather, qd.drops = true, st.qdiscDrops()
		}
		// control:stack-default-qdisc
		if err := s.CreateNICWithOptions(id, link, gstack.NICOptions{Name: name, QDisc: qd}); err != nil {
			st.Close()
			return nil, fmt.Errorf("stack: create NIC %d: %s", id, err)
		}
		st.links = append(st.links, n.Link)
		pfx := n.Addr
		proto := ipv4.ProtocolNumber
		if pfx.Addr().Is6() && !pfx.Addr().Is4In6() {
			proto = ipv6.ProtocolNumber
		}
		addr := tcpip.AddrFromSlice(pfx.Addr().Unmap().AsSlice())
		pa := tcpip.ProtocolAddress{Protocol: proto, AddressWithPrefix: tcpip.AddressWithPrefix{Address: addr, PrefixLen: pfx.Bits()}}
		if err := s.AddProtocolAddress(id, pa, gstack.AddressProperties{}); err != nil {
			st.Close()
			return nil, fmt.Errorf("stack: address on NIC %d: %s", id, err)
		}
		routes = append(routes, tcpip.Route{Destination: pa.AddressWithPrefix.Subnet(), NIC: id})
		if proto == ipv4.ProtocolNumber && !def4 {
			def4 = true
			routes = append(routes, tcpip.Route{Destination: header.IPv4EmptySubnet, NIC: id})
		}
		if proto == ipv6.ProtocolNumber && !def6 {
			def6 = true
			routes = append(routes, tcpip.Route{Destination: header.IPv6EmptySubnet, NIC: id})
		}
	}
	// More specific routes first: gVisor takes the first match in table order.
	var ordered []tcpip.Route
	for _, r := range routes {
		if r.Destination.Prefix() != 0 {
			ordered = append(ordered, r)
		}
	}
	for _, r := range routes {
		if r.Destination.Prefix() == 0 {
			ordered = append(ordered, r)
		}
	}
	s.SetRouteTable(ordered)
	return st, nil
}

// Gvisor returns the underlying gVisor stack.
func (s *Stack) Gvisor() *gstack.Stack { return s.s }

// Counters returns the stack's counter registry.
func (s *Stack) Counters() *counters.Registry { return s.reg }

// Close aborts the stack's connections, removes its NICs, which detaches
// and closes each link and so stops its reader, waits for each link's
// goroutines, then for the stack's own. It closes the links the stack was
// built with.
//
// The NICs go before gVisor's Stack.Wait, one RemoveNIC each, because that
// Wait removes the NICs left and waits for their links while it holds the
// stack's lock. A link's reader already inside a delivery (past the NIC's
// enabled check, so detaching cannot recall it) needs that lock to finish:
// IPv4 input reads the NIC table (FindNICNameFromID), and a reset reply
// finds a route (FindRoute). The reader can then never stop, and Wait
// never returns. RemoveNIC holds the lock only to unlink the NIC, and
// closes the link after releasing it, so the reader finishes its delivery
// and exits, whichever TCP the stack runs.
func (s *Stack) Close() {
	s.s.Close()
	// control:stack-close-links-under-lock
	for id := range s.s.NICInfo() {
		// An error says the NIC is gone already: nothing to stop.
		_ = s.s.RemoveNIC(id)
	}
	for _, l := range s.links {
		l.Wait()
	}
	s.s.Wait()
}

func fullAddr(ap netip.AddrPort) (tcpip.FullAddress, tcpip.NetworkProtocolNumber) {
	a := ap.Addr()
	fa := tcpip.FullAddress{Port: ap.Port()}
	if a.IsValid() && !a.IsUnspecified() {
		fa.Addr = tcpip.AddrFromSlice(a.Unmap().AsSlice())
	}
	if a.Is6() && !a.Is4In6() {
		return fa, ipv6.ProtocolNumber
	}
	return fa, ipv4.ProtocolNumber
}

// Dial opens a TCP connection to addr. The context bounds the handshake; the
// returned conn honours deadlines. Our TCP's conns are this package's (conn.go:
// no allocation per Read or Write); gVisor's TCP's are gonet's, as its users
// get them.
func (s *Stack) Dial(ctx context.Context, addr netip.AddrPort) (net.Conn, error) {
	if !addr.Addr().IsValid() || addr.Port() == 0 {
		return nil, fmt.Errorf("stack: dial %v: need an address and a port", addr)
	}
	fa, proto := fullAddr(addr)
	if !s.gvisor {
		return s.dial(ctx, fa, proto)
	}
	c, err := gonet.DialContextTCP(ctx, s.s, fa, proto)
	if err != nil {
		return nil, err
	}
	return c, nil
}

// Listen listens on addr; an unspecified address listens on every address of
// its IP version. Accept returns conns as Dial does.
func (s *Stack) Listen(addr netip.AddrPort) (net.Listener, error) {
	fa, proto := fullAddr(addr)
	if !s.gvisor {
		return s.listen(fa, proto)
	}
	l, err := gonet.ListenTCP(s.s, fa, proto)
	if err != nil {
		return nil, err
	}
	return l, nil
}
