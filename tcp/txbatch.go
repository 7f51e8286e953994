package tcp

import (
	"gvisor.dev/gvisor/pkg/tcpip"
	"gvisor.dev/gvisor/pkg/tcpip/stack"
)

// TxBatch gathers the link writes of one send opportunity: OpenBatch names
// a batch (TxToken), the endpoint stamps that token on each packet of the
// opportunity, and the NIC's qdisc holds the stamped packets until
// CloseBatch(token) writes them in one WritePackets call, so a link that
// sends a call as one burst (nic.BurstWriter) does so for them. A packet
// without the token of an open batch (another connection's ACK above all)
// is not held: a batch belongs to the opportunity that opened it, never to
// the NIC, so no connection waits on another's goroutine. netramp's stack
// gives one to its TCP for each NIC whose link is such a link.
//
// The endpoint opens a batch around the writes of its outbox (unlock), with
// its lock released: CloseBatch may write to a link that delivers inline
// and so re-enter this protocol, this endpoint included (its segments then
// wait in its outbox, since it is flushing: that, not the qdisc, bounds the
// re-entry). Every OpenBatch is matched by one CloseBatch of its token on
// the same goroutine, on every path, and a token is stamped only between
// them, on that goroutine.
type TxBatch interface {
	OpenBatch() TxToken
	CloseBatch(TxToken)
}

// TxToken names one open batch. It rides in the packet's Owner, which
// netramp's TCP leaves unset otherwise (SetOwner is a no-op); the qdisc
// clears it when it takes the packet. A TxBatch's tokens answer KUID and
// KGID as the overflow ID, should a filter ever ask.
type TxToken = tcpip.PacketOwner

// txHook boxes a TxBatch for atomic.Pointer.
type txHook struct{ TxBatch }

// SetTxBatch gives netramp's TCP in s the TxBatch of NIC id, for the stack
// to call before it creates that NIC; false when s's TCP is not netramp's.
func SetTxBatch(s *stack.Stack, id tcpip.NICID, b TxBatch) bool {
	p, ok := s.TransportProtocolInstance(ProtocolNumber).(*protocol)
	if !ok {
		return false
	}
	if b == nil {
		p.burstFor(id).tx.Store(nil)
	} else {
		p.burstFor(id).tx.Store(&txHook{b})
	}
	return true
}

// txBatchFor is the TxBatch of the NIC r sends through, nil when it has none.
func (p *protocol) txBatchFor(r *stack.Route) TxBatch {
	if r == nil {
		return nil
	}
	if b := p.burstAt(r.NICID()); b != nil {
		if h := b.tx.Load(); h != nil {
			return h.TxBatch
		}
	}
	return nil
}

// txOpen is one send opportunity's open batch; the zero txOpen gathers
// nothing.
type txOpen struct {
	b   TxBatch
	tok TxToken
}

// openTx opens a batch on b, if any, for one send opportunity.
func openTx(b TxBatch) txOpen {
	if b == nil {
		return txOpen{}
	}
	return txOpen{b: b, tok: b.OpenBatch()}
}

// stamp marks pkt as a packet of this opportunity's batch.
func (t txOpen) stamp(pkt *stack.PacketBuffer) {
	if t.tok != nil {
		// control:tcp-tx-token-unstamped
		pkt.Owner = t.tok
	}
}

// close writes the batch's packets.
func (t txOpen) close() {
	if t.b != nil {
		t.b.CloseBatch(t.tok)
	}
}
