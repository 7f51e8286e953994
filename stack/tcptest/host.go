package tcptest

import (
	"net/netip"
	"testing"
	"time"

	"gvisor.dev/gvisor/pkg/buffer"
	"gvisor.dev/gvisor/pkg/tcpip"
	"gvisor.dev/gvisor/pkg/tcpip/header"
	"gvisor.dev/gvisor/pkg/tcpip/link/channel"
	"gvisor.dev/gvisor/pkg/tcpip/network/ipv4"
	gstack "gvisor.dev/gvisor/pkg/tcpip/stack"
	"gvisor.dev/gvisor/pkg/waiter"

	"github.com/netramp/netramp/counters"
	"github.com/netramp/netramp/nic"
	"github.com/netramp/netramp/stack"
	"github.com/netramp/netramp/stack/vclock"
	"github.com/netramp/netramp/tcp"
)

// Addresses of the host (our TCP), of the scripted peer, and of a router
// between them that reports ICMP errors.
var (
	HostAddr   = netip.MustParseAddr("10.0.0.1")
	PeerAddr   = netip.MustParseAddr("10.0.0.2")
	RouterAddr = netip.MustParseAddr("10.0.0.254")
)

// Epoch is the virtual wall time at which every Host's clock starts.
var Epoch = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// Link is a channel endpoint that can refuse writes (as a full TX ring does)
// while reporting TX credit, and counts what it refused.
type Link struct {
	*channel.Endpoint
	Refuse  bool // refuse every write
	Refused int  // frames refused so far
	Credit  int  // the TxFree reported; 0 means unlimited
	Full    bool // the ring has no room: TxFree reports 0 whatever Credit says
	// OnWrite, if set, runs after each write the link takes, on the
	// writer's goroutine: what it injects arrives nested in that write, as
	// on a link that delivers synchronously (gVisor's pipe).
	OnWrite func()
	waiters []func()
	disp    gstack.NetworkDispatcher
}

// Attach implements gstack.LinkEndpoint, keeping the dispatcher for
// BeginBurst and EndBurst.
func (l *Link) Attach(d gstack.NetworkDispatcher) {
	l.disp = d
	l.Endpoint.Attach(d)
}

// BeginBurst tells the stack that the frames injected from now until
// EndBurst arrive as one burst (nic.BeginBurst), as from one RX ring poll.
func (l *Link) BeginBurst() { nic.BeginBurst(l.disp) }

// EndBurst ends the burst (nic.EndBurst).
func (l *Link) EndBurst() { nic.EndBurst(l.disp) }

// WritePackets implements gstack.LinkEndpoint.
func (l *Link) WritePackets(pkts gstack.PacketBufferList) (int, tcpip.Error) {
	if l.Refuse {
		l.Refused += pkts.Len()
		return 0, &tcpip.ErrNoBufferSpace{}
	}
	n, err := l.Endpoint.WritePackets(pkts)
	if l.OnWrite != nil {
		l.OnWrite()
	}
	return n, err
}

// TxCredit implements nic.CreditLink.
func (l *Link) TxCredit() nic.Credit { return l }

// TxFree implements nic.Credit.
func (l *Link) TxFree() int {
	if l.Full {
		return 0
	}
	if l.Credit == 0 {
		return 1 << 20
	}
	return l.Credit
}

// NotifyTxFree implements nic.Credit: f runs at the next Release.
func (l *Link) NotifyTxFree(f func()) func() {
	l.waiters = append(l.waiters, f)
	return func() {}
}

// Release lets writes through again and runs the credit waiters.
func (l *Link) Release() {
	l.Refuse = false
	ws := l.waiters
	l.waiters = nil
	for _, f := range ws {
		f()
	}
}

// Host is one netramp stack on a Link, on its own virtual clock; the test
// plays every peer.
type Host struct {
	TB       testing.TB
	Clock    *vclock.Clock
	Link     *Link
	Stack    *stack.Stack
	Counters *counters.Registry
}

// Config chooses a Host's TCP options and whether its link reports credit.
type Config struct {
	TCP      tcp.Options
	NoCredit bool // hide the link's credit interface from the stack
	// Wrap, if set, is the link the stack is given in place of Link (a
	// nic/gso Link over it, say); the test still reads and injects at Link.
	Wrap func(gstack.LinkEndpoint) gstack.LinkEndpoint
}

// noCreditLink hides the Link's credit interface.
type noCreditLink struct{ gstack.LinkEndpoint }

// New builds a Host with TCP options o; the stack closes at the test's end.
func New(tb testing.TB, o tcp.Options) *Host { return NewConfig(tb, Config{TCP: o}) }

// NewConfig builds a Host from c.
func NewConfig(tb testing.TB, c Config) *Host {
	tb.Helper()
	clk := vclock.New(Epoch)
	link := &Link{Endpoint: channel.New(1024, 1500, "")}
	reg := counters.NewRegistry()
	c.TCP.Counters = reg
	var l gstack.LinkEndpoint = link
	if c.NoCredit {
		l = noCreditLink{link}
	}
	if c.Wrap != nil {
		l = c.Wrap(l)
	}
	s, err := stack.New(stack.Options{TCP: c.TCP, Clock: clk, Seed: 11, Counters: reg,
		NICs: []stack.NIC{{Link: l, Addr: netip.PrefixFrom(HostAddr, 24)}}})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(s.Close)
	return &Host{TB: tb, Clock: clk, Link: link, Stack: s, Counters: reg}
}

func addr(a netip.Addr) tcpip.Address { return tcpip.AddrFromSlice(a.AsSlice()) }

// Inject delivers s from the peer to the host, as if it came off the wire.
func (h *Host) Inject(s Seg) { h.InjectFrame(Frame(addr(PeerAddr), addr(HostAddr), s)) }

// InjectMangled is Inject with FrameMangled's mangle.
func (h *Host) InjectMangled(s Seg, mangle func(header.TCP) bool) {
	h.InjectFrame(FrameMangled(addr(PeerAddr), addr(HostAddr), s, mangle))
}

// InjectRaw delivers raw bytes as the TCP header and payload of a packet
// from the peer, its checksum fixed when fix is set.
func (h *Host) InjectRaw(raw []byte, fix bool) {
	b := RawFrame(addr(PeerAddr), addr(HostAddr), raw)
	if fix {
		FixChecksum(b)
	}
	h.InjectFrame(b)
}

// InjectFrame delivers an IPv4 frame to the host.
func (h *Host) InjectFrame(b []byte) {
	pkt := gstack.NewPacketBuffer(gstack.PacketBufferOptions{Payload: buffer.MakeWithData(b)})
	h.Link.InjectInbound(ipv4.ProtocolNumber, pkt)
	pkt.DecRef()
}

// Out returns every segment the host has sent since the last call.
func (h *Host) Out() []Seg {
	var segs []Seg
	for {
		pkt := h.Link.Read()
		if pkt == nil {
			return segs
		}
		v := pkt.ToView()
		if s, ok := Parse(v.AsSlice()); ok {
			segs = append(segs, s)
		}
		v.Release()
		pkt.DecRef()
	}
}

// One returns the single segment sent since the last call, failing the test
// when there is not exactly one.
func (h *Host) One() Seg {
	h.TB.Helper()
	segs := h.Out()
	if len(segs) != 1 {
		h.TB.Fatalf("host sent %d segments, want 1: %+v", len(segs), segs)
	}
	return segs[0]
}

// None fails the test if the host sent anything since the last call.
func (h *Host) None() {
	h.TB.Helper()
	if segs := h.Out(); len(segs) != 0 {
		h.TB.Fatalf("host sent %d segments, want none: %+v", len(segs), segs)
	}
}

// Count is the host's counter name.
func (h *Host) Count(name string) uint64 { return h.Counters.Snapshot()[name] }

// NewEndpoint creates an unconnected TCP endpoint on the host.
func (h *Host) NewEndpoint() (tcpip.Endpoint, *waiter.Queue) {
	h.TB.Helper()
	wq := new(waiter.Queue)
	ep, err := h.Stack.Gvisor().NewEndpoint(tcp.ProtocolNumber, ipv4.ProtocolNumber, wq)
	if err != nil {
		h.TB.Fatal(err)
	}
	return ep, wq
}

// Listen opens a listener on port; it closes at the test's end.
func (h *Host) Listen(port uint16, backlog int) (tcpip.Endpoint, *waiter.Queue) {
	h.TB.Helper()
	ep, wq := h.NewEndpoint()
	if err := ep.Bind(tcpip.FullAddress{Port: port}); err != nil {
		h.TB.Fatal(err)
	}
	if err := ep.Listen(backlog); err != nil {
		h.TB.Fatal(err)
	}
	h.TB.Cleanup(ep.Close)
	return ep, wq
}
