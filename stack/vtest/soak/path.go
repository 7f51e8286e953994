package soak

import (
	"time"

	"github.com/netramp/netramp/nic/wire"
)

// rates are the bottleneck rates a path changes among, bits per second.
var rates = [...]int64{2e6, 10e6, 50e6, 200e6, 1e9}

// pathMTUs are the path MTUs a path narrows to now and then: 500 is below
// IPv4's 576-byte floor, so the TCP sends without DF and the path fragments.
var pathMTUs = [...]int{1280, 1000, 576, 500}

// drawDir draws one direction of a path: a rate, a delay, and now and then
// random or burst loss, jitter (reordering or not), duplication,
// corruption, a narrower path MTU (answered by ICMP fragmentation-needed),
// or a blackout of up to 15 s starting within PathEvery.
func (s *Soak) drawDir(now time.Duration) wire.Dir {
	r := s.rng
	d := wire.Dir{RateBps: rates[r.IntN(len(rates))], Delay: time.Duration(1+r.IntN(80)) * time.Millisecond}
	switch r.IntN(10) {
	case 0, 1:
		d.Loss = r.Float64() * 0.03
	case 2:
		d.Burst = wire.BurstLoss(0.005+r.Float64()*0.02, 2+r.Float64()*4)
	}
	if r.IntN(5) == 0 {
		d.Jitter = time.Duration(1+r.IntN(10)) * time.Millisecond
		d.Reorder = r.IntN(2) == 0
	}
	if r.IntN(20) == 0 {
		d.Duplicate = 0.01
	}
	if r.IntN(20) == 0 {
		d.Corrupt = 0.005
	}
	if r.IntN(10) == 0 {
		d.PathMTU = pathMTUs[r.IntN(len(pathMTUs))]
	}
	if r.IntN(20) == 0 {
		start := now + time.Duration(r.Int64N(int64(s.cfg.PathEvery)+1))
		d.Blackouts = []wire.Window{{Start: start, End: start + 500*time.Millisecond + time.Duration(r.Int64N(int64(15*time.Second)))}}
	}
	return d
}

// changePath gives a client's path new directions, keeping a vanished
// client dark, and schedules the next change.
func (s *Soak) changePath(c *client) {
	now := c.w.Now()
	s.setPath(c, s.drawDir(now), s.drawDir(now))
	s.rep.PathChanges++
	c.pathT.Reset(s.exp(s.cfg.PathEvery))
}

// setPath sets both directions, adding the client's vanishing, if any, as
// a blackout.
func (s *Soak) setPath(c *client, up, down wire.Dir) {
	now := c.w.Now()
	if c.downUntil > now {
		w := wire.Window{Start: now, End: c.downUntil}
		up.Blackouts = append(up.Blackouts, w)
		down.Blackouts = append(down.Blackouts, w)
	}
	if err := c.w.SetDir(wire.SideA, up); err != nil {
		s.problem("client %d: path up: %v", c.idx, err)
	}
	if err := c.w.SetDir(wire.SideB, down); err != nil {
		s.problem("client %d: path down: %v", c.idx, err)
	}
}

// vanish takes a client (one with a connection running, if any) off the network for 3 to 20 minutes: its path goes
// dark both ways first, then its connections are dropped (their RSTs die in
// the dark), so the server's ends hear nothing more and must give up.
func (s *Soak) vanish() {
	s.vanT.Reset(s.exp(s.cfg.VanishEvery))
	now := s.clk.Elapsed()
	// Mid-transfer: a client with an end running, if any has one.
	var busy []*client
	for _, e := range s.live {
		if c := s.clients[max(e.slot, 0)]; e.client && c.downUntil <= now && (len(busy) == 0 || busy[len(busy)-1] != c) {
			busy = append(busy, c)
		}
	}
	var c *client
	if len(busy) > 0 {
		c = busy[s.rng.IntN(len(busy))]
	} else {
		c = s.clients[s.rng.IntN(len(s.clients))]
	}
	if c.downUntil > now {
		return
	}
	c.downUntil = now + 3*time.Minute + time.Duration(s.rng.Int64N(int64(17*time.Minute)))
	s.rep.Vanishings++
	s.setPath(c, s.drawDir(now), s.drawDir(now))
	var gone []*end
	for _, e := range s.live {
		if e.client && e.slot == c.idx {
			gone = append(gone, e)
		}
	}
	for _, e := range gone {
		e.ep.Abort()
		e.finish(vanished, "the client vanished")
	}
}

// calm stops the path changes and gives every client a clean path, for the
// drain.
func (s *Soak) calm() {
	if s.arrT != nil {
		s.arrT.Stop()
	}
	if s.vanT != nil {
		s.vanT.Stop()
	}
	for _, c := range s.clients {
		c.pathT.Stop()
		c.downUntil = 0
		d := wire.Dir{RateBps: 100e6, Delay: 5 * time.Millisecond}
		s.setPath(c, d, d)
	}
}
