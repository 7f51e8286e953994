//go:build linux

package tap

import (
	"errors"
	"fmt"
	"net"
	"os"
	"sync"
	"time"

	"github.com/netramp/netramp/counters"
	"github.com/netramp/netramp/nic"
	"golang.org/x/sys/unix"
	"gvisor.dev/gvisor/pkg/tcpip"
	"gvisor.dev/gvisor/pkg/tcpip/header"
	"gvisor.dev/gvisor/pkg/tcpip/stack"
)

// Options configure an Endpoint.
type Options struct {
	// MTU is the IP MTU; 0 means 1500.
	MTU uint32
	// MAC is the stack's own Ethernet address (not the kernel side's).
	// Required for TAP devices, ignored for TUN.
	MAC net.HardwareAddr
	// Counters receives nic.tap.* counters; nil keeps them private.
	Counters *counters.Registry
	// GSO offers the stack host GSO: a TCP packet of up to 64 KiB goes to
	// the kernel whole, behind a virtio-net header that asks the kernel
	// to segment it (and to finish its checksum). Needs a device opened
	// with VnetHdr.
	GSO bool
	// GRO hands each GSO frame the kernel writes (to a device with Offload)
	// to the stack whole, as one aggregate, instead of splitting it into
	// MSS-sized segments: what a receiver's GRO does, so the stack pays its
	// per-packet cost once per burst. Needs a device opened with VnetHdr.
	GRO bool
}

// gsoMaxSize is the largest packet a TAP endpoint with Options.GSO accepts:
// what an IP length field can say, as the kernel's own GSO limit.
const gsoMaxSize = 1 << 16

// Counters are the endpoint's nic.tap.* counters.
type Counters struct {
	RxFrames, RxBytes, RxDrops, RxGSO *counters.Counter
	RxWhole                           *counters.Counter
	TxFrames, TxBytes, TxDrops        *counters.Counter
	TxRetries, TxFull, TxErrors       *counters.Counter
	TxGSO                             *counters.Counter
}

func newCounters(r *counters.Registry) *Counters {
	if r == nil {
		r = counters.NewRegistry()
	}
	return &Counters{
		RxFrames:  r.MustRegister("nic.tap.rx.frames", "frames delivered from a TAP device to the stack"),
		RxBytes:   r.MustRegister("nic.tap.rx.bytes", "bytes delivered from a TAP device to the stack, link header included"),
		RxDrops:   r.MustRegister("nic.tap.rx.drops", "frames read from a TAP device and dropped: malformed, unknown type or no stack attached"),
		RxGSO:     r.MustRegister("nic.tap.rx.gso", "GSO frames read from a TAP device and split into wire-size frames"),
		RxWhole:   r.MustRegister("nic.tap.rx.gso.whole", "GSO frames read from a TAP device and delivered whole (Options.GRO)"),
		TxFrames:  r.MustRegister("nic.tap.tx.frames", "frames written to a TAP device"),
		TxBytes:   r.MustRegister("nic.tap.tx.bytes", "bytes written to a TAP device, link header included"),
		TxDrops:   r.MustRegister("nic.tap.tx.drops", "frames the stack sent that a TAP device refused"),
		TxRetries: r.MustRegister("nic.tap.tx.retries", "writes to a TAP device retried after EAGAIN within the batch's budget"),
		TxFull:    r.MustRegister("nic.tap.tx.drops.full", "frames dropped because a TAP device stayed full (EAGAIN) past the retry budget"),
		TxErrors:  r.MustRegister("nic.tap.tx.errors", "frames dropped because a TAP device write failed with an error other than EAGAIN"),
		TxGSO:     r.MustRegister("nic.tap.tx.gso", "GSO packets written to a TAP device whole, for the kernel to segment"),
	}
}

// Endpoint is a stack.LinkEndpoint over a TAP (Ethernet) or TUN (IP) device.
// A reader goroutine, started on the first Attach, delivers frames to the
// stack; Close stops it.
type Endpoint struct {
	dev  *Device
	tun  bool
	gso  bool // Options.GSO
	gro  bool // Options.GRO
	c    *Counters
	mu   sync.RWMutex
	mtu  uint32
	mac  tcpip.LinkAddress
	disp stack.NetworkDispatcher

	done     chan struct{}
	closeMu  sync.Mutex // guards started, closed, onClose
	started  bool
	closed   bool
	onClose  func()
	readErr  error
	hdrSpace [VnetHdrLen]byte // an all-zero virtio-net header for writes
	tx       txPath
	// scratch holds *txScratch, one for each WritePackets call under way.
	// Calls may run at once and no lock is held through a call's EAGAIN
	// retries (WritePackets), so each takes its own rather than share one.
	scratch sync.Pool
}

var _ stack.LinkEndpoint = (*Endpoint)(nil)

// New wraps dev, which the endpoint owns from now on.
func New(dev *Device, o Options) (*Endpoint, error) {
	if dev == nil {
		return nil, fmt.Errorf("%w: nil device", ErrBadConfig)
	}
	mtu := o.MTU
	if mtu == 0 {
		mtu = 1500
	}
	// RFC 791's minimum datagram, and the largest a read buffer holds.
	if mtu < 68 || mtu > 65535 {
		return nil, fmt.Errorf("%w: MTU = %d, want 0 (1500) or within [68, 65535]", ErrBadConfig, o.MTU)
	}
	if o.GSO && !dev.cfg.VnetHdr {
		return nil, fmt.Errorf("%w: GSO = true needs a device opened with VnetHdr", ErrBadConfig)
	}
	if o.GRO && !dev.cfg.VnetHdr {
		return nil, fmt.Errorf("%w: GRO = true needs a device opened with VnetHdr", ErrBadConfig)
	}
	e := &Endpoint{dev: dev, tun: dev.cfg.TUN, gso: o.GSO, gro: o.GRO, c: newCounters(o.Counters), mtu: mtu, done: make(chan struct{})}
	e.tx = txPath{writev: dev.tryWritev, sleep: time.Sleep, waitWritable: dev.waitWritable}
	e.scratch.New = func() any { return new(txScratch) }
	if !e.tun {
		if len(o.MAC) != 6 || o.MAC[0]&1 != 0 {
			return nil, fmt.Errorf("%w: MAC = %q, want a 6-byte unicast address for a TAP endpoint", ErrBadConfig, o.MAC)
		}
		e.mac = tcpip.LinkAddress(o.MAC)
	}
	return e, nil
}

// Counters returns the endpoint's counters.
func (e *Endpoint) Counters() *Counters { return e.c }

// Device returns the underlying device.
func (e *Endpoint) Device() *Device { return e.dev }

// MTU implements stack.LinkEndpoint.
func (e *Endpoint) MTU() uint32 { e.mu.RLock(); defer e.mu.RUnlock(); return e.mtu }

// SetMTU implements stack.LinkEndpoint.
func (e *Endpoint) SetMTU(mtu uint32) { e.mu.Lock(); e.mtu = mtu; e.mu.Unlock() }

// MaxHeaderLength implements stack.LinkEndpoint.
func (e *Endpoint) MaxHeaderLength() uint16 {
	if e.tun {
		return 0
	}
	return header.EthernetMinimumSize
}

// LinkAddress implements stack.LinkEndpoint.
func (e *Endpoint) LinkAddress() tcpip.LinkAddress { e.mu.RLock(); defer e.mu.RUnlock(); return e.mac }

// SetLinkAddress implements stack.LinkEndpoint.
func (e *Endpoint) SetLinkAddress(a tcpip.LinkAddress) { e.mu.Lock(); e.mac = a; e.mu.Unlock() }

// Capabilities implements stack.LinkEndpoint: a TAP needs neighbour
// resolution (ARP); a TUN does not.
func (e *Endpoint) Capabilities() stack.LinkEndpointCapabilities {
	if e.tun {
		return 0
	}
	return stack.CapabilityResolutionRequired
}

// SupportedGSO implements stack.GSOEndpoint: host GSO with Options.GSO.
func (e *Endpoint) SupportedGSO() stack.SupportedGSO {
	if e.gso {
		return stack.HostGSOSupported
	}
	return stack.GSONotSupported
}

// GSOMaxSize implements stack.GSOEndpoint.
func (e *Endpoint) GSOMaxSize() uint32 {
	if e.gso {
		return gsoMaxSize
	}
	return 0
}

// ARPHardwareType implements stack.LinkEndpoint.
func (e *Endpoint) ARPHardwareType() header.ARPHardwareType {
	if e.tun {
		return header.ARPHardwareNone
	}
	return header.ARPHardwareEther
}

// AddHeader implements stack.LinkEndpoint.
func (e *Endpoint) AddHeader(pkt *stack.PacketBuffer) {
	if e.tun {
		return
	}
	eth := header.Ethernet(pkt.LinkHeader().Push(header.EthernetMinimumSize))
	eth.Encode(&header.EthernetFields{
		SrcAddr: pkt.EgressRoute.LocalLinkAddress,
		DstAddr: pkt.EgressRoute.RemoteLinkAddress,
		Type:    pkt.NetworkProtocolNumber,
	})
}

// ParseHeader implements stack.LinkEndpoint.
func (e *Endpoint) ParseHeader(pkt *stack.PacketBuffer) bool {
	if e.tun {
		return true
	}
	_, ok := pkt.LinkHeader().Consume(header.EthernetMinimumSize)
	return ok
}

// Attach implements stack.LinkEndpoint; the first non-nil dispatcher starts
// the reader. A nil dispatcher means the NIC is being removed: the device is
// closed and the reader stopped, so the stack's Wait returns.
func (e *Endpoint) Attach(d stack.NetworkDispatcher) {
	e.mu.Lock()
	e.disp = d
	e.mu.Unlock()
	if d == nil {
		e.closeMu.Lock()
		started := e.started
		e.closeMu.Unlock()
		// control:tap-reader-survives-detach
		if started {
			e.dev.Close()
		}
		return
	}
	e.closeMu.Lock()
	if !e.started && !e.closed {
		e.started = true
		go e.readLoop()
	}
	e.closeMu.Unlock()
}

// IsAttached implements stack.LinkEndpoint.
func (e *Endpoint) IsAttached() bool { e.mu.RLock(); defer e.mu.RUnlock(); return e.disp != nil }

// Wait implements stack.LinkEndpoint: it returns once the reader has stopped
// (after Close), or at once if it never started.
func (e *Endpoint) Wait() {
	e.closeMu.Lock()
	started := e.started
	e.closeMu.Unlock()
	if started {
		<-e.done
	}
}

// SetOnCloseAction implements stack.LinkEndpoint.
func (e *Endpoint) SetOnCloseAction(f func()) { e.closeMu.Lock(); e.onClose = f; e.closeMu.Unlock() }

// Close implements stack.LinkEndpoint: it closes the device, which stops the
// reader, and waits for it.
func (e *Endpoint) Close() {
	e.closeMu.Lock()
	if e.closed {
		e.closeMu.Unlock()
		return
	}
	e.closed = true
	f := e.onClose
	e.closeMu.Unlock()
	if f != nil {
		f()
	}
	e.dev.Close()
	e.Wait()
}

// Err returns the error that stopped the reader, if it stopped on its own.
func (e *Endpoint) Err() error {
	e.closeMu.Lock()
	started := e.started
	e.closeMu.Unlock()
	if !started {
		return nil
	}
	select {
	case <-e.done:
		return e.readErr
	default:
		return nil
	}
}

// WritePackets implements stack.LinkWriter. A write the device refuses for
// want of room (EAGAIN) is retried in txRetryStep sleeps within
// TxRetryBudget shared by the whole batch, then dropped and counted, and the
// endpoint's credit reads zero until the device is writable again; any other
// error drops the frame and is counted. No frame waits without bound, so no
// small frame queues behind a stalled device (seed 003). With Options.GSO a
// GSO packet goes whole, behind a virtio-net header that asks the kernel to
// segment it (gsoVnetHdr). A frame is gathered where its bytes lie, in
// scratch kept from call to call, so a steady stream of writes allocates
// nothing.
func (e *Endpoint) WritePackets(pkts stack.PacketBufferList) (int, tcpip.Error) {
	s := e.scratch.Get().(*txScratch)
	defer e.putScratch(s)
	n, dropped := 0, 0
	var spent time.Duration
	for _, pkt := range pkts.AsSlice() {
		var hdr []byte
		gso := false
		if e.dev.cfg.VnetHdr {
			h, ok := gsoVnetHdr(pkt)
			if gso = ok && e.gso; gso {
				h.Encode(s.hdr[:])
				hdr = s.hdr[:]
			} else {
				hdr = e.hdrSpace[:]
			}
		}
		// control:tap-tx-allocates-per-frame
		bufs := s.gather(hdr, pkt)
		w, err := e.writeOne(bufs, &spent)
		if err != nil {
			e.c.TxDrops.Inc()
			if errors.Is(err, os.ErrClosed) {
				return n, &tcpip.ErrClosedForSend{}
			}
			dropped++
			continue
		}
		n++
		if gso {
			e.c.TxGSO.Inc()
		}
		e.c.TxFrames.Inc()
		e.c.TxBytes.Add(uint64(w - e.dev.HeaderLen()))
	}
	if dropped > 0 && n == 0 {
		return 0, &tcpip.ErrNoBufferSpace{}
	}
	return n, nil
}

// txScratch is what one WritePackets call gathers its frames in: the
// virtio-net header of a GSO packet and the list of a frame's pieces, their
// arrays kept for the next call.
type txScratch struct {
	hdr  [VnetHdrLen]byte
	bufs [][]byte
}

// gather lists hdr (none if nil), then pkt's bytes from its first header on,
// view by view where they lie: what pkt.AsSlices gives, without a new list.
func (s *txScratch) gather(hdr []byte, pkt *stack.PacketBuffer) [][]byte {
	s.bufs = s.bufs[:0]
	if hdr != nil {
		s.bufs = append(s.bufs, hdr)
	}
	views, off := pkt.AsViewList()
	for v := views.Front(); v != nil; v = v.Next() {
		b := v.AsSlice()
		if off >= len(b) { // reserved header room not used, or an empty view
			off -= len(b)
			continue
		}
		s.bufs = append(s.bufs, b[off:])
		off = 0
	}
	return s.bufs
}

// putScratch returns s to the pool, first dropping its references to the
// call's packets, which their owners may free and reuse once it returns.
func (e *Endpoint) putScratch(s *txScratch) {
	clear(s.bufs[:cap(s.bufs)])
	s.bufs = s.bufs[:0]
	e.scratch.Put(s)
}

// gsoVnetHdr is the virtio-net header that asks the kernel to segment pkt
// at its GSO options' MSS and to finish its partial TCP checksum (virtio 1.1
// §5.1.6.2), or false for a packet without GSO options.
func gsoVnetHdr(pkt *stack.PacketBuffer) (VnetHdr, bool) {
	g := pkt.GSOOptions
	var t uint8
	switch g.Type {
	case stack.GSOTCPv4:
		t = VnetGSOTCPv4
	case stack.GSOTCPv6:
		t = VnetGSOTCPv6
	default:
		return VnetHdr{}, false
	}
	l4 := len(pkt.LinkHeader().Slice()) + len(pkt.NetworkHeader().Slice())
	return VnetHdr{
		Flags:      VnetFlagNeedsCsum,
		GSOType:    t,
		HdrLen:     uint16(l4 + len(pkt.TransportHeader().Slice())),
		GSOSize:    g.MSS,
		CsumStart:  uint16(l4),
		CsumOffset: g.CsumOffset,
	}, true
}

// writeOne makes one attempt at a frame and, on EAGAIN, retries while the
// batch's budget *spent lasts. The budget is charged per step slept rather
// than by the clock, so a test's injected sleep makes it exact.
func (e *Endpoint) writeOne(bufs [][]byte, spent *time.Duration) (int, error) {
	for {
		w, err := e.tx.writev(bufs)
		if err == nil {
			e.tx.full.Store(false)
			return w, nil
		}
		if !errors.Is(err, unix.EAGAIN) {
			if !errors.Is(err, os.ErrClosed) {
				e.c.TxErrors.Inc()
			}
			return 0, err
		}
		// control:tap-no-retry-on-eagain
		if *spent >= TxRetryBudget {
			e.c.TxFull.Inc()
			e.tx.full.Store(true)
			return 0, err
		}
		step := min(txRetryStep, TxRetryBudget-*spent)
		e.c.TxRetries.Inc()
		e.tx.sleep(step)
		*spent += step
	}
}

// rxBurstBudget is the most frames one delivery burst holds: NAPI's
// default poll weight, so a device that never runs dry still ends a burst
// every 64 frames.
const rxBurstBudget = 64

// readLoop reads frames until the device is closed. The frames it reads
// without waiting, up to rxBurstBudget, are one delivery burst
// (nic.Bursts): the burst ends when the device has nothing more ready,
// before the loop waits, as a kernel's NAPI poll ends when the ring is
// empty or its budget spent.
func (e *Endpoint) readLoop() {
	defer close(e.done)
	hl := e.dev.HeaderLen()
	buf := make([]byte, hl+65536+header.EthernetMinimumSize)
	l3 := header.EthernetMinimumSize
	if e.tun {
		l3 = 0
	}
	var burst stack.NetworkDispatcher // the open burst's dispatcher
	frames := 0                       // frames read in the open burst; 0 for none
	endBurst := func() {
		if frames > 0 {
			nic.EndBurst(burst)
		}
		burst, frames = nil, 0
	}
	rd, err := e.dev.newReader(buf, endBurst)
	if err != nil {
		e.readErr = err
		return
	}
	for {
		n, err := rd.read()
		if err != nil {
			endBurst()
			if !errors.Is(err, os.ErrClosed) {
				e.readErr = err
			}
			return
		}
		if frames == rxBurstBudget {
			endBurst()
		}
		if frames == 0 {
			burst = e.dispatcher()
			nic.BeginBurst(burst)
		}
		frames++
		frame := buf[hl:n]
		if hl == 0 {
			e.deliver(frame)
			continue
		}
		h, err := DecodeVnetHdr(buf[:n])
		if err != nil {
			e.c.RxDrops.Inc()
			continue
		}
		// control:tap-gro-split
		if h.GSOType != VnetGSONone && e.gro {
			// Whole, as a receiver's GRO would join the segments.
			e.c.RxWhole.Inc()
			if err := Whole(h, frame, l3, e.deliver); err != nil {
				e.c.RxDrops.Inc()
			}
			continue
		}
		// control:tap-gso-delivered-whole
		if h.GSOType != VnetGSONone {
			// Split like a NIC's TSO would, so the stack sees MSS-sized
			// segments and ACKs each pair as it would on a wire.
			e.c.RxGSO.Inc()
			if err := Segment(h, frame, l3, e.deliver); err != nil {
				e.c.RxDrops.Inc()
			}
			continue
		}
		if err := FinishChecksum(h, frame); err != nil {
			e.c.RxDrops.Inc()
			continue
		}
		e.deliver(frame)
	}
}

// dispatcher is what the stack attached, nil when detached.
func (e *Endpoint) dispatcher() stack.NetworkDispatcher {
	e.mu.RLock()
	defer e.mu.RUnlock()
	return e.disp
}

// deliver hands one frame (link header included for TAP) to the stack; it
// copies the bytes.
func (e *Endpoint) deliver(frame []byte) {
	d := e.dispatcher()
	var proto tcpip.NetworkProtocolNumber
	if e.tun {
		if len(frame) == 0 {
			e.c.RxDrops.Inc()
			return
		}
		switch header.IPVersion(frame) {
		case header.IPv4Version:
			proto = header.IPv4ProtocolNumber
		case header.IPv6Version:
			proto = header.IPv6ProtocolNumber
		}
	} else if len(frame) >= header.EthernetMinimumSize {
		proto = header.Ethernet(frame).Type()
	}
	if d == nil || proto == 0 {
		e.c.RxDrops.Inc()
		return
	}
	l3 := header.EthernetMinimumSize
	if e.tun {
		l3 = 0
	}
	pkt := stack.NewPacketBuffer(stack.PacketBufferOptions{Payload: rxBuffer(frame, l3)})
	defer pkt.DecRef()
	if !e.ParseHeader(pkt) {
		e.c.RxDrops.Inc()
		return
	}
	if !e.tun {
		pkt.PktType = nic.PacketType(header.Ethernet(frame).DestinationAddress(), e.LinkAddress())
	}
	e.c.RxFrames.Inc()
	e.c.RxBytes.Add(uint64(len(frame)))
	d.DeliverNetworkPacket(proto, pkt)
}
