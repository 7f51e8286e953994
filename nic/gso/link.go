package gso

import (
	"fmt"
	"sync"
	"sync/atomic"

	"gvisor.dev/gvisor/pkg/buffer"
	"gvisor.dev/gvisor/pkg/tcpip"
	"gvisor.dev/gvisor/pkg/tcpip/link/pipe"
	"gvisor.dev/gvisor/pkg/tcpip/stack"

	"github.com/netramp/netramp/counters"
	"github.com/netramp/netramp/internal/csum"
	"github.com/netramp/netramp/nic"
)

// Link wraps a link endpoint that carries wire-size frames and offers the
// stack above it host GSO: a TCP may send packets of up to MaxSize bytes,
// which Link splits with Segment before its inner endpoint sees them, as a
// NIC's TSO engine would; or, with LinkOptions.GRO, passes on whole as the
// aggregate a receiver's GRO would rebuild from those frames. Received frames
// pass untouched. The two ends of NewPipe also report each write to the
// far end's stack as one delivery burst.
type Link struct {
	stack.LinkEndpoint
	maxSize uint32
	gro     bool
	noGSO   bool
	c       *Counters
	peer    *Link                      // NewPipe's far end, whose stack this end's writes reach inline
	disp    atomic.Pointer[dispatcher] // what this end's stack attached, for the peer's bursts
}

// dispatcher is a Link's attached dispatcher, boxed for atomic.Pointer.
type dispatcher struct{ stack.NetworkDispatcher }

// Counters are a Link's nic.gso.* counters.
type Counters struct {
	Packets, Frames, Whole, Drops *counters.Counter
}

// LinkOptions configure a Link.
type LinkOptions struct {
	// MaxSize is the largest packet offered, IP header included: 0 means
	// 64 KiB (a sender keeps within the 65535 an IP length field can say).
	MaxSize uint32
	// GRO passes each GSO packet on whole instead of splitting it: one
	// packet whose IP length and TCP checksum cover all its payload, as a
	// receiver's GRO (Linux) or a NIC's LRO hands its stack the frames of one
	// burst joined. The checksum is complete, not marked verified, so the
	// receiving stack checks it as it checks a frame's (a link that copies
	// packets, like gVisor's pipe, drops such marks anyway). For in-memory
	// links whose far end takes packets past the MTU; a wire of MTU-sized
	// frames (nic/wire) refuses them.
	GRO bool
	// NoGSO offers no GSO at all (SupportedGSO is GSONotSupported): the
	// stacks send MTU-sized packets, as over a link without offloads, while
	// NewPipe still reports each write of several frames as one burst.
	// MaxSize and GRO must then be left zero.
	NoGSO bool
	// Counters receives the nic.gso.* counters; nil keeps them private.
	Counters *counters.Registry
}

// ErrBadOptions reports LinkOptions NewLink cannot use.
var ErrBadOptions = fmt.Errorf("gso: bad link options")

// NewLink wraps inner.
func NewLink(inner stack.LinkEndpoint, o LinkOptions) (*Link, error) {
	if inner == nil {
		return nil, fmt.Errorf("%w: nil inner endpoint", ErrBadOptions)
	}
	if o.NoGSO && (o.MaxSize != 0 || o.GRO) {
		return nil, fmt.Errorf("%w: NoGSO with MaxSize = %d, GRO = %v: want both unset", ErrBadOptions, o.MaxSize, o.GRO)
	}
	if o.MaxSize == 0 {
		o.MaxSize = 1 << 16
	}
	if o.MaxSize > 1<<16 || o.MaxSize < inner.MTU() {
		return nil, fmt.Errorf("%w: MaxSize = %d, want 0 (65536) or within [MTU %d, 65536]", ErrBadOptions, o.MaxSize, inner.MTU())
	}
	r := o.Counters
	if r == nil {
		r = counters.NewRegistry()
	}
	c := &Counters{
		Packets: r.MustRegister("nic.gso.packets", "GSO packets a link split into wire-size frames"),
		Frames:  r.MustRegister("nic.gso.frames", "frames made by splitting GSO packets"),
		Whole:   r.MustRegister("nic.gso.whole", "GSO packets passed on whole, as one aggregate (GRO)"),
		Drops:   r.MustRegister("nic.gso.drops", "GSO packets dropped because their headers could not be split"),
	}
	return &Link{LinkEndpoint: inner, maxSize: o.MaxSize, gro: o.GRO, noGSO: o.NoGSO, c: c}, nil
}

// NewPipe returns the two ends of an in-memory link of the given MTU
// (gVisor's pipe), each a Link with options o. A write at one end is
// delivered inline, on the writer's goroutine, into the other end's stack,
// and NewPipe reports each write of two or more frames as one delivery
// burst there (nic.Bursts): the frames a GSO packet is cut into, and all
// the packets of one WritePackets call, arrive together, as frames that
// reach a NIC back to back are handed to its stack by one poll. gVisor's
// pipe alone reports no bursts.
func NewPipe(mtu uint32, o LinkOptions) (*Link, *Link, error) {
	pa, pb := pipe.New("", "", mtu)
	a, err := NewLink(pa, o)
	if err != nil {
		return nil, nil, err
	}
	b, err := NewLink(pb, o)
	if err != nil {
		return nil, nil, err
	}
	a.peer, b.peer = b, a
	return a, b, nil
}

// Attach implements stack.LinkEndpoint; it keeps the dispatcher for the
// bursts of the far end's writes (NewPipe).
func (l *Link) Attach(d stack.NetworkDispatcher) {
	if d == nil {
		l.disp.Store(nil)
	} else {
		l.disp.Store(&dispatcher{d})
	}
	l.LinkEndpoint.Attach(d)
}

// peerDispatcher is what the far end's stack attached, nil without a far
// end or before it attached.
func (l *Link) peerDispatcher() stack.NetworkDispatcher {
	if l.peer == nil {
		return nil
	}
	if d := l.peer.disp.Load(); d != nil {
		return d.NetworkDispatcher
	}
	return nil
}

// Counters returns the link's counters.
func (l *Link) Counters() *Counters { return l.c }

// SupportedGSO implements stack.GSOEndpoint.
func (l *Link) SupportedGSO() stack.SupportedGSO {
	if l.noGSO {
		return stack.GSONotSupported
	}
	return stack.HostGSOSupported
}

// GSOMaxSize implements stack.GSOEndpoint.
func (l *Link) GSOMaxSize() uint32 {
	if l.noGSO {
		return 0
	}
	return l.maxSize
}

// WritesBursts implements nic.BurstWriter: NewPipe's ends deliver each
// write of several frames as one burst and never refuse one.
func (l *Link) WritesBursts() bool { return l.peer != nil }

// TxCredit passes on the inner endpoint's credit, which counts frames.
func (l *Link) TxCredit() nic.Credit {
	if cl, ok := l.LinkEndpoint.(nic.CreditLink); ok {
		return cl.TxCredit()
	}
	return nil
}

// WritePackets implements stack.LinkWriter: each GSO packet is replaced by
// its frames (or, with GRO, by one aggregate), a malformed one is dropped and
// counted, and the inner endpoint
// writes the rest in order. It reports the packets of pkts written: all when
// the inner endpoint took every frame, else those whose first frame it took.
func (l *Link) WritePackets(pkts stack.PacketBufferList) (int, tcpip.Error) {
	w := scratches.Get().(*scratch)
	defer scratches.Put(w)
	for _, pkt := range pkts.AsSlice() {
		w.first = append(w.first, w.out.Len())
		kind := kindOf(pkt.GSOOptions.Type)
		if kind == 0 {
			pkt.IncRef() // out's own, dropped by its Reset
			w.out.PushBack(pkt)
			continue
		}
		mss := int(pkt.GSOOptions.MSS)
		if l.gro {
			mss = max(pkt.Data().Size(), 1) // one "segment": the whole payload
		}
		if err := w.split(kind, pkt, mss); err != nil {
			l.c.Drops.Inc()
			for _, f := range w.made {
				f.DecRef()
			}
		} else if l.gro {
			l.c.Whole.Inc()
			w.out.PushBack(w.made[0])
		} else {
			l.c.Packets.Inc()
			l.c.Frames.Add(uint64(len(w.made)))
			for _, f := range w.made {
				w.out.PushBack(f) // out takes the frame's reference
			}
		}
		clear(w.made)
		w.made = w.made[:0]
	}
	var far stack.NetworkDispatcher
	if w.out.Len() > 1 {
		far = l.peerDispatcher() // nil (no burst) but for NewPipe's ends
	}
	nic.BeginBurst(far)
	n, err := l.LinkEndpoint.WritePackets(w.out)
	nic.EndBurst(far)
	written := pkts.Len() // malformed packets were dropped, not refused
	if n < w.out.Len() {
		written = 0
		for _, at := range w.first {
			if at < n {
				written++
			}
		}
	}
	w.out.Reset()
	w.first = w.first[:0]
	return written, err
}

// scratch is what one WritePackets call builds, its arrays kept for the
// next call.
type scratch struct {
	out   stack.PacketBufferList // what the inner endpoint writes; holds a reference on each
	made  []*stack.PacketBuffer  // the frames of the packet being split
	first []int                  // per packet of the call, its first index in out
	hdr   []byte                 // the packet's headers
	fixed []byte                 // a frame's headers
}

var scratches = sync.Pool{New: func() any { return &scratch{} }}

// split cuts pkt into w.made, frames of at most mss payload bytes whose
// payloads share pkt's views: no byte is copied (a NIC's TSO engine reads the
// packet where it lies), but each frame's payload is summed for its checksum.
// With mss at least the payload it makes one frame, the aggregate GRO passes
// on: its IP length must still fit the field (parse refuses it otherwise).
func (w *scratch) split(kind Kind, pkt *stack.PacketBuffer, mss int) error {
	ll, nl, tl := pkt.LinkHeader().Slice(), pkt.NetworkHeader().Slice(), pkt.TransportHeader().Slice()
	w.hdr = append(append(append(w.hdr[:0], ll...), nl...), tl...)
	total := pkt.Data().Size()
	lo, err := parse(kind, mss, w.hdr, len(ll), len(w.hdr)+total)
	if err != nil {
		return err
	}
	if lo.hdrEnd != len(w.hdr) || lo.l4 != len(ll)+len(nl) {
		return fmt.Errorf("%w: headers of %d bytes, TCP's ending at %d", ErrMalformed, len(w.hdr), lo.hdrEnd)
	}
	rest := pkt.Data().ToBuffer()
	defer rest.Release()
	for off := 0; off < total || off == 0; off += mss {
		n := min(mss, total-off)
		payload := rest.Clone()
		payload.Truncate(int64(n))
		rest.TrimFront(int64(n))
		w.fixed = append(w.fixed[:0], w.hdr...)
		lo.fix(w.fixed, off, n, off+n >= total, bufferSum(&payload))
		f := stack.NewPacketBuffer(stack.PacketBufferOptions{ReserveHeaderBytes: len(w.hdr), Payload: payload})
		copy(f.TransportHeader().Push(len(tl)), w.fixed[lo.l4:])
		copy(f.NetworkHeader().Push(len(nl)), w.fixed[len(ll):lo.l4])
		copy(f.LinkHeader().Push(len(ll)), w.fixed)
		f.NetworkProtocolNumber = pkt.NetworkProtocolNumber
		f.TransportProtocolNumber = pkt.TransportProtocolNumber
		f.EgressRoute = pkt.EgressRoute
		f.PktType = pkt.PktType
		f.Owner = pkt.Owner
		f.Hash = pkt.Hash
		w.made = append(w.made, f)
		if total == 0 {
			break
		}
	}
	return nil
}

// bufferSum is the one's complement sum of b's bytes, read view by view
// where they lie.
func bufferSum(b *buffer.Buffer) uint16 {
	var s csum.Summer
	views := b.AsViewList()
	for v := views.Front(); v != nil; v = v.Next() {
		s.Add(v.AsSlice())
	}
	return s.Sum()
}

// kindOf is the Segment kind of a GSO type, 0 for a packet to pass whole.
func kindOf(t stack.GSOType) Kind {
	switch t {
	case stack.GSOTCPv4:
		return TCPv4
	case stack.GSOTCPv6:
		return TCPv6
	}
	return 0
}
