package soak

import (
	"fmt"
	"runtime"
	"time"

	"github.com/netramp/netramp/counters"
	"github.com/netramp/netramp/stack"
	"github.com/netramp/netramp/stack/vtest"
)

// drain stops the churn and runs the clock until every end has ended, at
// most three IdleTimeouts and the TCP's give-up; an end still running then
// is stuck, reported, and aborted so the rest can be checked.
func (s *Soak) drain() {
	s.calm()
	horizon := s.clk.Elapsed() + 3*s.cfg.IdleTimeout + 20*time.Minute
	s.clk.RunUntil(func() bool { return len(s.live) == 0 }, horizon)
	for len(s.live) > 0 {
		e := s.live[0]
		s.rep.Stuck++
		id := uint64(0)
		if e.rec != nil {
			id = e.rec.id
		}
		s.problem("connection %d (client end %v) stuck: sent %d, received %d, eof %v, shut %v", id, e.client, e.sent, e.got, e.eof, e.shut)
		e.ep.Abort()
		e.finish(failed, "stuck")
	}
	s.tally()
}

// tally counts each connection's ending and forgets the records.
func (s *Soak) tally() {
	for _, r := range s.recs {
		if !r.cliDone || r.srvLinked && !r.srvDone {
			s.problem("connection %d never ended (client %v, server %v)", r.id, r.cli, r.srv)
			continue
		}
		k := r.kind()
		s.rep.Endings.add(k)
		if r.cli == vanished {
			s.rep.VanishedConns++
		}
		if k == corrupt || k == failed {
			s.problem("connection %d (%d up, %d down, behaviour %d) ended %v: client %v (%s), server %v (%s)",
				r.id, r.reqLen, r.respLen, r.how, k, r.cli, r.cliWhy, r.srv, r.srvWhy)
		}
	}
	s.recs = nil
}

// settle waits out TIME-WAIT and whatever the last closes left on the
// clock, then takes the end's figures.
func (s *Soak) settle() {
	s.clk.RunFor(tcpTimeWait + 10*time.Second)
	s.rep.Virtual = s.clk.Elapsed()
	for _, c := range s.clients {
		ab, ba := c.w.Stats()
		s.rep.FragNeeded += ab.FragNeeded + ba.FragNeeded
		s.rep.Fragmented += ab.Fragmented + ba.Fragmented
	}
	for _, st := range append([]*stack.Stack{s.server}, s.stacks()...) {
		r := st.Counters()
		s.rep.PMTULowered += load(r, "tcp.pmtu.lowered")
		s.rep.Retransmitted += load(r, "tcp.retransmitted.bytes")
		s.rep.GiveUps += load(r, "tcp.give-ups") + load(r, "tcp.give-ups.zero-window")
	}
	s.checkCounters("after TIME-WAIT")
	s.rep.TimersEnd = s.clk.Pending()
	// A goroutine that is ending may take a moment of real time to go.
	for range 100 {
		if s.rep.GoroutinesEnd = runtime.NumGoroutine(); s.rep.GoroutinesEnd <= s.rep.GoroutinesStart {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	// The wires keep frame buffers for reuse as many as their busiest
	// moment needed: load, not connections, sets that.
	for _, c := range s.clients {
		c.w.Trim()
	}
	s.rep.HeapEnd = vtest.LiveHeap()
}

// tcpTimeWait is tcp.DefaultTimeWait, which every stack here runs with.
const tcpTimeWait = 60 * time.Second

// checkCounters checks tcp.conns.* against the stacks' endpoints and the
// soak's own counts: opened = closed + still open on every stack, where
// still open is every registered endpoint but the listener.
func (s *Soak) checkCounters(when string) {
	var opened, closed uint64
	open := 0
	add := func(st *stack.Stack, listeners int) (uint64, uint64) {
		o, c := load(st.Counters(), "tcp.conns.opened"), load(st.Counters(), "tcp.conns.closed")
		opened += o
		closed += c
		open += len(st.Gvisor().RegisteredEndpoints()) - listeners
		return o, c
	}
	srvOpened, _ := add(s.server, 1)
	var cliOpened uint64
	for _, c := range s.clients {
		o, _ := add(c.st, 0)
		cliOpened += o
	}
	s.rep.Opened, s.rep.Closed, s.rep.StillOpen = opened, closed, open
	if opened != closed+uint64(open) {
		s.problem("%s: tcp.conns.opened %d != tcp.conns.closed %d + %d endpoints still registered", when, opened, closed, open)
	}
	if cliOpened != uint64(s.opened) {
		s.problem("%s: the clients' tcp.conns.opened is %d, the soak started %d connects", when, cliOpened, s.opened)
	}
	if srvOpened < uint64(s.accepted) {
		s.problem("%s: the server's tcp.conns.opened is %d, below the %d ends it accepted", when, srvOpened, s.accepted)
	}
}

// stacks are the clients' stacks.
func (s *Soak) stacks() []*stack.Stack {
	var out []*stack.Stack
	for _, c := range s.clients {
		out = append(out, c.st)
	}
	return out
}

func load(r *counters.Registry, name string) uint64 {
	if c := r.Lookup(name); c != nil {
		return c.Load()
	}
	return 0
}

// errs are the failed checks.
func (s *Soak) errs() []error {
	var out []error
	for _, p := range s.problems {
		out = append(out, fmt.Errorf("soak: %s", p))
	}
	if n := s.rep.Problems - len(s.problems); n > 0 {
		out = append(out, fmt.Errorf("soak: and %d problems more", n))
	}
	r := &s.rep
	if r.StillOpen != 0 {
		out = append(out, fmt.Errorf("soak: %d endpoints still registered after TIME-WAIT", r.StillOpen))
	}
	if r.TimersEnd != r.TimersStart {
		out = append(out, fmt.Errorf("soak: %d timers pending on the clock at the end, %d at the start", r.TimersEnd, r.TimersStart))
	}
	if r.GoroutinesEnd > r.GoroutinesStart {
		out = append(out, fmt.Errorf("soak: %d goroutines at the end, %d at the start", r.GoroutinesEnd, r.GoroutinesStart))
	}
	if r.HeapEnd > r.HeapStart+r.Config.HeapSlack {
		out = append(out, fmt.Errorf("soak: live heap %d bytes at the end, %d at the start: more than the %d bytes of slack",
			r.HeapEnd, r.HeapStart, r.Config.HeapSlack))
	}
	return out
}
