//go:build linux

package linuxpeer

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os/exec"
	"sync"

	"github.com/netramp/netramp/nic/netns"
	"github.com/netramp/netramp/nic/tap"
	"github.com/netramp/netramp/nic/wire"
)

// Addresses on the test link: our stack (Peer) or kernel A (Pair) at Addr1,
// the kernel (Peer) or kernel B (Pair) at Addr2.
var (
	Addr1 = netip.MustParseAddr("198.18.0.1")
	Addr2 = netip.MustParseAddr("198.18.0.2")
)

const prefixLen = 24
const tunName = "nrpeer0"

// Config configures Start and StartPair.
type Config struct {
	// Wire is the path, run by wire.NewRealTime: AtoB carries frames from
	// side A (our stack, or kernel A) to side B (the kernel, or kernel B).
	// Its MTU is the test link's. A side the kernel feeds has no TX ring
	// model, so its direction's TxRing must be 0: the kernel's own device
	// queue stands for its card, and a TUN device cannot be told the ring
	// is full.
	Wire wire.Config
	// CongestionControl is set on every kernel socket with TCP_CONGESTION
	// and as the namespace default; "" means "cubic".
	CongestionControl string
	// TCPMem is the tcp_rmem/tcp_wmem maximum inside the namespaces; 0
	// means 64 MiB.
	TCPMem int
}

// fill applies the defaults and checks cfg; kernelSides names the wire
// directions the kernel feeds.
func (c *Config) fill(kernelSides ...string) error {
	if c.CongestionControl == "" {
		c.CongestionControl = "cubic"
	}
	if c.TCPMem == 0 {
		c.TCPMem = 64 << 20
	}
	if c.TCPMem < 1<<20 {
		return fmt.Errorf("%w: TCPMem = %d, want 0 (64 MiB) or at least 1 MiB", ErrBadConfig, c.TCPMem)
	}
	if c.Wire.MTU != 0 && (c.Wire.MTU < 576 || c.Wire.MTU > 9000) {
		return fmt.Errorf("%w: Wire.MTU = %d, want 0 (%d) or 576..9000", ErrBadConfig, c.Wire.MTU, wire.DefaultMTU)
	}
	for _, s := range kernelSides {
		d := c.Wire.AtoB
		if s == "BtoA" {
			d = c.Wire.BtoA
		}
		// control:linuxpeer-kernel-ring-accepted
		if d.TxRing != 0 {
			return fmt.Errorf("%w: Wire.%s.TxRing = %d, want 0: the kernel feeds that side, and its own device queue is its card",
				ErrBadConfig, s, d.TxRing)
		}
	}
	return nil
}

func (c *Config) mtu() int {
	if c.Wire.MTU == 0 {
		return wire.DefaultMTU
	}
	return int(c.Wire.MTU)
}

// kernelOn makes a kernel in its own namespace at addr, with a TUN device
// bridged to ep. On error nothing is left behind.
func kernelOn(tag string, addr netip.Addr, cfg *Config, ep *wire.Endpoint) (*Kernel, *bridge, error) {
	k, err := newKernel(tag, addr, cfg.CongestionControl, cfg.TCPMem)
	if err != nil {
		return nil, nil, err
	}
	dev, err := tap.Open(tap.Config{Name: tunName, Netns: k.ns.Path(), TUN: true})
	if err != nil {
		k.ns.Delete()
		return nil, nil, err
	}
	if err := k.ns.SetupLink(netns.LinkConfig{Dev: tunName, MTU: cfg.mtu(), Addr: netip.PrefixFrom(addr, prefixLen).String()}); err != nil {
		dev.Close()
		k.ns.Delete()
		return nil, nil, err
	}
	return k, attach(dev, ep), nil
}

// Peer is the kernel in a namespace on side B of a real-time wire, and side
// A for the caller's stack.
type Peer struct {
	Kernel *Kernel
	w      *wire.Wire
	br     *bridge
	once   sync.Once
	err    error
}

// Start builds the wire, the namespace and the TUN device inside it, and
// returns once the kernel's side is up. It needs root and /dev/net/tun
// (errors.Is(err, netns.ErrUnsupported) otherwise). The caller's stack uses
// Link() with address LocalPrefix().
func Start(ctx context.Context, cfg Config) (*Peer, error) {
	if err := cfg.fill("BtoA"); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if err := netns.Check(); err != nil {
		return nil, err
	}
	w, err := wire.NewRealTime(cfg.Wire)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrBadConfig, err)
	}
	k, br, err := kernelOn("peer", Addr2, &cfg, w.B())
	if err != nil {
		w.Close()
		return nil, err
	}
	return &Peer{Kernel: k, w: w, br: br}, nil
}

// Link returns the wire's side A, the link endpoint the caller's stack
// attaches as a NIC (it carries bare IP packets, as the kernel's TUN does).
func (p *Peer) Link() *wire.Endpoint { return p.w.A() }

// Wire returns the path: its Stats are both directions' counts and
// lateness (AtoB towards the kernel).
func (p *Peer) Wire() *wire.Wire { return p.w }

// LocalPrefix is the address and prefix the caller's stack must use on Link.
func (p *Peer) LocalPrefix() netip.Prefix { return netip.PrefixFrom(Addr1, prefixLen) }

// Addr is the kernel's address.
func (p *Peer) Addr() netip.Addr { return p.Kernel.addr }

// Listen opens a kernel listener in the namespace (see Kernel.Listen).
func (p *Peer) Listen(port uint16) (net.Listener, error) { return p.Kernel.Listen(port) }

// Dial opens a kernel connection from the namespace (see Kernel.Dial).
func (p *Peer) Dial(ctx context.Context, to netip.AddrPort) (net.Conn, error) {
	return p.Kernel.Dial(ctx, to)
}

// Command returns a command that runs inside the kernel's namespace.
func (p *Peer) Command(ctx context.Context, name string, args ...string) *exec.Cmd {
	return p.Kernel.Command(ctx, name, args...)
}

// Close stops the wire, closes the TUN device and deletes the namespace
// (and every socket left in it). Safe to call twice.
func (p *Peer) Close() error {
	p.once.Do(func() {
		p.br.close()
		p.w.Close()
		p.err = p.Kernel.ns.Delete()
	})
	return p.err
}

// Pair is two kernels, A and B, each in its own namespace, on the two sides
// of a real-time wire: Wire.AtoB carries A→B.
type Pair struct {
	A, B *Kernel
	w    *wire.Wire
	brs  []*bridge
	once sync.Once
	err  error
}

// StartPair builds the wire and both namespaces.
func StartPair(ctx context.Context, cfg Config) (*Pair, error) {
	if err := cfg.fill("AtoB", "BtoA"); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if err := netns.Check(); err != nil {
		return nil, err
	}
	w, err := wire.NewRealTime(cfg.Wire)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrBadConfig, err)
	}
	pr := &Pair{w: w}
	var brA, brB *bridge
	if pr.A, brA, err = kernelOn("a", Addr1, &cfg, w.A()); err != nil {
		w.Close()
		return nil, err
	}
	pr.brs = append(pr.brs, brA)
	if pr.B, brB, err = kernelOn("b", Addr2, &cfg, w.B()); err != nil {
		pr.B = nil
		pr.Close()
		return nil, err
	}
	pr.brs = append(pr.brs, brB)
	return pr, nil
}

// Wire returns the path between the two kernels.
func (pr *Pair) Wire() *wire.Wire { return pr.w }

// Close stops the wire and deletes both namespaces. Safe to call twice.
func (pr *Pair) Close() error {
	pr.once.Do(func() {
		for _, b := range pr.brs {
			b.close()
		}
		pr.w.Close()
		var errs []error
		for _, k := range []*Kernel{pr.A, pr.B} {
			if k != nil {
				errs = append(errs, k.ns.Delete())
			}
		}
		pr.err = errors.Join(errs...)
	})
	return pr.err
}
