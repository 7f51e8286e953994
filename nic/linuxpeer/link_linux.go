//go:build linux

package linuxpeer

import (
	"sync"
	"sync/atomic"

	"github.com/netramp/netramp/nic"
	"gvisor.dev/gvisor/pkg/buffer"
	"gvisor.dev/gvisor/pkg/tcpip"
	"gvisor.dev/gvisor/pkg/tcpip/header"
	"gvisor.dev/gvisor/pkg/tcpip/stack"
)

// Link is the stack's side of the path: a stack.LinkEndpoint carrying IP
// packets with no link header (no ARP), as nic/wire's endpoints do. The
// emulator adds and strips the Ethernet header the TAP needs.
type Link struct {
	mtu   uint32
	eth   [header.EthernetMinimumSize]byte // to the kernel: dst kernel MAC, src ours, IPv4
	ourHW tcpip.LinkAddress

	mu   sync.RWMutex
	disp stack.NetworkDispatcher
	out  *pipe
	card *card // nil: no TX ring model

	closed                               atomic.Bool
	txFrames, rxFrames, rxDrop, ringFull atomic.Int64
}

var (
	_ stack.LinkEndpoint = (*Link)(nil)
	_ nic.CreditLink     = (*Link)(nil)
)

// TxCredit implements nic.CreditLink: the modelled card's ring, or nil when
// Config.TxRing is 0 (never card-limited).
func (l *Link) TxCredit() nic.Credit {
	if l.card == nil {
		return nil
	}
	return l.card
}

func newLink(mtu uint32, ours, kernel tcpip.LinkAddress) *Link {
	l := &Link{mtu: mtu, ourHW: ours}
	header.Ethernet(l.eth[:]).Encode(&header.EthernetFields{SrcAddr: ours, DstAddr: kernel, Type: header.IPv4ProtocolNumber})
	return l
}

// MTU implements stack.LinkEndpoint.
func (l *Link) MTU() uint32 { return l.mtu }

// SetMTU implements stack.LinkEndpoint; the path's MTU is fixed by the TAP,
// so this is ignored.
func (l *Link) SetMTU(uint32) {}

// MaxHeaderLength implements stack.LinkEndpoint.
func (l *Link) MaxHeaderLength() uint16 { return 0 }

// LinkAddress implements stack.LinkEndpoint.
func (l *Link) LinkAddress() tcpip.LinkAddress { return "" }

// SetLinkAddress implements stack.LinkEndpoint (ignored: no link header).
func (l *Link) SetLinkAddress(tcpip.LinkAddress) {}

// Capabilities implements stack.LinkEndpoint.
func (l *Link) Capabilities() stack.LinkEndpointCapabilities { return 0 }

// Attach implements stack.LinkEndpoint.
func (l *Link) Attach(d stack.NetworkDispatcher) { l.mu.Lock(); l.disp = d; l.mu.Unlock() }

// IsAttached implements stack.LinkEndpoint.
func (l *Link) IsAttached() bool { l.mu.RLock(); defer l.mu.RUnlock(); return l.disp != nil }

// Wait implements stack.LinkEndpoint; the link owns no goroutines (the
// peer's emulator does).
func (l *Link) Wait() {}

// ARPHardwareType implements stack.LinkEndpoint.
func (l *Link) ARPHardwareType() header.ARPHardwareType { return header.ARPHardwareNone }

// AddHeader implements stack.LinkEndpoint.
func (l *Link) AddHeader(*stack.PacketBuffer) {}

// ParseHeader implements stack.LinkEndpoint.
func (l *Link) ParseHeader(*stack.PacketBuffer) bool { return true }

// Close implements stack.LinkEndpoint: later writes are refused. The peer
// itself is closed by Peer.Close.
func (l *Link) Close() { l.closed.Store(true) }

// SetOnCloseAction implements stack.LinkEndpoint.
func (l *Link) SetOnCloseAction(func()) {}

// WritePackets implements stack.LinkWriter: each IPv4 packet enters the
// emulator towards the kernel. Only IPv4 is carried (IPv6 is off on the
// test link); other packets are refused.
func (l *Link) WritePackets(pkts stack.PacketBufferList) (int, tcpip.Error) {
	if l.closed.Load() {
		return 0, &tcpip.ErrClosedForSend{}
	}
	n := 0
	var parts [][]byte
	for _, pkt := range pkts.AsSlice() {
		if pkt.NetworkProtocolNumber != header.IPv4ProtocolNumber {
			continue
		}
		parts = append(parts[:0], l.eth[:])
		parts = append(parts, pkt.AsSlices()...)
		if l.card == nil {
			l.out.submit(parts...)
		} else {
			at, ok := l.card.take(len(l.eth) + pkt.Size())
			if !ok {
				// Refuse this and the rest, as a full qdisc does; the
				// sender learns of room through TxCredit.
				l.ringFull.Add(int64(pkts.Len() - n))
				return n, &tcpip.ErrNoBufferSpace{}
			}
			l.out.submitAt(at, parts...)
		}
		l.txFrames.Add(1)
		n++
	}
	return n, nil
}

// deliver hands one Ethernet frame from the kernel to the stack.
func (l *Link) deliver(frame []byte) error {
	l.mu.RLock()
	d := l.disp
	l.mu.RUnlock()
	if d == nil || l.closed.Load() || len(frame) < header.EthernetMinimumSize+header.IPv4MinimumSize ||
		header.Ethernet(frame).Type() != header.IPv4ProtocolNumber {
		l.rxDrop.Add(1)
		return nil
	}
	pkt := stack.NewPacketBuffer(stack.PacketBufferOptions{Payload: buffer.MakeWithData(frame[header.EthernetMinimumSize:])})
	l.rxFrames.Add(1)
	d.DeliverNetworkPacket(header.IPv4ProtocolNumber, pkt)
	pkt.DecRef()
	return nil
}
