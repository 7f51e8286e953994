package stack

import (
	"sync"

	"gvisor.dev/gvisor/pkg/tcpip"
	gstack "gvisor.dev/gvisor/pkg/tcpip/stack"

	"github.com/netramp/netramp/counters"
)

// directQDisc hands each packet straight to the link, as gVisor's default
// queueing discipline does when a NIC is given none. gVisor's default
// builds a fresh one-packet list for every packet, and that list escapes
// into the link's WritePackets: one heap allocation per packet sent, data
// and ACKs alike. This one takes its list from a pool instead.
//
// On a link that sends each WritePackets call as one burst
// (nic.BurstWriter), netramp's TCP gathers the packets of one send
// opportunity (tcp.TxBatch): while a batch is open the qdisc queues packets,
// and the close of the last open batch writes the queue in one call, so the
// far end hears them as one delivery burst and ACKs them once
// (tcp/coalesce.go). gVisor's TCP never opens a batch: its packets go out
// one per call, as with any other link.
//
// Rules of the gathered path, for links that deliver inline (a pipe hands a
// write to the far stack on the writer's goroutine, and that stack's answer
// may come back to this NIC on the same goroutine):
//   - no lock is held while the link writes: the queue is taken out under
//     the lock and written after;
//   - one goroutine at a time writes the link (writing); a packet that
//     comes while another writes is queued, and the writer writes it after
//     its own call returns, so packets reach the link in the order the
//     qdisc got them, and a write that re-enters on the writer's goroutine
//     queues instead of recursing;
//   - a queued packet goes out when the last open batch closes, or, if a
//     write is under way then, when that write returns; a queue that
//     reaches maxBatch packets or maxBatchBytes is written at once;
//   - a gathered packet the link does not take is counted
//     (stack.qdisc.batch-drops) and freed: its sender saw it accepted and
//     recovers it as a loss. Only links that never refuse a packet claim
//     nic.BurstWriter, so this is a link fault, not flow control.
type directQDisc struct {
	link gstack.LinkWriter

	// gather is set when the link is a nic.BurstWriter and our TCP batches
	// on it; the fields below are used only then.
	gather bool
	drops  *counters.Counter

	mu      sync.Mutex
	open    int                    // batches opened and not yet closed
	writing bool                   // a goroutine is writing to the link
	q       []*gstack.PacketBuffer // queued packets; holds a reference on each
	qBytes  int
}

// Bounds of one gathered write: as a NIC's TX ring or a kernel's GSO/TSO
// bounds one burst.
const (
	maxBatch      = 64
	maxBatchBytes = 64 << 10
)

// oneLists are the one-packet lists directQDisc passes to links. A link
// keeps no list after WritePackets returns (it takes a reference on each
// packet it keeps), so a list may be reused at once.
var oneLists = sync.Pool{New: func() any { return new(gstack.PacketBufferList) }}

// WritePacket implements gstack.QueueingDiscipline.
func (q *directQDisc) WritePacket(pkt *gstack.PacketBuffer) tcpip.Error {
	if q.gather {
		q.mu.Lock()
		if q.open > 0 || q.writing || len(q.q) > 0 {
			pkt.IncRef() // the queue's own
			q.q = append(q.q, pkt)
			q.qBytes += pkt.Size()
			if q.writing || (q.open > 0 && !q.full()) {
				q.mu.Unlock()
				return nil
			}
			q.writeQueueLocked()
			return nil
		}
		q.writing = true // alone and nothing queued: write it as below
		q.mu.Unlock()
	}
	l := oneLists.Get().(*gstack.PacketBufferList)
	l.PushBack(pkt)
	_, err := q.link.WritePackets(*l)
	// Reset empties the list and keeps its array, but drops a reference on
	// each packet: take one for it, since the caller still owns pkt.
	pkt.IncRef()
	l.Reset()
	oneLists.Put(l)
	if q.gather {
		q.mu.Lock()
		if len(q.q) > 0 && (q.open == 0 || q.full()) {
			q.writeQueueLocked() // what others queued while this one wrote
		} else {
			q.writing = false
			q.mu.Unlock()
		}
	}
	return err
}

// full reports whether the queue has reached a write's bounds. q.mu is held.
func (q *directQDisc) full() bool {
	return len(q.q) >= maxBatch || q.qBytes >= maxBatchBytes
}

// writeQueueLocked writes the queue, at most maxBatch packets or about
// maxBatchBytes a call, and what is queued meanwhile, until nothing is due;
// q.mu is held on entry, released on return, and not held while the link
// writes.
func (q *directQDisc) writeQueueLocked() {
	q.writing = true
	for {
		l := oneLists.Get().(*gstack.PacketBufferList)
		k, size := 0, 0
		for k < len(q.q) && k < maxBatch && size < maxBatchBytes {
			l.PushBack(q.q[k]) // the list takes the queue's reference
			size += q.q[k].Size()
			k++
		}
		n := copy(q.q, q.q[k:])
		clear(q.q[n:])
		q.q = q.q[:n]
		q.qBytes -= size
		q.mu.Unlock()
		w, _ := q.link.WritePackets(*l)
		if lost := l.Len() - w; lost > 0 {
			q.drops.Add(uint64(lost))
		}
		l.Reset()
		oneLists.Put(l)
		q.mu.Lock()
		if len(q.q) == 0 || (q.open > 0 && !q.full()) {
			break
		}
	}
	q.writing = false
	q.mu.Unlock()
}

// OpenBatch implements tcp.TxBatch.
func (q *directQDisc) OpenBatch() {
	q.mu.Lock()
	q.open++
	q.mu.Unlock()
}

// CloseBatch implements tcp.TxBatch: the close of the last open batch writes
// the queue, unless a write is under way, whose writer then writes it.
func (q *directQDisc) CloseBatch() {
	q.mu.Lock()
	if q.open > 0 {
		q.open--
	}
	if q.open > 0 || q.writing || len(q.q) == 0 {
		q.mu.Unlock()
		return
	}
	q.writeQueueLocked()
}

// Close implements gstack.QueueingDiscipline: packets still queued (a batch
// left open, which our TCP never does) are freed and counted as drops.
func (q *directQDisc) Close() {
	if !q.gather {
		return
	}
	q.mu.Lock()
	n := len(q.q)
	for _, p := range q.q {
		p.DecRef()
	}
	clear(q.q)
	q.q = q.q[:0]
	q.qBytes = 0
	q.mu.Unlock()
	if n > 0 {
		q.drops.Add(uint64(n))
	}
}

// qdiscDrops is the counter of gathered packets a link did not take.
func (s *Stack) qdiscDrops() *counters.Counter {
	return s.reg.MustRegister("stack.qdisc.batch-drops", "packets gathered into one link write (tcp.TxBatch) that the link did not take, freed as lost")
}
