package soak

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"net/netip"
	"runtime"
	"time"

	"gvisor.dev/gvisor/pkg/tcpip"
	"gvisor.dev/gvisor/pkg/tcpip/network/ipv4"
	"gvisor.dev/gvisor/pkg/waiter"

	"github.com/netramp/netramp/nic/wire"
	"github.com/netramp/netramp/stack"
	"github.com/netramp/netramp/stack/vclock"
	"github.com/netramp/netramp/stack/vtest"
	"github.com/netramp/netramp/tcp"
)

// port is the listener's.
const port = 80

// clientRcvMax is the clients' receive buffer cap: small enough that a
// client that never reads shuts its window on a response of a few times it.
const clientRcvMax = 256 << 10

// Soak is one run: the stacks, the paths, the connections and the tallies.
type Soak struct {
	cfg     Config
	clk     *vclock.Clock
	rng     *rand.Rand
	server  *stack.Stack
	clients []*client
	lst     tcpip.Endpoint
	lwq     *waiter.Queue
	lentry  waiter.Entry
	lkick   tcpip.Timer
	lkicked bool
	arrT    tcpip.Timer
	vanT    tcpip.Timer
	opened  int // connections whose Connect started
	slotDur time.Duration

	recs     map[uint64]*record
	live     []*end
	accepted int
	rep      Report
	problems []string
}

// client is one client stack on its own path to the server.
type client struct {
	idx       int
	st        *stack.Stack
	w         *wire.Wire
	srv       tcpip.FullAddress
	pathT     tcpip.Timer
	downUntil time.Duration // vanished until then
}

// Run runs a soak of cfg and returns its Report; the error joins every
// failed check (nil when all held), or wraps ErrBadConfig.
func Run(cfg Config) (*Report, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	wallStart := time.Now()
	s, err := build(cfg)
	if err != nil {
		return nil, err
	}
	defer s.close()
	s.baseline()
	s.start()
	s.clk.RunFor(cfg.Duration)
	s.checkCounters("at the end of the arrivals")
	s.drain()
	s.settle()
	s.rep.Wall = time.Since(wallStart)
	return &s.rep, errors.Join(s.errs()...)
}

func serverAddr(i int) netip.Addr { return netip.AddrFrom4([4]byte{198, 18, byte(i), 1}) }
func clientAddr(i int) netip.Addr { return netip.AddrFrom4([4]byte{198, 18, byte(i), 2}) }

// build makes the clock, the paths, the stacks and the listener.
func build(cfg Config) (*Soak, error) {
	s := &Soak{cfg: cfg, clk: vclock.New(vtest.Epoch), recs: make(map[uint64]*record)}
	s.rng = rand.New(rand.NewPCG(uint64(cfg.Seed), 0x50a4))
	s.rep.Config = cfg
	var nics []stack.NIC
	for i := range cfg.Clients {
		d := wire.Dir{RateBps: 100e6, Delay: 5 * time.Millisecond}
		w, err := wire.New(s.clk, wire.Config{AtoB: d, BtoA: d, Seed: cfg.Seed*1000 + int64(i), NoTraceHash: true})
		if err != nil {
			return nil, err
		}
		c := &client{idx: i, w: w, srv: tcpip.FullAddress{Addr: tcpip.AddrFrom4(serverAddr(i).As4()), Port: port}}
		c.st, err = stack.New(stack.Options{
			Clock: s.clk, Seed: cfg.Seed*1000 + int64(i) + 1,
			TCP:  tcp.Options{ReceiveBufferMax: clientRcvMax},
			NICs: []stack.NIC{{Link: w.A(), Addr: netip.PrefixFrom(clientAddr(i), 24)}},
		})
		if err != nil {
			s.close()
			return nil, err
		}
		s.clients = append(s.clients, c)
		nics = append(nics, stack.NIC{Link: w.B(), Addr: netip.PrefixFrom(serverAddr(i), 24)})
	}
	var err error
	s.server, err = stack.New(stack.Options{Clock: s.clk, Seed: cfg.Seed, NICs: nics})
	if err != nil {
		s.close()
		return nil, err
	}
	s.lwq = new(waiter.Queue)
	l, terr := s.server.Gvisor().NewEndpoint(tcp.ProtocolNumber, ipv4.ProtocolNumber, s.lwq)
	if terr != nil {
		s.close()
		return nil, fmt.Errorf("soak: listener: %v", terr)
	}
	s.lst = l
	if terr := l.Bind(tcpip.FullAddress{Port: port}); terr != nil {
		s.close()
		return nil, fmt.Errorf("soak: bind: %v", terr)
	}
	if terr := l.Listen(1024); terr != nil {
		s.close()
		return nil, fmt.Errorf("soak: listen: %v", terr)
	}
	s.lentry = waiter.NewFunctionEntry(waiter.ReadableEvents, func(waiter.EventMask) { s.pokeAccept() })
	s.lwq.EventRegister(&s.lentry)
	return s, nil
}

// close lets go of the listener, the stacks and the wires.
func (s *Soak) close() {
	if s.lst != nil {
		s.lwq.EventUnregister(&s.lentry)
		s.lst.Close()
	}
	if s.server != nil {
		s.server.Close()
	}
	for _, c := range s.clients {
		c.st.Close()
		c.w.Close()
	}
}

// baseline takes the figures the end is compared with, with the stacks and
// the listener up and no connection yet.
func (s *Soak) baseline() {
	s.rep.HeapStart = vtest.LiveHeap()
	s.rep.GoroutinesStart = runtime.NumGoroutine()
	s.rep.TimersStart = s.clk.Pending()
}

// start schedules the arrivals, the path changes and the vanishings.
func (s *Soak) start() {
	if s.cfg.Conns > 0 {
		s.slotDur = s.cfg.Duration / time.Duration(s.cfg.Conns)
		s.arrT = s.clk.AfterFunc(s.arrivalAt(0), s.arrive)
	}
	for _, c := range s.clients {
		c.pathT = s.clk.AfterFunc(s.exp(s.cfg.PathEvery), func() { s.changePath(c) })
	}
	if s.cfg.VanishEvery > 0 && len(s.clients) > 1 {
		s.vanT = s.clk.AfterFunc(s.exp(s.cfg.VanishEvery), s.vanish)
	}
}

// arrivalAt is when connection i opens: at a random point of its share of
// Duration, so exactly Conns open within it at random times.
func (s *Soak) arrivalAt(i int) time.Duration {
	at := time.Duration(i)*s.slotDur + time.Duration(s.rng.Int64N(int64(max(s.slotDur, 1))))
	return at - s.clk.Elapsed()
}

// exp draws an exponential delay of mean m, at least a millisecond.
func (s *Soak) exp(m time.Duration) time.Duration {
	return max(time.Duration(s.rng.ExpFloat64()*float64(m)), time.Millisecond)
}

// size draws a request or response size: one in twenty empty, the rest
// log-uniform in [1, MaxBytes].
func (s *Soak) size() int64 {
	if s.cfg.MaxBytes == 0 || s.rng.IntN(20) == 0 {
		return 0
	}
	return int64(math.Exp(s.rng.Float64() * math.Log(float64(s.cfg.MaxBytes))))
}

// arrive opens the next connection from a client that has not vanished.
func (s *Soak) arrive() {
	i := s.rep.Arrivals
	s.rep.Arrivals++
	if s.rep.Arrivals < s.cfg.Conns {
		s.arrT.Reset(s.arrivalAt(s.rep.Arrivals))
	}
	now := s.clk.Elapsed()
	var up []*client
	for _, c := range s.clients {
		if c.downUntil <= now {
			up = append(up, c)
		}
	}
	if len(up) == 0 {
		s.rep.Skipped++
		return
	}
	c := up[s.rng.IntN(len(up))]
	r := &record{id: uint64(i) + 1, client: c.idx, reqLen: s.size(), respLen: s.size()}
	if s.rng.Float64() < s.cfg.Misbehave {
		if s.rng.IntN(2) == 0 {
			r.how = aborts
		} else {
			r.how = neverRead
			r.respLen = 4*clientRcvMax + s.size()
		}
	}
	wq := new(waiter.Queue)
	ep, terr := c.st.Gvisor().NewEndpoint(tcp.ProtocolNumber, ipv4.ProtocolNumber, wq)
	if terr != nil {
		s.problem("connection %d: new endpoint: %v", r.id, terr)
		return
	}
	s.recs[r.id] = r
	e := newEnd(s, ep, wq, true, c.idx)
	e.rec = r
	if r.how == aborts {
		e.resetAt = s.rng.Int64N(r.reqLen + r.respLen + 1)
	}
	var hdr [headerLen]byte
	binary.BigEndian.PutUint64(hdr[:8], r.id)
	binary.BigEndian.PutUint64(hdr[8:], uint64(r.respLen))
	e.send(hdr[:], streamSeed(r.id, true), r.reqLen)
	switch terr := ep.Connect(c.srv); terr.(type) {
	case *tcpip.ErrConnectStarted:
		s.opened++
	default:
		e.fail(terr, "connect")
		return
	}
	e.poke()
}

func (s *Soak) pokeAccept() {
	if s.lkicked {
		return
	}
	s.lkicked = true
	if s.lkick == nil {
		s.lkick = s.clk.AfterFunc(0, s.acceptAll)
		return
	}
	s.lkick.Reset(0)
}

// acceptAll starts a server end for each connection the listener holds.
func (s *Soak) acceptAll() {
	s.lkicked = false
	for {
		ep, wq, terr := s.lst.Accept(nil)
		if terr != nil {
			return
		}
		s.accepted++
		newEnd(s, ep, wq, false, -1).poke()
	}
}

func (s *Soak) addLive(e *end) {
	e.live = len(s.live)
	s.live = append(s.live, e)
	s.rep.Ends++
}

// endDone is told by an end that it ended.
func (s *Soak) endDone(e *end, o outcome, why string) {
	last := s.live[len(s.live)-1]
	s.live[e.live] = last
	last.live = e.live
	s.live[len(s.live)-1] = nil // the backing array must not keep it
	s.live = s.live[:len(s.live)-1]
	if e.client {
		s.rep.BytesDown += e.got
	} else {
		s.rep.BytesUp += e.got
	}
	r := e.rec
	switch {
	case r == nil:
		s.rep.Unlinked.add(o)
		if o == corrupt || o == failed {
			s.problem("a server end that read no header ended %v: %s", o, why)
		}
	case e.client:
		r.cli, r.cliWhy, r.cliDone = o, why, true
	default:
		r.srv, r.srvWhy, r.srvDone = o, why, true
	}
}

func (s *Soak) problem(format string, args ...any) {
	s.rep.Problems++
	if len(s.problems) < 20 {
		s.problems = append(s.problems, fmt.Sprintf(format, args...))
	}
}
