package wire

import (
	"math"
	"sync"

	"gvisor.dev/gvisor/pkg/tcpip"
	"gvisor.dev/gvisor/pkg/tcpip/header"
	"gvisor.dev/gvisor/pkg/tcpip/stack"

	"github.com/netramp/netramp/nic"
)

// Endpoint is one end of a Wire: a stack.LinkEndpoint carrying IP packets
// with no link header, and a nic.CreditLink exposing its TX ring.
type Endpoint struct {
	w    *Wire
	side Side
	out  *direction

	mu       sync.RWMutex
	disp     stack.NetworkDispatcher
	sink     FrameSink
	mtu      uint32
	linkAddr tcpip.LinkAddress
	closed   bool
	onClose  func()

	rx *rxQueue // real time: the stack's input queue; nil in virtual time
}

var (
	_ stack.LinkEndpoint = (*Endpoint)(nil)
	_ nic.CreditLink     = (*Endpoint)(nil)
)

// Side reports which end of the wire this is.
func (e *Endpoint) Side() Side { return e.side }

// FrameSink takes frames a wire delivers as bare IP packets, without a
// packet buffer: a bridge to a TUN device writes them on. The bytes are
// valid only during the call.
type FrameSink interface {
	DeliverFrame(frame []byte)
}

// AttachSink makes s, instead of a stack's dispatcher, receive the frames
// delivered to this endpoint; nil detaches it.
func (e *Endpoint) AttachSink(s FrameSink) {
	e.mu.Lock()
	e.sink = s
	e.mu.Unlock()
}

// receivers returns what frames are delivered to: a sink, else a
// dispatcher; both nil if neither is attached or the endpoint is closed.
func (e *Endpoint) receivers() (stack.NetworkDispatcher, FrameSink) {
	e.mu.RLock()
	defer e.mu.RUnlock()
	if e.closed {
		return nil, nil
	}
	return e.disp, e.sink
}

// WriteFrame sends one bare IP packet (a frame read from a TUN device) into
// the wire, copying it, exactly as WritePackets sends a stack's packets. A
// frame over the MTU is refused with ErrMessageTooLong, a full TX ring with
// ErrNoBufferSpace; both are counted.
func (e *Endpoint) WriteFrame(b []byte) tcpip.Error {
	e.mu.RLock()
	closed, mtu := e.closed, e.mtu
	e.mu.RUnlock()
	if closed {
		return &tcpip.ErrClosedForSend{}
	}
	w := e.w
	if w.rt != nil && len(b) <= int(mtu) {
		return e.writeFrameRT(b)
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(b) > int(mtu) {
		e.out.oversizeLocked()
		return &tcpip.ErrMessageTooLong{}
	}
	frame := w.getBufLocked(len(b))
	copy(frame, b)
	if !e.out.writeLocked(frame, w.now()) {
		w.putBufLocked(frame)
		return &tcpip.ErrNoBufferSpace{}
	}
	return nil
}

// WritePackets copies each packet's bytes (the stack reuses its buffers) and
// hands them to the wire, which delivers them later from a clock callback.
// When the TX ring is full it stops and returns the number taken with
// ErrNoBufferSpace, as a full qdisc does; every refused packet is counted.
func (e *Endpoint) WritePackets(pkts stack.PacketBufferList) (int, tcpip.Error) {
	e.mu.RLock()
	closed, mtu := e.closed, e.mtu
	e.mu.RUnlock()
	if closed {
		return 0, &tcpip.ErrClosedForSend{}
	}
	w := e.w
	if w.rt != nil {
		return e.writePacketsRT(pkts, mtu)
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	now := w.now()
	n := 0
	for _, pkt := range pkts.AsSlice() {
		if pkt.Size() > int(mtu) {
			e.out.oversizeLocked()
			if n == 0 {
				return 0, &tcpip.ErrMessageTooLong{}
			}
			return n, nil
		}
		frame := w.flattenLocked(pkt)
		if !e.out.writeLocked(frame, now) {
			w.putBufLocked(frame)
			// Count the rest as refused too: the caller sees one error.
			e.out.refuseAllLocked(now, pkts.AsSlice()[n+1:])
			return n, &tcpip.ErrNoBufferSpace{}
		}
		n++
	}
	return n, nil
}

// flattenLocked copies a packet into a (recycled) frame buffer.
func (w *Wire) flattenLocked(pkt *stack.PacketBuffer) []byte {
	return flatten(w.getBufLocked(pkt.Size())[:0], pkt)
}

// flatten appends a packet's bytes to b, a frame buffer's b[:0].
func flatten(b []byte, pkt *stack.PacketBuffer) []byte {
	for _, s := range pkt.AsSlices() {
		b = append(b, s...)
	}
	return b
}

// TxCredit returns the credit of this endpoint's TX ring.
func (e *Endpoint) TxCredit() nic.Credit { return credit{e.out} }

type credit struct{ d *direction }

// TxFree returns the free ring slots; an unlimited ring reports MaxInt32.
func (c credit) TxFree() int {
	d := c.d
	if d.ringSize == 0 {
		return math.MaxInt32
	}
	if d.in != nil {
		return d.ringSize - int(d.in.slots.Load())
	}
	d.w.mu.Lock()
	defer d.w.mu.Unlock()
	return d.ringSize - d.ringUsed
}

// NotifyTxFree registers f to run once, from a clock callback (in real
// time, from the wire's credit goroutine: ingress.go), when a slot next
// frees. With nothing in the ring no slot will free, so f runs at the
// current instant instead.
func (c credit) NotifyTxFree(f func()) (cancel func()) {
	d := c.d
	if d.in != nil {
		return d.notifyTxFreeRT(f)
	}
	w := d.w
	wt := &waiter{f: f}
	w.mu.Lock()
	d.waiters = append(d.waiters, wt)
	if d.ringUsed == 0 {
		now := w.now()
		w.pushLocked(&event{at: now, kind: evNotify, dir: d}, now)
	}
	w.mu.Unlock()
	return func() { wt.done.Store(true) }
}

// MTU returns the endpoint's MTU.
func (e *Endpoint) MTU() uint32 {
	e.mu.RLock()
	defer e.mu.RUnlock()
	return e.mtu
}

// SetMTU sets the endpoint's MTU; larger packets are refused and counted.
func (e *Endpoint) SetMTU(mtu uint32) {
	e.mu.Lock()
	e.mtu = mtu
	e.mu.Unlock()
}

// MaxHeaderLength is zero: the wire carries bare IP packets.
func (*Endpoint) MaxHeaderLength() uint16 { return 0 }

// LinkAddress returns the address set with SetLinkAddress (empty by default:
// there is no link layer to address).
func (e *Endpoint) LinkAddress() tcpip.LinkAddress {
	e.mu.RLock()
	defer e.mu.RUnlock()
	return e.linkAddr
}

// SetLinkAddress records addr; the wire does not use it.
func (e *Endpoint) SetLinkAddress(addr tcpip.LinkAddress) {
	e.mu.Lock()
	e.linkAddr = addr
	e.mu.Unlock()
}

// Capabilities is empty: no checksum offload, so the receiving stack verifies
// every checksum and catches corrupted frames; no resolution, no GSO.
func (*Endpoint) Capabilities() stack.LinkEndpointCapabilities { return stack.CapabilityNone }

// Attach sets the dispatcher that receives frames; nil detaches, and frames
// arriving then are dropped and counted.
func (e *Endpoint) Attach(d stack.NetworkDispatcher) {
	e.mu.Lock()
	e.disp = d
	e.mu.Unlock()
}

// IsAttached reports whether a dispatcher is attached.
func (e *Endpoint) IsAttached() bool {
	e.mu.RLock()
	defer e.mu.RUnlock()
	return e.disp != nil
}

// Wait returns at once: the endpoint owns no goroutines.
func (*Endpoint) Wait() {}

// ARPHardwareType is ARPHardwareNone: no link header, no neighbour resolution.
func (*Endpoint) ARPHardwareType() header.ARPHardwareType { return header.ARPHardwareNone }

// AddHeader adds nothing: there is no link header.
func (*Endpoint) AddHeader(*stack.PacketBuffer) {}

// ParseHeader consumes nothing and accepts every packet.
func (*Endpoint) ParseHeader(*stack.PacketBuffer) bool { return true }

// Close runs the close action once and refuses later writes; frames still in
// flight to this endpoint are dropped and counted on arrival.
func (e *Endpoint) Close() {
	e.mu.Lock()
	if e.closed {
		e.mu.Unlock()
		return
	}
	e.closed = true
	f := e.onClose
	e.onClose = nil
	e.mu.Unlock()
	if f != nil {
		f()
	}
}

// SetOnCloseAction sets what Close runs.
func (e *Endpoint) SetOnCloseAction(f func()) {
	e.mu.Lock()
	e.onClose = f
	e.mu.Unlock()
}
