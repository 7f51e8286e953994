// Package nic holds what every link endpoint of netramp shares: the card's TX
// credit, which the TCP sender reads to tell a stop on the card from a stop on
// the congestion window (the half-window rule of cc/limited.go), and delivery
// bursts (burst.go), which a link reports so the TCP receiver can acknowledge
// a burst once at its end.
//
// Link endpoints live in sub-packages: nic/wire (an emulated path), nic/tap
// (a Linux TAP device) and nic/i219 (the Intel driver); nic/gso segments TCP
// packets in software for the links that need it.
package nic

// Credit is a link endpoint's TX room. A sender asks how many frames the card
// accepts now; when a write was refused or the room ran out, it asks to be
// told when descriptors are reclaimed.
//
// Implementations must not call a waiter while holding a lock the waiter could
// need: the waiter usually resumes sending, which writes to the same link.
type Credit interface {
	// TxFree returns the number of frames the link accepts now without
	// refusing one.
	TxFree() int

	// NotifyTxFree registers f to be called once, on the link's own context
	// (its clock or its reclaim path), the next time TX room frees up. The
	// returned cancel removes f if it has not run; it is safe to call twice.
	NotifyTxFree(f func()) (cancel func())
}

// CreditLink is implemented by link endpoints, and by wrappers around them,
// that expose their card's credit.
type CreditLink interface {
	TxCredit() Credit
}
