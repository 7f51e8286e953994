package stack

import (
	"sync"

	"gvisor.dev/gvisor/pkg/tcpip"
	gstack "gvisor.dev/gvisor/pkg/tcpip/stack"
)

// directQDisc hands each packet straight to the link, as gVisor's default
// queueing discipline does when a NIC is given none. gVisor's default
// builds a fresh one-packet list for every packet, and that list escapes
// into the link's WritePackets: one heap allocation per packet sent, data
// and ACKs alike. This one takes its list from a pool instead.
type directQDisc struct{ link gstack.LinkWriter }

// oneLists are the one-packet lists directQDisc passes to links. A link
// keeps no list after WritePackets returns (it takes a reference on each
// packet it keeps), so a list may be reused at once.
var oneLists = sync.Pool{New: func() any { return new(gstack.PacketBufferList) }}

// WritePacket implements gstack.QueueingDiscipline.
func (q *directQDisc) WritePacket(pkt *gstack.PacketBuffer) tcpip.Error {
	l := oneLists.Get().(*gstack.PacketBufferList)
	l.PushBack(pkt)
	_, err := q.link.WritePackets(*l)
	// Reset empties the list and keeps its array, but drops a reference on
	// each packet: take one for it, since the caller still owns pkt.
	pkt.IncRef()
	l.Reset()
	oneLists.Put(l)
	return err
}

// Close implements gstack.QueueingDiscipline.
func (*directQDisc) Close() {}
