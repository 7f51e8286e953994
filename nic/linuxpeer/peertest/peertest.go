// Package peertest holds what the Linux-peer tests share: a gVisor stack on
// one link endpoint (gVisor's own TCP, the interop reference arm) and a
// bidirectional transfer checked by SHA-256.
package peertest

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/netip"

	"gvisor.dev/gvisor/pkg/tcpip"
	"gvisor.dev/gvisor/pkg/tcpip/adapters/gonet"
	"gvisor.dev/gvisor/pkg/tcpip/header"
	"gvisor.dev/gvisor/pkg/tcpip/network/arp"
	"gvisor.dev/gvisor/pkg/tcpip/network/ipv4"
	gstack "gvisor.dev/gvisor/pkg/tcpip/stack"
	"gvisor.dev/gvisor/pkg/tcpip/transport/tcp"
)

// GVisor is a gVisor stack with gVisor's TCP on one NIC.
type GVisor struct {
	S *gstack.Stack
}

// Neighbour is a permanent IPv4 neighbour entry.
type Neighbour struct {
	Addr netip.Addr
	MAC  net.HardwareAddr
}

// NewGVisor builds the stack: link as NIC 1 with addr, a default route out of
// it, cubic, SACK on, 16 MB buffers, and static neighbours (no ARP at the
// start of a run).
func NewGVisor(link gstack.LinkEndpoint, addr netip.Prefix, neigh ...Neighbour) (*GVisor, error) {
	s := gstack.New(gstack.Options{
		NetworkProtocols:   []gstack.NetworkProtocolFactory{ipv4.NewProtocol, arp.NewProtocol},
		TransportProtocols: []gstack.TransportProtocolFactory{tcp.NewProtocol},
	})
	cc := tcpip.CongestionControlOption("cubic")
	sack := tcpip.TCPSACKEnabled(true)
	snd := tcpip.TCPSendBufferSizeRangeOption{Min: 4096, Default: 1 << 20, Max: 16 << 20}
	rcv := tcpip.TCPReceiveBufferSizeRangeOption{Min: 4096, Default: 1 << 20, Max: 16 << 20}
	for _, o := range []tcpip.SettableTransportProtocolOption{&cc, &sack, &snd, &rcv} {
		if err := s.SetTransportProtocolOption(tcp.ProtocolNumber, o); err != nil {
			s.Close()
			return nil, fmt.Errorf("peertest: tcp option %T: %s", o, err)
		}
	}
	if err := s.CreateNIC(1, link); err != nil {
		s.Close()
		return nil, fmt.Errorf("peertest: CreateNIC: %s", err)
	}
	pa := tcpip.ProtocolAddress{
		Protocol:          ipv4.ProtocolNumber,
		AddressWithPrefix: tcpip.AddrFromSlice(addr.Addr().AsSlice()).WithPrefix(),
	}
	pa.AddressWithPrefix.PrefixLen = addr.Bits()
	if err := s.AddProtocolAddress(1, pa, gstack.AddressProperties{}); err != nil {
		s.Close()
		return nil, fmt.Errorf("peertest: AddProtocolAddress: %s", err)
	}
	s.SetRouteTable([]tcpip.Route{{Destination: header.IPv4EmptySubnet, NIC: 1}})
	for _, n := range neigh {
		if err := s.AddStaticNeighbor(1, ipv4.ProtocolNumber, tcpip.AddrFromSlice(n.Addr.AsSlice()), tcpip.LinkAddress(n.MAC)); err != nil {
			s.Close()
			return nil, fmt.Errorf("peertest: AddStaticNeighbor: %s", err)
		}
	}
	return &GVisor{S: s}, nil
}

func full(ap netip.AddrPort) tcpip.FullAddress {
	return tcpip.FullAddress{NIC: 1, Addr: tcpip.AddrFromSlice(ap.Addr().AsSlice()), Port: ap.Port()}
}

// Dial opens a TCP connection to ap.
func (g *GVisor) Dial(ctx context.Context, ap netip.AddrPort) (net.Conn, error) {
	return gonet.DialContextTCP(ctx, g.S, full(ap), ipv4.ProtocolNumber)
}

// Listen listens on ap.
func (g *GVisor) Listen(ap netip.AddrPort) (net.Listener, error) {
	return gonet.ListenTCP(g.S, full(ap), ipv4.ProtocolNumber)
}

// Close destroys the stack and closes its link endpoint. The NIC is removed
// before Wait, as netramp's stack.Close does and for its reason: Wait would
// wait for the link's reader holding the stack's lock, which a delivery
// under way needs to finish.
func (g *GVisor) Close() {
	g.S.Close()
	_ = g.S.RemoveNIC(1)
	g.S.Wait()
}

// Result is what one end of Exchange saw.
type Result struct {
	Sent, Received       int64
	SentSum, ReceivedSum [sha256.Size]byte
}

// Exchange writes n pseudo-random bytes (from seed) to c while reading
// everything the peer sends until EOF, then returns both SHA-256 sums. It
// half-closes c after writing so the peer's read ends.
func Exchange(c net.Conn, n int64, seed uint64) (Result, error) {
	var r Result
	type rres struct {
		n   int64
		sum [sha256.Size]byte
		err error
	}
	done := make(chan rres, 1)
	go func() {
		h := sha256.New()
		m, err := io.CopyBuffer(h, c, make([]byte, 256<<10))
		var out rres
		out.n, out.err = m, err
		copy(out.sum[:], h.Sum(nil))
		done <- out
	}()
	h := sha256.New()
	src := rand.NewChaCha8([32]byte{byte(seed), byte(seed >> 8), byte(seed >> 16), byte(seed >> 24)})
	buf := make([]byte, 256<<10)
	var werr error
	for r.Sent < n {
		b := buf[:min(int64(len(buf)), n-r.Sent)]
		src.Read(b)
		h.Write(b)
		w, err := c.Write(b)
		r.Sent += int64(w)
		if err != nil {
			werr = fmt.Errorf("write after %d bytes: %w", r.Sent, err)
			break
		}
	}
	copy(r.SentSum[:], h.Sum(nil))
	if cw, ok := c.(interface{ CloseWrite() error }); ok && werr == nil {
		if err := cw.CloseWrite(); err != nil {
			werr = fmt.Errorf("close write: %w", err)
		}
	}
	rr := <-done
	r.Received, r.ReceivedSum = rr.n, rr.sum
	if rr.err != nil {
		rr.err = fmt.Errorf("read after %d bytes: %w", rr.n, rr.err)
	}
	return r, errors.Join(werr, rr.err)
}
