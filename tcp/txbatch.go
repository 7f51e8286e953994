package tcp

import (
	"gvisor.dev/gvisor/pkg/tcpip"
	"gvisor.dev/gvisor/pkg/tcpip/stack"
)

// TxBatch gathers a NIC's link writes: between OpenBatch and the matching
// CloseBatch the packets the NIC is given may be held, and the close of the
// last open batch writes them to the link in one WritePackets call, so a
// link that sends a call as one burst (nic.BurstWriter) does so for the
// segments of one send opportunity. netramp's stack gives one to its TCP for
// each NIC whose link is such a link.
//
// The endpoint opens a batch around the writes of its outbox (unlock), with
// its lock released: CloseBatch may write to a link that delivers inline
// and so re-enter this protocol, this endpoint included. Every OpenBatch is
// matched by one CloseBatch on the same goroutine, on every path.
type TxBatch interface {
	OpenBatch()
	CloseBatch()
}

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
