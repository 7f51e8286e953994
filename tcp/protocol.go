// Package tcp is netramp's TCP (RFC 9293), a gVisor transport protocol
// registered as protocol 6.
//
// Everything runs on inbound packets, timers on the stack's clock and user
// calls; the package starts no goroutines, so two stacks on an emulated wire
// run a transfer in virtual time. Segments are built under an endpoint's lock
// and written after it is released, because a pipe link or local delivery
// re-enters the stack from Route.WritePacket.
package tcp

import (
	"encoding/binary"
	"io"
	"sync"
	"sync/atomic"
	"time"

	"gvisor.dev/gvisor/pkg/buffer"
	"gvisor.dev/gvisor/pkg/tcpip"
	"gvisor.dev/gvisor/pkg/tcpip/header"
	"gvisor.dev/gvisor/pkg/tcpip/header/parse"
	"gvisor.dev/gvisor/pkg/tcpip/stack"
	"gvisor.dev/gvisor/pkg/waiter"

	"github.com/netramp/netramp/counters"
	"github.com/netramp/netramp/internal/csum"
	"github.com/netramp/netramp/tcp/internal/isn"
	"github.com/netramp/netramp/tcp/internal/syncookie"
)

// ProtocolNumber is TCP's IP protocol number.
const ProtocolNumber = header.TCPProtocolNumber

// Defaults for zero Options fields.
const (
	DefaultSendBufferMax    = 4 << 20
	DefaultReceiveBufferMax = 6 << 20
	DefaultDelayedAck       = 40 * time.Millisecond
	DefaultTimeWait         = 60 * time.Second
	initialReceiveBuffer    = 128 << 10
	initialSendBuffer       = 256 << 10
)

type protocol struct {
	s      *stack.Stack
	opts   Options
	clock  tcpip.Clock
	origin tcpip.MonotonicTime
	// start is set when clock is gVisor's standard clock: now reads Go's
	// monotonic clock directly (stdclock.go).
	start time.Time
	st    *stats
	isn   *isn.Generator
	jar   *syncookie.Jar
	tsKey [16]byte
	// challenges is the stack-wide challenge-ACK limit (RFC 5961 §7).
	challenges *stackLimit
	// bursts are the NICs' delivery bursts (burst.go), by NIC ID.
	bursts   atomic.Pointer[burstTable]
	burstsMu sync.Mutex
	// tq is the endpoints with a timer armed, behind one clock timer
	// (timerq.go).
	tq timerQueue
}

// fill replaces zero fields by their defaults; validate has run.
func (o *Options) fill() {
	if o.SendBufferMax == 0 {
		o.SendBufferMax = DefaultSendBufferMax
	}
	if o.ReceiveBufferMax == 0 {
		o.ReceiveBufferMax = DefaultReceiveBufferMax
	}
	if o.DelayedAck == 0 {
		o.DelayedAck = DefaultDelayedAck
	}
	if o.StretchAck == 0 {
		o.StretchAck = 2
	}
	if o.TimeWait == 0 {
		o.TimeWait = DefaultTimeWait
	}
	if o.InitialWindow == 0 {
		o.InitialWindow = 10
	}
	if o.Counters == nil {
		o.Counters = counters.NewRegistry()
	}
}

// NewProtocolFactory returns a factory that registers this TCP in a gVisor
// stack (stack.Options.TransportProtocols), or an error wrapping
// ErrBadOptions that names the first invalid field. Secrets for sequence
// numbers and SYN cookies come from the stack's SecureRNG, so a seeded stack
// repeats.
func NewProtocolFactory(o Options) (stack.TransportProtocolFactory, error) {
	if err := o.validate(); err != nil { // control:options-validated
		return nil, err
	}
	o.fill()
	return func(s *stack.Stack) stack.TransportProtocol {
		p := &protocol{s: s, opts: o, clock: s.Clock(), st: newStats(o.Counters)}
		p.origin = p.clock.NowMonotonic()
		if isStdClock(p.clock) {
			p.start = time.Now()
		}
		var k1 [16]byte
		var k2 [32]byte
		rng := s.SecureRNG()
		_, _ = io.ReadFull(rng.Reader, k1[:])
		_, _ = io.ReadFull(rng.Reader, k2[:])
		_, _ = io.ReadFull(rng.Reader, p.tsKey[:])
		p.isn = isn.New(k1)
		p.jar = syncookie.New(k2)
		p.challenges = newStackLimit(challengeAcksPerSecond, binary.LittleEndian.Uint64(p.tsKey[8:]))
		return p
	}, nil
}

// now is the time since the protocol was made, on the stack's clock.
func (p *protocol) now() time.Duration {
	if !p.start.IsZero() {
		return time.Since(p.start)
	}
	return p.clock.NowMonotonic().Sub(p.origin)
}

func (p *protocol) Number() tcpip.TransportProtocolNumber { return ProtocolNumber }

func (p *protocol) NewEndpoint(netProto tcpip.NetworkProtocolNumber, wq *waiter.Queue) (tcpip.Endpoint, tcpip.Error) {
	return p.newEndpoint(netProto, wq), nil
}

func (p *protocol) NewRawEndpoint(tcpip.NetworkProtocolNumber, *waiter.Queue) (tcpip.Endpoint, tcpip.Error) {
	return nil, &tcpip.ErrNotSupported{}
}

func (p *protocol) MinimumPacketSize() int { return header.TCPMinimumSize }

func (p *protocol) ParsePorts(b []byte) (src, dst uint16, err tcpip.Error) {
	if len(b) < 4 {
		return 0, 0, &tcpip.ErrMalformedHeader{}
	}
	h := header.TCP(b)
	return h.SourcePort(), h.DestinationPort(), nil
}

// HandleUnknownDestinationPacket answers a segment for no endpoint with a RST
// (RFC 9293 §3.10.7.1), unless it is itself a RST.
func (p *protocol) HandleUnknownDestinationPacket(id stack.TransportEndpointID, pkt *stack.PacketBuffer) stack.UnknownDestinationPacketDisposition {
	p.st.segsIn.Inc()
	s, ok := p.parse(pkt, 0)
	if !ok {
		return stack.UnknownDestinationPacketMalformed
	}
	p.st.dropNoListener.Inc()
	if s.flags&header.TCPFlagRst == 0 {
		p.replyRST(id, pkt, &s)
	}
	return stack.UnknownDestinationPacketHandled
}

// replyRST sends the RST of RFC 9293 §3.10.7.1 for segment s, with no
// endpoint state.
func (p *protocol) replyRST(id stack.TransportEndpointID, pkt *stack.PacketBuffer, s *segment) {
	if out, r := p.buildRST(id, pkt, s); out != nil {
		p.sendBuilt(r, out, p.st.rstSent)
	}
}

// buildRST builds that RST and takes a route for it; both are released by
// sendBuilt.
func (p *protocol) buildRST(id stack.TransportEndpointID, pkt *stack.PacketBuffer, s *segment) (*stack.PacketBuffer, *stack.Route) {
	net := pkt.Network()
	r, err := p.s.FindRoute(pkt.NICID, net.DestinationAddress(), net.SourceAddress(), pkt.NetworkProtocolNumber, false)
	if err != nil {
		return nil, nil
	}
	var seq, ack uint32
	flags := header.TCPFlagRst
	if s.flags&header.TCPFlagAck != 0 {
		seq = s.ack
	} else {
		flags |= header.TCPFlagAck
		ack = s.seq + uint32(s.logicalLen())
	}
	pa := pathOf(r)
	return p.buildPacket(&pa, id.LocalPort, id.RemotePort, seq, ack, flags, 0, nil, buffer.Buffer{}), r
}

// sendBuilt writes a stateless segment and releases it and its route; ok,
// if any, counts it once written.
func (p *protocol) sendBuilt(r *stack.Route, out *stack.PacketBuffer, ok *counters.Counter) {
	pa := pathOf(r)
	if p.write(&pa, out, true) == nil && ok != nil {
		ok.Inc()
	}
	out.DecRef()
	r.Release()
}

// path is what building and writing a segment reads from its route, read
// once: a route's addresses, NIC and header room do not change, and asking
// the route for them per segment (the pseudo-header's addresses summed
// again, the network endpoint looked up for its header room and TTL) cost
// a twentieth of this package's CPU in a bulk transfer (issue 12).
type path struct {
	r       *stack.Route
	addrSum uint16 // the pseudo-header (RFC 9293 §3.1) without its length
	reserve int    // header bytes the layers below prepend
	csum    bool   // the link does not fill in the TCP checksum
	ttl     uint8
	// mss is the MSS we announce on the route (routeMSS), which every
	// window update and in-order segment reads: Route.MTU looks up the
	// network endpoint and asks the link through three interfaces each
	// time. A link whose MTU changes later does not change what our SYN
	// announced, the bound on the peer's segments these checks are about.
	mss int
	// gso is the route's host GSO (gso.go), Type GSONone without it;
	// gsoBytes the most payload one GSO packet may carry.
	gso      stack.GSO
	gsoBytes int
}

func pathOf(r *stack.Route) path {
	pa := path{
		r:       r,
		addrSum: pseudoSum(r.LocalAddress(), r.RemoteAddress()),
		reserve: int(r.MaxHeaderLength()),
		csum:    r.RequiresTXTransportChecksum(),
		ttl:     r.DefaultTTL(),
		mss:     routeMSS(r),
	}
	pa.gso, pa.gsoBytes = hostGSO(r)
	return pa
}

// buildPacket makes one segment with its checksum. The packet takes
// ownership of payload (typically views sharing the send queue's chunks).
func (p *protocol) buildPacket(pa *path, sport, dport uint16, seq, ack uint32, flags header.TCPFlags, wnd uint16, opts []byte, payload buffer.Buffer) *stack.PacketBuffer {
	return p.buildGSO(pa, sport, dport, seq, ack, flags, wnd, opts, payload, stack.GSO{})
}

// buildGSO is buildPacket for a packet the link may segment (gso.Type set):
// its checksum field then holds only the pseudo-header sum over the whole
// packet's length, which the segmenting device completes per segment
// (stack.GSO's NeedsCsum contract).
func (p *protocol) buildGSO(pa *path, sport, dport uint16, seq, ack uint32, flags header.TCPFlags, wnd uint16, opts []byte, payload buffer.Buffer, gso stack.GSO) *stack.PacketBuffer {
	hlen := header.TCPMinimumSize + len(opts)
	pkt := stack.NewPacketBuffer(stack.PacketBufferOptions{
		ReserveHeaderBytes: hlen + pa.reserve,
		Payload:            payload,
	})
	h := header.TCP(pkt.TransportHeader().Push(hlen))
	pkt.TransportProtocolNumber = ProtocolNumber
	h.Encode(&header.TCPFields{
		SrcPort: sport, DstPort: dport, SeqNum: seq, AckNum: ack,
		DataOffset: uint8(hlen), Flags: flags, WindowSize: wnd,
	})
	copy(h[header.TCPMinimumSize:], opts)
	if gso.Type != stack.GSONone {
		pkt.GSOOptions = gso
		h.SetChecksum(csum.Combine(pa.addrSum, uint16(pkt.Size())))
	} else if pa.csum {
		data, _ := payloadInPlace(pkt, pkt.Data().Size()) // an empty span without data
		xsum := csum.Combine(pa.addrSum, uint16(pkt.Size()))
		xsum = csum.Combine(xsum, data.sum())
		h.SetChecksum(^h.CalculateChecksum(xsum))
	}
	return pkt
}

// write hands pkt to the network layer, with DF set when df (pmtu.go); the
// caller keeps its reference.
func (p *protocol) write(pa *path, pkt *stack.PacketBuffer, df bool) tcpip.Error {
	if pa.r == nil {
		return &tcpip.ErrHostUnreachable{}
	}
	segs := uint64(1)
	if g := pkt.GSOOptions; g.Type != stack.GSONone {
		segs = uint64((pkt.Data().Size() + int(g.MSS) - 1) / int(g.MSS))
	}
	// control:tcp-no-df
	err := pa.r.WritePacket(stack.NetworkHeaderParams{Protocol: ProtocolNumber, TTL: pa.ttl, DF: df}, pkt)
	if err == nil {
		p.st.segsOut.Add(segs)
	}
	return err
}

// tsAt is a connection's timestamp clock with no endpoint yet (a cookie's
// SYN-ACK and ACK); the endpoint's own tsAt gives the same values.
func (p *protocol) tsAt(id stack.TransportEndpointID, now time.Duration) uint32 {
	return uint32(now/time.Millisecond) + p.tsOffsetFor(tupleOf(id))
}

// tsOffsetFor is the per-connection timestamp offset of RFC 7323 §5.4, a keyed
// hash of the addresses so TSval does not reveal the host's clock.
func (p *protocol) tsOffsetFor(t isn.Tuple) uint32 {
	var b [4]byte
	h := p.isn.ISN(t, 0)
	binary.LittleEndian.PutUint32(b[:], h)
	return binary.BigEndian.Uint32(b[:]) ^ binary.LittleEndian.Uint32(p.tsKey[:4])
}

func (p *protocol) SetOption(tcpip.SettableTransportProtocolOption) tcpip.Error {
	return &tcpip.ErrUnknownProtocolOption{}
}

func (p *protocol) Option(tcpip.GettableTransportProtocolOption) tcpip.Error {
	return &tcpip.ErrUnknownProtocolOption{}
}

func (p *protocol) Close()   {}
func (p *protocol) Wait()    {}
func (p *protocol) Pause()   {}
func (p *protocol) Resume()  {}
func (p *protocol) Restore() {}

// Parse finds the TCP header, options included, in an inbound packet.
func (p *protocol) Parse(pkt *stack.PacketBuffer) bool { return parse.TCP(pkt) }

// SendBufferSize is read by gVisor's stack (Stack.TCPSendBufferLimits casts
// protocol 6 to this).
func (p *protocol) SendBufferSize() tcpip.TCPSendBufferSizeRangeOption {
	return tcpip.TCPSendBufferSizeRangeOption{Min: 4096, Default: initialSendBuffer, Max: p.opts.SendBufferMax}
}
