package wire

import "time"

// Now is the wire time: how long since New on the wire's clock, the time
// Blackouts windows are measured in.
func (w *Wire) Now() time.Duration { return w.now() }

// SetDir changes the path of the direction that from's endpoint sends into,
// while the wire runs: a path whose rate, delay, queue, jitter, loss,
// duplication, corruption or blackouts change (a route flap, a link that
// renegotiates, a radio that fades). It returns an error wrapping
// ErrBadConfig, naming the field, for an invalid d, or one that changes
// TxRing, LineRateBps, the ACK aggregation or GRO: the card, the aggregator
// and the receive poll hold frames whose accounting those fields set.
//
// Frames already past the bottleneck keep the arrival time they were given;
// the queue keeps its frames and their departure times, and the next frame
// meets the new rate, bounds and impairments. Without Reorder the order of
// arrivals is still kept: a delay that shrinks holds new frames behind the
// last one scheduled. Blackouts are in wire time (Now), as in Config.
func (w *Wire) SetDir(from Side, d Dir) error {
	name := "AtoB"
	if from == SideB {
		name = "BtoA"
	}
	if err := d.validate(name); err != nil {
		return err
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	dir := w.dirs[0]
	if from == SideB {
		dir = w.dirs[1]
	}
	old := dir.cfg
	for _, c := range []struct {
		field string
		same  bool
	}{
		{"TxRing", d.TxRing == old.TxRing},
		{"LineRateBps", d.LineRateBps == old.LineRateBps},
		{"AckAggSegments", d.AckAggSegments == old.AckAggSegments},
		{"AckAggHold", d.AckAggHold == old.AckAggHold},
		{"AckAggGap", d.AckAggGap == old.AckAggGap},
		{"AckAggCoalesce", d.AckAggCoalesce == old.AckAggCoalesce},
		{"GRO", d.GRO == old.GRO},
	} {
		if !c.same {
			return errorf("%s.%s cannot change while the wire runs", name, c.field)
		}
	}
	fresh := newDirection(w, dir.idx, d, d.Delay+dir.reverse.cfg.Delay, w.mtu, 0)
	dir.cfg = fresh.cfg
	dir.queueBytes, dir.queueFrames = fresh.queueBytes, fresh.queueFrames
	if d.Burst == nil {
		dir.geBad = false
	}
	if d.JitterPeriod != old.JitterPeriod || d.Jitter != old.Jitter {
		dir.jitEnd = 0
	}
	return nil
}

// Trim lets go of what the wire keeps for reuse (frame buffers, events, the
// backing arrays of emptied queues), which holds the peak of its load: for a
// long-lived wire whose busy hour has passed, or a soak that compares the
// heap before and after.
func (w *Wire) Trim() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.bufs, w.freeEvs = nil, nil
	if len(w.events) == 0 {
		w.events = nil
	}
	if w.outHead == len(w.outq) && !w.draining {
		w.outq, w.outHead = nil, 0
	}
	for _, d := range w.dirs {
		if d.qHead == len(d.queue) {
			d.queue, d.qHead, d.qBytes = nil, 0, 0
		}
	}
}
