package tcptest

import (
	"net/netip"

	"gvisor.dev/gvisor/pkg/buffer"
	"gvisor.dev/gvisor/pkg/tcpip"
	"gvisor.dev/gvisor/pkg/tcpip/network/ipv4"
	gstack "gvisor.dev/gvisor/pkg/tcpip/stack"

	"github.com/netramp/netramp/nic"
)

// Tap sits between a stack and its link (wrap a vtest.Pair's wire end with
// it): it shows the test every TCP segment the stack sends and receives,
// and injects crafted frames into the stack as if they came off the link,
// so a third party (blind or on the path) can attack a live connection.
// Everything runs on the virtual clock's goroutine: no locking.
type Tap struct {
	Wrapper
	d gstack.NetworkDispatcher
	// OnSend and OnRecv, when set, see each TCP segment the stack sends or
	// receives (injected ones included).
	OnSend, OnRecv func(Seg)
}

// NewTap wraps inner.
func NewTap(inner gstack.LinkEndpoint) *Tap { return &Tap{Wrapper: Wrapper{inner}} }

// Wrapper is what every test link between a stack and its link shares:
// embedded, it passes each call the wrapper does not define on to the inner
// link, the card's TX credit included, so the stack still tells a full card
// from a full window (a wrapper that hid the credit would change the test).
type Wrapper struct{ gstack.LinkEndpoint }

// TxCredit forwards the inner link's card credit, if it has one.
func (w Wrapper) TxCredit() nic.Credit {
	if cl, ok := w.LinkEndpoint.(nic.CreditLink); ok {
		return cl.TxCredit()
	}
	return nil
}

// Attach implements gstack.LinkEndpoint, putting the Tap between the link's
// deliveries and the stack.
func (t *Tap) Attach(d gstack.NetworkDispatcher) {
	t.d = d
	if d == nil {
		t.LinkEndpoint.Attach(nil)
		return
	}
	t.LinkEndpoint.Attach(tapDispatcher{t})
}

// WritePackets implements gstack.LinkEndpoint.
func (t *Tap) WritePackets(pkts gstack.PacketBufferList) (int, tcpip.Error) {
	if t.OnSend != nil {
		for _, pkt := range pkts.AsSlice() {
			if s, ok := parsePkt(pkt); ok {
				t.OnSend(s)
			}
		}
	}
	return t.LinkEndpoint.WritePackets(pkts)
}

// Inject delivers an IPv4 frame to the stack.
func (t *Tap) Inject(b []byte) {
	if t.d == nil {
		return
	}
	pkt := gstack.NewPacketBuffer(gstack.PacketBufferOptions{Payload: buffer.MakeWithData(b)})
	tapDispatcher{t}.DeliverNetworkPacket(ipv4.ProtocolNumber, pkt)
	pkt.DecRef()
}

// InjectSeg delivers s from src to dst.
func (t *Tap) InjectSeg(src, dst netip.Addr, s Seg) { t.Inject(Frame(addr(src), addr(dst), s)) }

type tapDispatcher struct{ t *Tap }

func (d tapDispatcher) DeliverNetworkPacket(p tcpip.NetworkProtocolNumber, pkt *gstack.PacketBuffer) {
	if d.t.OnRecv != nil && p == ipv4.ProtocolNumber {
		if s, ok := parsePkt(pkt); ok {
			d.t.OnRecv(s)
		}
	}
	if d.t.d != nil {
		d.t.d.DeliverNetworkPacket(p, pkt)
	}
}

func (d tapDispatcher) DeliverLinkPacket(p tcpip.NetworkProtocolNumber, pkt *gstack.PacketBuffer) {
	if d.t.d != nil {
		d.t.d.DeliverLinkPacket(p, pkt)
	}
}

func parsePkt(pkt *gstack.PacketBuffer) (Seg, bool) {
	var b []byte
	for _, s := range pkt.AsSlices() {
		b = append(b, s...)
	}
	return Parse(b)
}
