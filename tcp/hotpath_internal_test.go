package tcp

import (
	"testing"
	"time"

	"gvisor.dev/gvisor/pkg/buffer"
	"gvisor.dev/gvisor/pkg/tcpip"
	"gvisor.dev/gvisor/pkg/tcpip/checksum"
	"gvisor.dev/gvisor/pkg/tcpip/header"
	"gvisor.dev/gvisor/pkg/tcpip/link/pipe"
	"gvisor.dev/gvisor/pkg/tcpip/network/ipv4"
	"gvisor.dev/gvisor/pkg/tcpip/stack"
)

// Benchmarks of the per-segment steps issue 12 made cheaper, each beside
// the way it was done before, so the saving reads off one run.

// benchRoute is a route over an in-memory link, as the CPU bench's.
func benchRoute(tb testing.TB) *stack.Route {
	la, _ := pipe.New("", "", 1500)
	s := stack.New(stack.Options{NetworkProtocols: []stack.NetworkProtocolFactory{ipv4.NewProtocol}})
	tb.Cleanup(s.Close)
	if err := s.CreateNIC(1, la); err != nil {
		tb.Fatal(err)
	}
	local := tcpip.AddressWithPrefix{Address: tcpip.AddrFrom4([4]byte{10, 9, 0, 1}), PrefixLen: 24}
	if err := s.AddProtocolAddress(1, tcpip.ProtocolAddress{Protocol: ipv4.ProtocolNumber, AddressWithPrefix: local}, stack.AddressProperties{}); err != nil {
		tb.Fatal(err)
	}
	s.SetRouteTable([]tcpip.Route{{Destination: local.Subnet(), NIC: 1}})
	r, err := s.FindRoute(1, local.Address, tcpip.AddrFrom4([4]byte{10, 9, 0, 2}), ipv4.ProtocolNumber, false)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(r.Release)
	return r
}

// The path's pseudo-header sum is the route's, for every length.
func TestPathChecksumIsTheRoutes(t *testing.T) {
	r := benchRoute(t)
	pa := pathOf(r)
	for _, n := range []uint16{20, 40, 1500, 9000, 65535} {
		if got, want := checksum.Combine(pa.addrSum, n), r.PseudoHeaderChecksum(ProtocolNumber, n); got != want {
			t.Fatalf("length %d: %#x, the route's %#x", n, got, want)
		}
	}
	if pa.reserve != int(r.MaxHeaderLength()) || pa.csum != r.RequiresTXTransportChecksum() || pa.ttl != r.DefaultTTL() || pa.mss != routeMSS(r) {
		t.Fatalf("%+v differs from its route", pa)
	}
}

// BenchmarkBuildPacket builds a full-sized data segment with its checksum:
// "path" as the sender does, "route" asking the route per segment as it
// did before.
func BenchmarkBuildPacket(b *testing.B) {
	r := benchRoute(b)
	payload := buffer.MakeWithData(make([]byte, 1448))
	defer payload.Release()
	var p protocol
	var opts [12]byte
	for _, perSegment := range []bool{false, true} {
		name := map[bool]string{false: "path", true: "route"}[perSegment]
		b.Run(name, func(b *testing.B) {
			pa := pathOf(r)
			b.SetBytes(payload.Size())
			for b.Loop() {
				if perSegment {
					pa = pathOf(r)
				}
				pkt := p.buildPacket(&pa, 1, 2, 3, 4, header.TCPFlagAck, 5, opts[:], payload.Clone())
				pkt.DecRef()
			}
		})
	}
}

// BenchmarkRearmTimer re-arms the retransmission timer later, as every ACK
// does, on the real clock: "lazy" as now, "moved" halting it first so each
// re-arm moves the clock's timer, as every re-arm did before.
func BenchmarkRearmTimer(b *testing.B) {
	for _, moved := range []bool{false, true} {
		b.Run(map[bool]string{false: "lazy", true: "moved"}[moved], func(b *testing.B) {
			p := &protocol{clock: tcpip.NewStdClock()}
			p.origin = p.clock.NowMonotonic()
			e := &endpoint{p: p}
			e.tRtx = timer{e: e, fn: func(*endpoint) {}}
			for b.Loop() {
				e.mu.Lock()
				if moved {
					e.stopTimers()
				}
				e.tRtx.armAt(e.now(), time.Second)
				e.mu.Unlock()
			}
			e.stopTimers()
		})
	}
}

// BenchmarkOurMSS reads the MSS we announce, as every window update and
// in-order segment does: "path" as now, "route" asking the route (network
// endpoint lookup, link MTU) as it did before.
func BenchmarkOurMSS(b *testing.B) {
	r := benchRoute(b)
	e := &endpoint{route: r}
	b.Run("path", func(b *testing.B) {
		for b.Loop() {
			if e.ourMSS() != 1460 {
				b.Fatal(e.ourMSS())
			}
		}
	})
	b.Run("route", func(b *testing.B) {
		for b.Loop() {
			if routeMSS(r) != 1460 {
				b.Fatal(routeMSS(r))
			}
		}
	})
}
