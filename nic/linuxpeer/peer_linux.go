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
	"gvisor.dev/gvisor/pkg/tcpip"
	"gvisor.dev/gvisor/pkg/tcpip/header"
	"gvisor.dev/gvisor/pkg/tcpip/stack"
)

// Fixed link-layer identities: permanent neighbour entries need them, and
// no ARP exchange then delays the first segment of a run.
var (
	MAC1  = net.HardwareAddr{0x02, 0x00, 0x5e, 0x00, 0x00, 0x01}
	MAC2  = net.HardwareAddr{0x02, 0x00, 0x5e, 0x00, 0x00, 0x02}
	Addr1 = netip.MustParseAddr("198.18.0.1") // our stack (Peer) or host A (Pair)
	Addr2 = netip.MustParseAddr("198.18.0.2") // the kernel (Peer) or host B (Pair)
)

const prefixLen = 24
const tapName = "nrpeer0"

// Config configures Start and StartPair.
type Config struct {
	Path Path
	// MTU of the test link; 0 means 1500.
	MTU int
	// CongestionControl is set on every kernel socket with TCP_CONGESTION
	// and as the namespace default; "" means "cubic".
	CongestionControl string
	// TCPMem is the tcp_rmem/tcp_wmem maximum inside the namespaces; 0
	// means 64 MiB.
	TCPMem int
	// SplitGSO (StartPair only) splits the kernel's GSO frames into
	// MSS-sized frames before the emulator, so loss and the queue act per
	// segment as on a wire; it costs about a core at 1 Gbit/s. Off, GSO
	// frames cross whole.
	SplitGSO bool
	// Realtime runs the emulator's releasing threads SCHED_FIFO (root), so
	// on a loaded machine frames leave on time more often. Off, they run at
	// nice -10. Leave it off where the path has no rate limit: a releasing
	// thread that never sleeps would then hold a core.
	Realtime bool
	// TxRing (Start only) models the stack's card: a ring of this many
	// frames draining at LineRateBps (0 = Path.Out.RateBps) in front of
	// the path. Link then implements nic.CreditLink with it and refuses
	// writes when it is full. 0 means no card model.
	TxRing      int
	LineRateBps int64
}

func (c *Config) fill() error {
	if c.MTU == 0 {
		c.MTU = 1500
	}
	if c.MTU < 576 || c.MTU > 9000 {
		return fmt.Errorf("%w: MTU %d outside 576..9000", ErrBadConfig, c.MTU)
	}
	if c.CongestionControl == "" {
		c.CongestionControl = "cubic"
	}
	if c.TCPMem == 0 {
		c.TCPMem = 64 << 20
	}
	if c.TxRing < 0 || c.LineRateBps < 0 {
		return fmt.Errorf("%w: TxRing %d and LineRateBps %d must be ≥ 0", ErrBadConfig, c.TxRing, c.LineRateBps)
	}
	if c.TCPMem < 1<<20 {
		return fmt.Errorf("%w: TCPMem %d under 1 MiB", ErrBadConfig, c.TCPMem)
	}
	if err := c.Path.Out.validate(); err != nil {
		return err
	}
	return c.Path.In.validate()
}

// PathStats is both directions of the emulator, and the stack's link.
type PathStats struct {
	Out, In DirStats
	// RingFull counts packets the stack wrote while the modelled TX ring
	// was full (Peer with TxRing only).
	RingFull int64
}

// Peer is the kernel in a namespace, reached from this process's stack
// through Link and the emulator.
type Peer struct {
	Kernel *Kernel
	link   *Link
	dev    *tap.Device
	out    *pipe // stack → kernel
	in     *pipe // kernel → stack
	wg     sync.WaitGroup
	once   sync.Once
	err    error
}

// Start creates the namespace, the TAP inside it and the emulator, and
// returns once the kernel's side is up with its neighbour entry in place.
// It needs root and /dev/net/tun (errors.Is(err, netns.ErrUnsupported)
// otherwise). The caller's stack uses Link() with address LocalPrefix().
func Start(ctx context.Context, cfg Config) (*Peer, error) {
	if err := cfg.fill(); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	k, err := newKernel("peer", Addr2, cfg.CongestionControl, cfg.TCPMem)
	if err != nil {
		return nil, err
	}
	// No virtio-net header: the kernel segments and checksums before the
	// TAP, so the emulator and the stack see wire-size frames.
	dev, err := tap.Open(tap.Config{Name: tapName, Netns: k.ns.Path()})
	if err != nil {
		k.ns.Delete()
		return nil, err
	}
	if err := k.ns.SetupLink(netns.LinkConfig{Dev: tapName, MAC: MAC2.String(), MTU: cfg.MTU,
		Addr: netip.PrefixFrom(Addr2, prefixLen).String(), Peer: Addr1.String(), PeerMAC: MAC1.String()}); err != nil {
		dev.Close()
		k.ns.Delete()
		return nil, err
	}
	p := &Peer{Kernel: k, dev: dev, link: newLink(uint32(cfg.MTU), tcpip.LinkAddress(MAC1), tcpip.LinkAddress(MAC2))}
	pool := newBufPool()
	p.out = newPipe(cfg.Path.Out, cfg.Path.Seed, 0, cfg.Realtime, pool, func(b []byte) error { _, err := dev.Write(b); return err })
	p.in = newPipe(cfg.Path.In, cfg.Path.Seed+1, 0, cfg.Realtime, pool, p.link.deliver)
	p.out.other, p.in.other = p.in, p.out
	p.link.out = p.out
	if cfg.TxRing > 0 {
		line := cfg.LineRateBps
		if line == 0 {
			line = cfg.Path.Out.RateBps
		}
		p.link.card = newCard(cfg.TxRing, line)
	}
	p.wg.Add(1)
	go func() { defer p.wg.Done(); readInto(dev, p.in, nil) }()
	return p, nil
}

// readInto reads frames from dev into the pipe until dev is closed; split,
// if set, may turn one frame into several.
func readInto(dev *tap.Device, p *pipe, split func(frame []byte, emit func(...[]byte)) bool) {
	buf := make([]byte, dev.HeaderLen()+largeBuf)
	for {
		n, err := dev.Read(buf)
		if err != nil {
			return
		}
		if split != nil && split(buf[:n], p.submit) {
			continue
		}
		p.submit(buf[:n])
	}
}

// Link returns the link endpoint the caller's stack attaches as a NIC.
func (p *Peer) Link() stack.LinkEndpoint { return p.link }

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

// Stats returns the emulator's counts and lateness so far.
func (p *Peer) Stats() PathStats {
	return PathStats{Out: p.out.stats(), In: p.in.stats(), RingFull: p.link.ringFull.Load()}
}

// Close stops the emulator, closes the TAP and deletes the namespace (and
// every socket left in it). Safe to call twice.
func (p *Peer) Close() error {
	p.once.Do(func() {
		p.link.Close()
		p.dev.Close()
		p.wg.Wait()
		if p.link.card != nil {
			p.link.card.close()
		}
		p.out.close()
		p.in.close()
		p.err = p.Kernel.ns.Delete()
	})
	return p.err
}

// Pair is two kernels, A and B, each in its own namespace, joined by TAPs
// through the emulator: Path.Out carries A→B, Path.In B→A.
type Pair struct {
	A, B   *Kernel
	devs   [2]*tap.Device
	ab, ba *pipe
	wg     sync.WaitGroup
	once   sync.Once
	err    error
}

// StartPair builds both namespaces and the path. The TAPs carry the
// virtio-net header with offloads on, so the kernels exchange GSO frames
// and Go moves a few large frames instead of many small ones.
func StartPair(ctx context.Context, cfg Config) (*Pair, error) {
	if err := cfg.fill(); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	pr := &Pair{}
	fail := func(err error) (*Pair, error) {
		for _, d := range pr.devs {
			if d != nil {
				d.Close()
			}
		}
		for _, k := range []*Kernel{pr.A, pr.B} {
			if k != nil {
				k.ns.Delete()
			}
		}
		return nil, err
	}
	var err error
	if pr.A, err = newKernel("a", Addr1, cfg.CongestionControl, cfg.TCPMem); err != nil {
		return fail(err)
	}
	if pr.B, err = newKernel("b", Addr2, cfg.CongestionControl, cfg.TCPMem); err != nil {
		return fail(err)
	}
	sides := []struct {
		k            *Kernel
		mac, peerMAC net.HardwareAddr
		addr, peer   netip.Addr
	}{{pr.A, MAC1, MAC2, Addr1, Addr2}, {pr.B, MAC2, MAC1, Addr2, Addr1}}
	for i, s := range sides {
		d, err := tap.Open(tap.Config{Name: tapName, Netns: s.k.ns.Path(), VnetHdr: true, Offload: true})
		if err != nil {
			return fail(err)
		}
		pr.devs[i] = d
		if err := s.k.ns.SetupLink(netns.LinkConfig{Dev: tapName, MAC: s.mac.String(), MTU: cfg.MTU,
			Addr: netip.PrefixFrom(s.addr, prefixLen).String(), Peer: s.peer.String(), PeerMAC: s.peerMAC.String()}); err != nil {
			return fail(err)
		}
	}
	pool := newBufPool()
	write := func(d *tap.Device) func([]byte) error {
		return func(b []byte) error { _, err := d.Write(b); return err }
	}
	pr.ab = newPipe(cfg.Path.Out, cfg.Path.Seed, tap.VnetHdrLen, cfg.Realtime, pool, write(pr.devs[1]))
	pr.ba = newPipe(cfg.Path.In, cfg.Path.Seed+1, tap.VnetHdrLen, cfg.Realtime, pool, write(pr.devs[0]))
	pr.ab.other, pr.ba.other = pr.ba, pr.ab
	var split func([]byte, func(...[]byte)) bool
	if cfg.SplitGSO {
		split = splitGSO
	}
	pr.wg.Add(2)
	go func() { defer pr.wg.Done(); readInto(pr.devs[0], pr.ab, split) }()
	go func() { defer pr.wg.Done(); readInto(pr.devs[1], pr.ba, split) }()
	return pr, nil
}

var zeroVnet [tap.VnetHdrLen]byte

// splitGSO emits each segment of a GSO frame with a plain virtio-net header
// and reports whether it handled the frame. A frame it cannot parse passes
// whole.
func splitGSO(b []byte, emit func(...[]byte)) bool {
	h, err := tap.DecodeVnetHdr(b)
	if err != nil || h.GSOType == tap.VnetGSONone {
		return false
	}
	err = tap.Segment(h, b[tap.VnetHdrLen:], header.EthernetMinimumSize, func(seg []byte) { emit(zeroVnet[:], seg) })
	return err == nil
}

// Stats returns the emulator's counts and lateness so far (Out is A→B).
func (pr *Pair) Stats() PathStats { return PathStats{Out: pr.ab.stats(), In: pr.ba.stats()} }

// Close stops the emulator and deletes both namespaces. Safe to call twice.
func (pr *Pair) Close() error {
	pr.once.Do(func() {
		for _, d := range pr.devs {
			d.Close()
		}
		pr.wg.Wait()
		pr.ab.close()
		pr.ba.close()
		pr.err = errors.Join(pr.A.ns.Delete(), pr.B.ns.Delete())
	})
	return pr.err
}
