package wire

import (
	"time"

	"github.com/netramp/netramp/nic"
)

// The receiving card's poll (Dir.GRO; the merge rule is gro.go's): frames
// that arrive wait on the card's ring until the poll Poll after the first of
// them, which hands up to Budget of them over together.

// arriveLocked puts a frame that reached the far endpoint at t on its ring,
// raising the interrupt if no poll is pending.
func (d *direction) arriveLocked(frame []byte, t time.Duration) {
	d.rxRing = append(d.rxRing, frame)
	if !d.pollArmed {
		d.pollArmed = true
		d.w.pushLocked(d.w.eventLocked(t+d.cfg.GRO.Poll, evPoll, d, nil), t)
	}
}

// pollLocked takes what the poll at t hands over: the ring's frames in
// arrival order, at most Budget; what is left is polled again at once.
func (d *direction) pollLocked(t time.Duration) [][]byte {
	n := min(len(d.rxRing), d.cfg.GRO.budget())
	taken := append([][]byte(nil), d.rxRing[:n]...)
	rest := copy(d.rxRing, d.rxRing[n:])
	clear(d.rxRing[rest:])
	d.rxRing = d.rxRing[:rest]
	d.pollArmed = rest > 0
	if d.pollArmed {
		d.w.pushLocked(d.w.eventLocked(t, evPoll, d, nil), t)
	}
	return taken
}

// deliverPollLocked hands one poll's frames to the far endpoint's stack,
// merged (gro.go) and bracketed as one delivery burst unless the GRO model
// says otherwise, unlocking around the calls. Each frame is counted,
// traced and seen by the reverse direction's ACK aggregation as deliverLocked
// does, at the poll's time: the stack gets them then.
func (w *Wire) deliverPollLocked(it work) {
	d := it.dir
	g := &d.cfg.GRO
	disp, sink := d.to.receivers()
	if disp == nil && sink == nil {
		for _, f := range it.poll {
			d.stats.DropDetached++
			d.ctr.add(&d.ctr.dropDetached, 1)
			w.traceLocked(it.at, d, TraceDropDetached, f)
			w.putBufLocked(f)
		}
		return
	}
	data := 0
	r := d.reverse
	for _, f := range it.poll {
		d.stats.DeliveredFrames++
		d.stats.DeliveredBytes += uint64(len(f))
		d.ctr.add(&d.ctr.deliveredFrames, 1)
		d.ctr.add(&d.ctr.deliveredBytes, uint64(len(f)))
		w.traceLocked(it.at, d, TraceDeliver, f)
		w.pcapLocked(d.to.side, f)
		if r.cfg.AckAggSegments > 0 && classify(f).data {
			r.dataDelivered(it.at)
			data++
		}
	}
	out := d.groOut[:0]
	if g.NoMerge {
		for _, f := range it.poll {
			out = append(out, groPacket{b: f})
		}
	} else {
		var st groStats
		out, st = groMerge(it.poll, g, d.groBufLocked, out)
		d.stats.GROAggregates += uint64(st.aggregates)
		d.stats.GROFramesMerged += uint64(st.merged)
		d.ctr.add(&d.ctr.groAggregates, uint64(st.aggregates))
		d.ctr.add(&d.ctr.groFramesMerged, uint64(st.merged))
		if st.aggregates >= 2 {
			d.stats.GROPollsSeveral++
			d.ctr.add(&d.ctr.groPollsSeveral, 1)
		}
		if uint64(st.aggregates) > d.stats.GROPollHighAggregates {
			d.stats.GROPollHighAggregates = uint64(st.aggregates)
			d.ctr.max(&d.ctr.groPollHigh, uint64(st.aggregates))
		}
	}
	d.stats.GROPolls++
	d.ctr.add(&d.ctr.groPolls, 1)
	d.groOut = nil // out is ours until the calls return
	w.mu.Unlock()

	// control:wire-gro-poll-no-burst
	burst := !g.NoBurst && sink == nil
	if burst {
		nic.BeginBurst(disp)
	}
	for _, p := range out {
		if sink != nil {
			sink.DeliverFrame(p.b)
		} else {
			dispatch(disp, p.b)
		}
	}
	if burst {
		nic.EndBurst(disp)
	}

	w.mu.Lock()
	for range data {
		d.countDataLocked(true)
	}
	for _, p := range out {
		if p.agg && len(d.groBufs) < 64 {
			d.groBufs = append(d.groBufs, p.b[:0])
		}
	}
	for _, f := range it.poll {
		w.putBufLocked(f)
	}
	clear(out)
	d.groOut = out[:0]
}

// groBufLocked returns a buffer of n bytes for an aggregate, reused when one
// is free; each has the capacity of the largest aggregate.
func (d *direction) groBufLocked(n int) []byte {
	if k := len(d.groBufs); k > 0 && cap(d.groBufs[k-1]) >= n {
		b := d.groBufs[k-1]
		d.groBufs = d.groBufs[:k-1]
		return b[:n]
	}
	return make([]byte, n, max(n, d.cfg.GRO.maxBytes()))
}
