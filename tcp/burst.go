package tcp

import (
	"sync"
	"sync/atomic"

	"gvisor.dev/gvisor/pkg/tcpip"
	"gvisor.dev/gvisor/pkg/tcpip/stack"

	"github.com/netramp/netramp/nic"
)

// A NIC's delivery bursts (nic.Bursts), as its link reports them: while one
// is open, endpoints hold their every-second ACK for its end (coalesce.go).
//
// Several goroutines may deliver into one NIC (gVisor's pipe delivers on
// whichever goroutine writes), so bursts overlap and a delivery outside any
// burst may come while another goroutine's is open. The rule that keeps
// this safe: an endpoint holds only while some burst is open, and the end of
// any burst answers everything held so far. A held ACK so goes at the end of
// the burst during which it was held, or earlier, never later. A link that
// opens a burst and never ends it leaves endpoints to the cap and the
// delayed-ACK timer, which bound every hold.

// maxBurstHeld bounds the endpoints one NIC's burst list keeps: past it an
// endpoint ACKs at once, so a link that never ends its bursts cannot grow
// the list without bound.
const maxBurstHeld = 1024

// burst is one NIC's burst state.
type burst struct {
	open atomic.Int32 // bursts begun and not yet ended, of any goroutine
	gen  atomic.Uint64
	mu   sync.Mutex
	held []*endpoint // endpoints that held an ACK since the last end; gen names this list

	tx atomic.Pointer[txHook] // the NIC's TxBatch (txbatch.go), nil without one
}

// BeginBurst implements nic.Bursts.
func (b *burst) BeginBurst() { b.open.Add(1) }

// EndBurst implements nic.Bursts: every endpoint that held an ACK since the
// last end of a burst sends it now, on the link's goroutine.
func (b *burst) EndBurst() {
	var buf [8]*endpoint
	b.mu.Lock()
	for {
		n := b.open.Load()
		// control:tcp-burst-end-ignored
		if n <= 0 || b.open.CompareAndSwap(n, n-1) {
			break // an EndBurst without its BeginBurst leaves the count at 0
		}
	}
	held := append(buf[:0], b.held...)
	clear(b.held)
	b.held = b.held[:0]
	gen := b.gen.Add(1) - 1
	b.mu.Unlock()
	// Each endpoint's ACK goes in its own batch (txbatch.go): a batch belongs
	// to one connection's send opportunity, so one endpoint's ACK is never
	// held for another's.
	for _, e := range held {
		e.burstEnded(b, gen)
	}
}

// hold puts e on the list the next end of a burst answers, and reports
// whether it did: false when no burst is open (the segment came outside
// one) or the list is full. e.mu is held.
func (b *burst) hold(e *endpoint) bool {
	if e.burstOn == b && e.burstGen == b.gen.Load() {
		return true // already on the list the next end answers
	}
	if b.open.Load() <= 0 {
		return false
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.open.Load() <= 0 || len(b.held) >= maxBurstHeld {
		return false
	}
	b.held = append(b.held, e)
	e.burstOn, e.burstGen = b, b.gen.Load()
	return true
}

// burstEnded sends the ACK e held for the end of b's burst gen, unless a
// segment sent since carried it.
func (e *endpoint) burstEnded(b *burst, gen uint64) {
	e.mu.Lock()
	if e.burstOn == b && e.burstGen == gen {
		e.burstOn = nil
	}
	// control:hosttests-gro-burst-ack-waits
	if e.burstHeld && e.ackPending > 0 && e.state.synchronized() {
		e.sendAck(ackBurstEnd)
	}
	e.burstHeld = false
	e.unlock()
}

// burstTable is a protocol's bursts by NIC ID, replaced whole when a NIC is
// added so HandlePacket reads it without a lock.
type burstTable []*burst

// burstAt is NIC id's burst state, nil when its link's dispatcher was never
// given one (Bursts).
func (p *protocol) burstAt(id tcpip.NICID) *burst {
	t := p.bursts.Load()
	if t == nil || int(id) >= len(*t) {
		return nil
	}
	return (*t)[id]
}

// burstFor is NIC id's burst state, made on first use.
func (p *protocol) burstFor(id tcpip.NICID) *burst {
	p.burstsMu.Lock()
	defer p.burstsMu.Unlock()
	if b := p.burstAt(id); b != nil {
		return b
	}
	var t burstTable
	if old := p.bursts.Load(); old != nil {
		t = append(t, *old...)
	}
	for len(t) <= int(id) {
		t = append(t, nil)
	}
	t[id] = new(burst)
	p.bursts.Store(&t)
	return t[id]
}

// Bursts is where NIC id's link reports its delivery bursts to netramp's
// TCP in s (nic.Bursts), for the stack to join to the dispatcher it attaches
// to that link (nic.BurstDispatcher); nil when s's TCP is not netramp's.
func Bursts(s *stack.Stack, id tcpip.NICID) nic.Bursts {
	p, ok := s.TransportProtocolInstance(ProtocolNumber).(*protocol)
	if !ok {
		return nil
	}
	return p.burstFor(id)
}
