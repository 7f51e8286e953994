package recovery

// Undo: a recovery whose retransmissions all turn out unnecessary is undone
// (RFC 9438 §4.9). Two kinds of evidence: a D-SACK of a retransmission
// (RFC 2883 §4), counted against the retransmissions the recovery made, so
// that one D-SACK among real losses proves nothing (RFC 8985 §9.3's intent);
// and, after a timeout, an ACK of new data echoing a TSval older than the
// timeout's retransmission, which answers the original (RFC 3522 §2).

type undo struct {
	possible bool // the last recovery may still be undone
	retrans  int  // its retransmissions not yet reported spurious
}

func (u *undo) begin() { *u = undo{possible: true} }

func (u *undo) retransmitted() {
	if u.possible {
		u.retrans++
	}
}

func (u *undo) refused() {
	if u.possible && u.retrans > 0 {
		u.retrans--
	}
}

// Evidence is what one ACK says about the last recovery's retransmissions.
type Evidence struct {
	Progress bool // the ACK advanced SND.UNA
	// TSEcr is the ACK's timestamp echo; HasTSEcr says it carried a nonzero one.
	TSEcr    uint32
	HasTSEcr bool
	// DSACKOfRetransmission: a D-SACK that reports a retransmitted segment
	// received twice.
	DSACKOfRetransmission bool
}

// OnEvidence weighs one ACK's evidence and reports whether the last recovery
// was spurious. If so it is over: the state returns to Open, and the caller
// undoes cc's reduction (cc.OnSpurious) and tells cc the recovery ended.
func (r *Recovery) OnEvidence(ev Evidence) bool {
	u := &r.undo
	spuriousRTO := r.state == RTO && ev.Progress && ev.HasTSEcr && int32(ev.TSEcr-r.rto.tsVal) < 0
	allDSACKed := false
	if u.possible && ev.DSACKOfRetransmission && u.retrans > 0 {
		u.retrans--
		// control:tcp-one-dsack-undoes-recovery
		allDSACKed = u.retrans == 0
	}
	if !u.possible || !spuriousRTO && !allDSACKed {
		return false
	}
	u.possible = false
	r.state = Open
	r.fastRtx = false
	r.reno.head = false
	return true
}

// Undoable reports whether the last recovery may still be undone.
func (r *Recovery) Undoable() bool { return r.undo.possible }
