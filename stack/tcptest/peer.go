package tcptest

import (
	"gvisor.dev/gvisor/pkg/tcpip"
	"gvisor.dev/gvisor/pkg/tcpip/header"
	"gvisor.dev/gvisor/pkg/waiter"
)

// PeerPort is the scripted peer's port.
const PeerPort = 40000

// Peer is an established connection between a host endpoint and the
// scripted peer, with the peer's view of both sequence spaces as the
// handshake left them.
type Peer struct {
	H       *Host
	EP      tcpip.Endpoint // the host's accepted endpoint
	WQ      *waiter.Queue
	Port    uint16 // the host's port
	PeerNxt uint32 // next sequence number the peer sends
	HostNxt uint32 // next sequence number the host sends (what the peer acks)
	TS      bool   // timestamps negotiated
	PeerTS  uint32 // the peer's last TSval
	HostTS  uint32 // the last TSval seen from the host
	Wnd     uint16 // the window the peer advertises
}

// Accept opens a listener on port, completes a handshake from the peer with
// the given SYN options, and returns the accepted connection.
func (h *Host) Accept(port uint16, opts []byte) *Peer {
	h.TB.Helper()
	l, _ := h.Listen(port, 8)
	c := &Peer{H: h, Port: port, PeerNxt: 1000, Wnd: 65535}
	h.Inject(Seg{SrcPort: PeerPort, DstPort: port, Seq: c.PeerNxt, Flags: header.TCPFlagSyn, Wnd: c.Wnd, Opts: opts})
	c.PeerNxt++
	sa := h.One()
	if !sa.Has(header.TCPFlagSyn) || !sa.Has(header.TCPFlagAck) || sa.Ack != c.PeerNxt {
		h.TB.Fatalf("want SYN-ACK acking %d, got %+v", c.PeerNxt, sa)
	}
	so := sa.SynOptions()
	c.TS, c.HostTS, c.PeerTS = so.TS, so.TSVal, 5000
	c.HostNxt = sa.Seq + 1
	ack := Seg{SrcPort: PeerPort, DstPort: port, Seq: c.PeerNxt, Ack: c.HostNxt, Flags: header.TCPFlagAck, Wnd: c.Wnd}
	if c.TS {
		ack.Opts = TSOpt(c.PeerTS, c.HostTS)
	}
	h.Inject(ack)
	ep, wq, err := l.Accept(nil)
	if err != nil {
		h.TB.Fatalf("accept after handshake: %v", err)
	}
	c.EP, c.WQ = ep, wq
	return c
}
