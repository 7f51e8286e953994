package stack

import (
	"sync"

	"gvisor.dev/gvisor/pkg/tcpip"
	gstack "gvisor.dev/gvisor/pkg/tcpip/stack"

	"github.com/netramp/netramp/counters"
	"github.com/netramp/netramp/tcp"
)

// directQDisc hands each packet straight to the link, as gVisor's default
// queueing discipline does when a NIC is given none. gVisor's default
// builds a fresh one-packet list for every packet, and that list escapes
// into the link's WritePackets: one heap allocation per packet sent, data
// and ACKs alike. This one takes its list from a pool instead.
//
// On a link that sends each WritePackets call as one burst
// (nic.BurstWriter), netramp's TCP gathers the packets of one send
// opportunity (tcp.TxBatch): OpenBatch hands out a batch (txBatch), the
// TCP stamps its token on the opportunity's packets, the qdisc holds those,
// and CloseBatch writes them in one call, so the far end hears them as one
// delivery burst and ACKs them once (tcp/coalesce.go). gVisor's TCP never
// opens a batch: its packets go out one per call, as with any other link.
//
// A batch is the opportunity's, not the NIC's. A packet without the token
// of an open batch, another connection's ACK above all, goes straight to
// the link, whatever other batches are open or being written: holding every
// packet of the NIC while any batch was open or any goroutine wrote (this
// qdisc's first design) left one connection's ACKs waiting on another
// connection's goroutine, and with thousands of goroutines on two cores that
// goroutine could sleep past the 200 ms minimum RTO. A link that must never
// block a small packet behind a full ring (seed 003) holds the same rule.
//
// Rules of the gathered path, for links that deliver inline (a pipe hands a
// write to the far stack on the writer's goroutine, and that stack's answer
// may come back to this NIC on the same goroutine):
//   - no lock is held while the link writes: a batch's packets are taken
//     out under its lock and written after;
//   - several goroutines may write the link at once, as they may to any
//     link gVisor's NICs write without a qdisc; a connection's packets still
//     reach it in order, since one goroutine at a time writes an endpoint's
//     outbox (the TCP's flushing) and a batch writes its packets in order;
//   - a write that re-enters on the writer's goroutine is written then and
//     there (nested), not queued behind the outer write: the qdisc cannot
//     tell the writer's goroutine from another's, and queueing every packet
//     behind whoever writes is the rule this design removes. The TCP bounds
//     the nesting: an endpoint whose outbox is being written keeps what it
//     sends meanwhile for the writer to send after (tcp.TxBatch), so a level
//     needs another endpoint, and an answer to an answer stops there;
//   - a batch that reaches maxBatch packets or maxBatchBytes is written at
//     once, by the goroutine that stamps it, and gathers on;
//   - a gathered packet the link does not take is counted
//     (stack.qdisc.batch-drops) and freed: its sender saw it accepted and
//     recovers it as a loss. Only links that never refuse a packet claim
//     nic.BurstWriter, so this is a link fault, not flow control.
type directQDisc struct {
	link gstack.LinkWriter

	// gather is set when the link is a nic.BurstWriter and our TCP batches
	// on it; the fields below are used only then.
	gather  bool
	drops   *counters.Counter
	batches sync.Pool // *txBatch, closed
}

// Bounds of one gathered write: as a NIC's TX ring or a kernel's GSO/TSO
// bounds one burst.
const (
	maxBatch      = 64
	maxBatchBytes = 64 << 10
)

// txBatch is one send opportunity's batch, and its token (tcp.TxToken).
// Only its opener stamps it, so its lock is uncontended; the lock is there
// for a stamped packet that reaches the qdisc late, on another goroutine
// (a link whose writes wait for address resolution, which no gathering link
// needs): it joins the batch if still open, else goes straight out.
type txBatch struct {
	q     *directQDisc
	mu    sync.Mutex
	open  bool
	pkts  []*gstack.PacketBuffer // held packets; holds a reference on each
	bytes int
}

// overflowID is the ID Linux reports for a user or group it cannot map.
const overflowID = 65534

// KUID implements tcpip.PacketOwner (tcp.TxToken).
func (*txBatch) KUID() uint32 { return overflowID }

// KGID implements tcpip.PacketOwner (tcp.TxToken).
func (*txBatch) KGID() uint32 { return overflowID }

// oneLists are the packet lists directQDisc passes to links. A link keeps
// no list after WritePackets returns (it takes a reference on each packet
// it keeps), so a list may be reused at once.
var oneLists = sync.Pool{New: func() any { return new(gstack.PacketBufferList) }}

// WritePacket implements gstack.QueueingDiscipline.
func (q *directQDisc) WritePacket(pkt *gstack.PacketBuffer) tcpip.Error {
	if q.gather {
		if b, ok := pkt.Owner.(*txBatch); ok {
			pkt.Owner = nil // the token ends here: links copy Owner on
			// control:stack-qdisc-token-ignored
			if b.q == q && b.hold(pkt) {
				return nil
			}
		}
	}
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

// hold adds pkt to b if b is open, and reports whether it did; a batch
// that reaches a write's bounds is written at once.
func (b *txBatch) hold(pkt *gstack.PacketBuffer) bool {
	b.mu.Lock()
	if !b.open {
		b.mu.Unlock()
		return false
	}
	pkt.IncRef() // the batch's own
	b.pkts = append(b.pkts, pkt)
	b.bytes += pkt.Size()
	// control:stack-qdisc-batch-unbounded
	if len(b.pkts) < maxBatch && b.bytes < maxBatchBytes {
		b.mu.Unlock()
		return true
	}
	b.writeLocked()
	return true
}

// writeLocked writes b's packets in one call (hold keeps them within a
// write's bounds); b.mu is held on entry, released on return, and not held
// while the link writes.
func (b *txBatch) writeLocked() {
	l := oneLists.Get().(*gstack.PacketBufferList)
	for _, p := range b.pkts {
		l.PushBack(p) // the list takes the batch's reference
	}
	clear(b.pkts)
	b.pkts = b.pkts[:0]
	b.bytes = 0
	b.mu.Unlock()
	if l.Len() > 0 {
		w, _ := b.q.link.WritePackets(*l)
		if lost := l.Len() - w; lost > 0 {
			b.q.drops.Add(uint64(lost))
		}
	}
	l.Reset()
	oneLists.Put(l)
}

// OpenBatch implements tcp.TxBatch.
func (q *directQDisc) OpenBatch() tcp.TxToken {
	// control:stack-qdisc-batch-allocated
	b, _ := q.batches.Get().(*txBatch)
	if b == nil {
		b = &txBatch{q: q}
	}
	b.mu.Lock()
	b.open = true
	b.mu.Unlock()
	return b
}

// CloseBatch implements tcp.TxBatch: the batch's packets go out in one
// write, on the closer's goroutine.
func (q *directQDisc) CloseBatch(tok tcp.TxToken) {
	b, ok := tok.(*txBatch)
	if !ok || b.q != q {
		return
	}
	b.mu.Lock()
	b.open = false
	b.writeLocked()
	q.batches.Put(b)
}

// Close implements gstack.QueueingDiscipline. A batch holds packets only
// between its opener's OpenBatch and CloseBatch, which write them, so
// nothing is left to free here.
func (q *directQDisc) Close() {}

// qdiscDrops is the counter of gathered packets a link did not take.
func (s *Stack) qdiscDrops() *counters.Counter {
	return s.reg.MustRegister("stack.qdisc.batch-drops", "packets gathered into one link write (tcp.TxBatch) that the link did not take, freed as lost")
}
