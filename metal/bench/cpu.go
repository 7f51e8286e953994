package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"runtime"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	gstack "gvisor.dev/gvisor/pkg/tcpip/stack"

	"github.com/netramp/netramp/counters"
	"github.com/netramp/netramp/nic/gso"
	"github.com/netramp/netramp/stack"
	"github.com/netramp/netramp/stack/vtest"
)

// CPUConfig sizes the CPU benchmark: one bulk transfer per TCP and MTU
// between two stacks of one process over an in-memory link.
type CPUConfig struct {
	Bytes int64    // payload per transfer
	MTUs  []uint32 // e.g. 1500 and 9000
	Procs []int    // GOMAXPROCS of each set of rows (default: 1 and 2)
	// TCPs are the stacks to run, "netramp" and "gVisor" (default: both),
	// so a profile can hold one stack's transfers alone.
	TCPs []string
	// Links lists the link kinds of each MTU (default: all three, in order).
	Links []Offload
	// Rounds splits each row's Bytes into this many transfers per TCP, the
	// TCPs taking turns in ABBA order (ours first in even rounds, gVisor's
	// first in odd ones), so a machine whose speed drifts during a row
	// weighs on both alike; 0 = 4. Each round carries Bytes/Rounds, at
	// least MinRoundBytes. Before them each TCP makes one unmeasured
	// transfer of a round's bytes, at most 32 MB.
	Rounds int
	// Sink is how each transfer's receiver reads (default SinkCopy).
	Sink Sink
	// Conns lists the connections each row's transfers spread their bytes
	// over, a set of rows for each (default: 1). All of a transfer's
	// connections are open at once between the same two stacks, each
	// carrying its share of the round's bytes, all writing at once.
	Conns []int
}

// MaxCPUConns bounds CPUConfig.Conns: the dialer's connections share one
// address, and gVisor's ephemeral ports (16000 to 65535) must hold them.
// A round's bytes (MinRoundBytes at least) give each of them one or more.
const MaxCPUConns = 40_000

// Sink is how a CPU transfer's receiver reads the connection.
type Sink uint8

const (
	// SinkCopy is io.Copy(io.Discard, conn), the same code for both TCPs,
	// as an application that streams a connection somewhere writes it.
	// io.Copy takes the conn's io.WriterTo where it has one: ours hands
	// the writer the receive queue's bytes where they lie (stack/conn.go).
	// gonet's conn has none, so io.Copy takes io.Discard's io.ReaderFrom,
	// which reads gonet's conn 8 KB at a time (the size of io.Discard's
	// buffer; a writer without ReaderFrom gets io.Copy's 32 KB).
	SinkCopy Sink = iota
	// SinkRead is a loop of Read into one 32 KB buffer (io.Copy's own
	// size) for both TCPs: each byte copied into the application's buffer
	// on either.
	SinkRead
)

// cpuSinks are the Sinks by name, as osbench's -sink flag gives them.
var cpuSinks = map[string]Sink{"copy": SinkCopy, "read": SinkRead}

// ParseSink is the Sink named s: copy or read.
func ParseSink(s string) (Sink, error) {
	if k, ok := cpuSinks[s]; ok {
		return k, nil
	}
	return 0, fmt.Errorf("bench: cpu: sink %q is not copy or read", s)
}

// CPUConns says what the application reads and writes each TCP through,
// for the header of the CPU table: each stack's own adapter, as its users
// get it, so the allocations and CPU of the adapter are in each row.
func CPUConns(s Sink) string {
	const conns = "conns: netramp's read and written through stack's own net.Conn (stack/conn.go), gVisor's through gVisor's gonet (each stack's own adapter); "
	if s == SinkRead {
		return conns + "the sink Reads each into one 32 KB buffer (-sink read)"
	}
	return conns + "the sink is io.Copy(io.Discard, conn) for both, which takes our conn's io.WriterTo (the receive queue's bytes handed over where they lie) and reads gonet's through io.Discard's ReadFrom, 8 KB a Read (-sink copy; -sink read for a loop of 32 KB Reads on both)"
}

// MinRoundBytes is the smallest transfer a round may carry: below it slow
// start and the handshake weigh on the figures.
const MinRoundBytes = 1_000_000

// warmBytes bounds the unmeasured transfer each TCP makes before a row's
// rounds: enough for the buffers to reach their steady size.
const warmBytes = 32_000_000

// Offload is a CPU row's kind of link.
type Offload uint8

// The kinds of link the CPU benchmark runs over.
const (
	// NoOffload carries MTU-sized packets, no GSO offered, over the same
	// link as the offload rows (gso.NewPipe, gVisor's pipe inside), which
	// delivers each write of several packets as one burst. Our TCP gathers
	// the segments of one send opportunity into one write (tcp.TxBatch, the
	// stack's qdisc), so our receiver hears them as one burst and ACKs once
	// per burst (tcp/coalesce.go); gVisor's TCP writes one packet per call
	// and hears no bursts, as over gVisor's pipe alone.
	NoOffload Offload = iota
	// TSO offers both stacks host GSO of 64 KiB and cuts each GSO packet
	// into MTU-sized frames before delivery, as a NIC's TSO engine would
	// (nic/gso), the cutting's CPU counted in the transfer's. The link
	// (gso.NewPipe) delivers the frames of one write as one burst, as a
	// receiving NIC's poll would take them: our TCP ACKs once per burst
	// (at most 16 segments, tcp/coalesce.go); gVisor's TCP, on the same
	// link, hears no bursts and is unchanged by them.
	TSO
	// TSOGRO offers the same GSO but delivers each GSO packet whole, as the
	// aggregate a receiver's GRO would rebuild from its frames (nic/gso
	// Link's GRO): the receiving TCP sees one segment per GSO packet, over
	// the same link as TSO.
	TSOGRO
)

// cpuLinks are the Offloads by name, as osbench's -tso flag gives them.
var cpuLinks = map[string]Offload{"off": NoOffload, "on": TSO, "gro": TSOGRO}

// ParseOffload is the Offload named s: off, on (TSO) or gro (TSO and GRO).
func ParseOffload(s string) (Offload, error) {
	if o, ok := cpuLinks[s]; ok {
		return o, nil
	}
	return 0, fmt.Errorf("bench: cpu: link %q is not off, on or gro", s)
}

// String is the MTU column's suffix for the kind: "", " +TSO" or " +TSO+GRO".
func (o Offload) String() string {
	switch o {
	case TSO:
		return " +TSO"
	case TSOGRO:
		return " +TSO+GRO"
	}
	return ""
}

// cpuTCPs are the names CPUConfig.TCPs accepts, in row order.
var cpuTCPs = []string{"netramp", "gVisor"}

// CPUResult is one transfer's cost. Real time on a shared machine: figures to
// read side by side, not thresholds.
type CPUResult struct {
	TCP         string
	Procs       int // GOMAXPROCS during the transfer
	MTU         uint32
	Link        Offload // the kind of link (CPUConfig.Links)
	Bytes       int64
	Wall        time.Duration
	CPU         time.Duration // user + system CPU of the whole process
	Allocs      uint64        // heap allocations (runtime.MemStats.Mallocs)
	MBps        float64
	CPUSecPerGB float64
	AllocsPerMB float64
	// Packets is what both stacks' IP layers sent (data and ACKs): the
	// shared IP and link layer costs the same per packet for either TCP.
	// With TSO a GSO packet counts once, however many frames it becomes.
	Packets      uint64
	PacketsPerMB float64
	// Acks is this TCP's pure ACKs of both stacks by reason (tcp.acks.sent.*,
	// without the prefix); empty for gVisor's TCP, which has no such counters.
	Acks counters.Snapshot
	// Sends is this TCP's GSO packets and their segments (tcp.gso.*) and
	// its send opportunities by stop reason (tcp.stops.*), both stacks,
	// with the prefix "tcp." cut; empty for gVisor's TCP.
	Sends counters.Snapshot
	// RoundCPU is the CPU of each round's transfer, in round order; the
	// other fields sum (or, per byte, average over) every round.
	RoundCPU []time.Duration
	// Conns is the connections each transfer spread its bytes over.
	Conns int
	// HeapBytes is the live heap the connections added, measured with all
	// of a transfer's connections open and idle, before the data (summed
	// over the rounds); Ends the connection ends it was measured over, two
	// a connection; HeapPerEnd the one over the other.
	HeapBytes  uint64
	Ends       int
	HeapPerEnd float64
	// Done is each connection's completion time, from the moment the
	// writers start (every connection open) to its sink's end of stream,
	// every round's; P50 and P99 are its percentiles (nearest rank).
	Done     []time.Duration
	P50, P99 time.Duration
	// OpenCPU is the CPU of opening the connections (dial, handshake,
	// accept), summed over the rounds, which CPU leaves out; OpenPerConn
	// is it per connection opened.
	OpenCPU     time.Duration
	OpenPerConn time.Duration
	// RTOs is the retransmission timeouts of both stacks during the data
	// (ours: tcp.rto; gVisor's: its Timeouts statistic), summed over the
	// rounds: under a load that delays ACKs past the RTO, spurious ones.
	RTOs      uint64
	RTOsPerMB float64
}

// add sums one round's figures, x, into the row's result.
func (r *CPUResult) add(x CPUResult) {
	if r.TCP == "" {
		r.TCP, r.MTU, r.Link, r.Conns, r.Acks, r.Sends = x.TCP, x.MTU, x.Link, x.Conns, counters.Snapshot{}, counters.Snapshot{}
	}
	// control:bench-cpu-row-keeps-last-round
	r.Bytes += x.Bytes
	r.Wall += x.Wall
	r.CPU += x.CPU
	r.Allocs += x.Allocs
	r.Packets += x.Packets
	for k, v := range x.Acks {
		r.Acks[k] += v
	}
	for k, v := range x.Sends {
		r.Sends[k] += v
	}
	r.RoundCPU = append(r.RoundCPU, x.CPU)
	r.HeapBytes += x.HeapBytes
	r.Ends += x.Ends
	r.OpenCPU += x.OpenCPU
	r.RTOs += x.RTOs
	// control:bench-cpu-conns-row-keeps-last-round
	r.Done = append(r.Done, x.Done...)
	r.rates()
}

// rates derives the per-second and per-byte figures from the totals.
func (r *CPUResult) rates() {
	mb := float64(r.Bytes) / 1e6
	r.MBps = mb / r.Wall.Seconds()
	r.CPUSecPerGB = r.CPU.Seconds() / (mb / 1e3)
	r.AllocsPerMB = float64(r.Allocs) / mb
	r.PacketsPerMB = float64(r.Packets) / mb
	r.RTOsPerMB = float64(r.RTOs) / mb
	if r.Ends > 0 {
		r.HeapPerEnd = float64(r.HeapBytes) / float64(r.Ends)
		r.OpenPerConn = r.OpenCPU / time.Duration(r.Ends/2)
	}
	r.P50, r.P99 = percentile(r.Done, 50), percentile(r.Done, 99)
}

// percentile is the p-th percentile of ds by nearest rank: the smallest
// value at least p percent of ds are at or below; 0 for none.
func percentile(ds []time.Duration, p int) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	// control:bench-cpu-percentile-rank
	k := (len(s)*p + 99) / 100 // ceil(p% of n), the rank counted from 1
	return s[max(k, 1)-1]
}

// shares splits n bytes over conns connections: n/conns each, the first
// n%conns one more, so they sum to n.
func shares(n int64, conns int) []int64 {
	out := make([]int64, conns)
	for i := range out {
		out[i] = n / int64(conns)
		// control:bench-cpu-conns-remainder-dropped
		if int64(i) < n%int64(conns) {
			out[i]++
		}
	}
	return out
}

// CPU runs, for each GOMAXPROCS, MTU and link kind, this TCP and gVisor's
// in turns (CPUConfig.Rounds).
func CPU(ctx context.Context, cfg CPUConfig) ([]CPUResult, error) {
	if cfg.Bytes <= 0 || len(cfg.MTUs) == 0 {
		return nil, errors.New("bench: cpu needs a positive byte count and at least one MTU")
	}
	rounds := cfg.Rounds
	if rounds == 0 {
		rounds = 4
	}
	if rounds < 0 {
		return nil, fmt.Errorf("bench: cpu: Rounds = %d, want 0 (4) or more", cfg.Rounds)
	}
	if cfg.Sink > SinkRead {
		return nil, fmt.Errorf("bench: cpu: Sink = %d is not SinkCopy or SinkRead", cfg.Sink)
	}
	if cfg.Bytes/int64(rounds) < MinRoundBytes {
		return nil, fmt.Errorf("bench: cpu: Bytes = %d over %d rounds is under %d bytes a round", cfg.Bytes, rounds, MinRoundBytes)
	}
	procs := cfg.Procs
	if len(procs) == 0 {
		procs = []int{1, 2}
	}
	tcps := cfg.TCPs
	if len(tcps) == 0 {
		tcps = cpuTCPs
	}
	links := cfg.Links
	if len(links) == 0 {
		links = []Offload{NoOffload, TSO, TSOGRO}
	}
	for _, t := range tcps {
		if !slices.Contains(cpuTCPs, t) {
			return nil, fmt.Errorf("bench: cpu: TCP %q is not one of %s", t, strings.Join(cpuTCPs, ", "))
		}
	}
	conns := cfg.Conns
	if len(conns) == 0 {
		conns = []int{1}
	}
	for _, n := range conns {
		if n < 1 || n > MaxCPUConns {
			return nil, fmt.Errorf("bench: cpu: Conns %d is not in [1, %d]", n, MaxCPUConns)
		}
	}
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(0))
	var out []CPUResult
	for _, p := range procs {
		if p < 1 {
			return out, fmt.Errorf("bench: cpu: GOMAXPROCS %d is not positive", p)
		}
		runtime.GOMAXPROCS(p)
		for _, mtu := range cfg.MTUs {
			for _, link := range links {
				for _, nc := range conns {
					rs, err := abbaRow(ctx, tcps, rounds, cfg.Bytes, CPUResult{Procs: p}, func(name string, n int64) (CPUResult, error) {
						return transferAs(ctx, name, transferSpec{Bytes: n, MTU: mtu, Link: link, Sink: cfg.Sink, Conns: nc})
					})
					if err != nil {
						return out, err
					}
					out = append(out, rs...)
				}
			}
		}
	}
	return out, nil
}

// transferSpec is one transfer of a CPU row: Bytes over Conns connections
// of the TCP named (GVisor for gVisor's), at MTU over a link of kind Link,
// each read by Sink.
type transferSpec struct {
	Bytes  int64
	MTU    uint32
	GVisor bool
	Link   Offload
	Sink   Sink
	Conns  int
}

// transfer runs one round's transfer; a variable only so that the tests can
// see the order of the rounds.
var transfer = cpuTransfer

// transferAs runs one transfer of the TCP named under the profiler label
// tcp=name, which the goroutines it starts inherit (the stacks' own among
// them), so that one profile of both TCPs' rounds splits by TCP: go tool
// pprof -tagfocus tcp=netramp. Both then are profiled in the same process
// and rounds, where profiles of one TCP a run each fall at different
// moments of the machine's drift.
func transferAs(ctx context.Context, name string, sp transferSpec) (r CPUResult, err error) {
	// control:bench-cpu-unlabelled
	pprof.Do(ctx, pprof.Labels("tcp", name), func(ctx context.Context) {
		sp.GVisor = name == "gVisor"
		// control:bench-cpu-sink-dropped
		r, err = transfer(ctx, sp)
	})
	return r, err
}

// CPUDialers bounds the dials under way at once, well under either
// listener's accept queue (4096), so no SYN waits for a retransmission.
const CPUDialers = 64

// cpuTransfer opens sp.Conns connections from one stack to the other (its
// CPU the result's OpenCPU), measures the live heap they hold, then has
// every connection write its share of sp.Bytes and close, all at once, and
// its sink drain it. The other figures count from the writers' start to the
// last sink's end: the bytes' cost, apart from the connections' opening.
func cpuTransfer(ctx context.Context, sp transferSpec) (CPUResult, error) {
	name := "netramp"
	if sp.GVisor {
		name = "gVisor"
	}
	n, mtu, link := sp.Bytes, sp.MTU, sp.Link
	// Both TCPs run over the same links: nic/gso's pipe (which reports each
	// write of several packets as a delivery burst), offering no GSO for the
	// plain rows.
	lo := gso.LinkOptions{MaxSize: 64 << 10, GRO: link == TSOGRO}
	if link == NoOffload {
		lo = gso.LinkOptions{NoGSO: true}
	}
	a, b, err := gso.NewPipe(mtu, lo)
	if err != nil {
		return CPUResult{}, err
	}
	var la, lb gstack.LinkEndpoint = a, b
	src, err := stack.New(stack.Options{GVisorTCP: sp.GVisor, NICs: []stack.NIC{{Link: la, Addr: sourcePrefix}}})
	if err != nil {
		return CPUResult{}, err
	}
	defer src.Close()
	dst, err := stack.New(stack.Options{GVisorTCP: sp.GVisor, NICs: []stack.NIC{{Link: lb, Addr: sinkPrefix}}})
	if err != nil {
		return CPUResult{}, err
	}
	defer dst.Close()
	ln, err := dst.Listen(netip.AddrPortFrom(sinkPrefix.Addr(), 5202))
	if err != nil {
		return CPUResult{}, err
	}
	defer ln.Close()
	// control:bench-cpu-conns-one-connection
	conns := max(sp.Conns, 1)
	var accepted []net.Conn
	dialed := make([]net.Conn, conns)
	defer func() {
		for _, c := range slices.Concat(accepted, dialed) {
			if c != nil {
				c.Close()
			}
		}
	}()
	type acceptance struct {
		conns []net.Conn
		err   error
	}
	acceptDone := make(chan acceptance, 1)
	go func() {
		var a acceptance
		for len(a.conns) < conns {
			c, err := ln.Accept()
			if err != nil {
				a.err = err
				break
			}
			a.conns = append(a.conns, c)
		}
		acceptDone <- a
	}()
	ipSent := func() uint64 {
		return src.Gvisor().Stats().IP.PacketsSent.Value() + dst.Gvisor().Stats().IP.PacketsSent.Value()
	}
	sum := func(prefix string, keep func(string) bool) func() counters.Snapshot {
		return func() counters.Snapshot {
			s := counters.Snapshot{}
			for _, st := range []*stack.Stack{src, dst} {
				for name, v := range st.Counters().Snapshot() {
					if r, ok := strings.CutPrefix(name, prefix); ok && keep(r) {
						s[r] += v
					}
				}
			}
			return s
		}
	}
	acks := sum("tcp.acks.sent.", func(string) bool { return true })
	sends := sum("tcp.", func(n string) bool { return strings.HasPrefix(n, "gso.") || strings.HasPrefix(n, "stops.") })
	rtos := func() uint64 {
		if sp.GVisor {
			return src.Gvisor().Stats().TCP.Timeouts.Value() + dst.Gvisor().Stats().TCP.Timeouts.Value()
		}
		return src.Counters().Snapshot()["tcp.rto"] + dst.Counters().Snapshot()["tcp.rto"]
	}
	heap0 := vtest.LiveHeap()
	open0 := processCPU()

	// Open every connection, CPUDialers at a time.
	next := make(chan int)
	dialErrs := make(chan error, CPUDialers)
	var dials sync.WaitGroup
	for range min(conns, CPUDialers) {
		dials.Go(func() {
			for i := range next {
				dctx, cancel := context.WithTimeout(ctx, 30*time.Second)
				c, err := src.Dial(dctx, netip.AddrPortFrom(sinkPrefix.Addr(), 5202))
				cancel()
				if err != nil {
					dialErrs <- err
					for range next {
					}
					return
				}
				dialed[i] = c
			}
		})
	}
	for i := range conns {
		next <- i
	}
	close(next)
	dials.Wait()
	select {
	case err := <-dialErrs:
		return CPUResult{}, fmt.Errorf("bench: cpu %s dial: %w", name, err)
	default:
	}
	select {
	case a := <-acceptDone:
		accepted = a.conns
		if a.err != nil {
			return CPUResult{}, fmt.Errorf("bench: cpu %s accept: %w", name, a.err)
		}
	case <-time.After(time.Minute):
		ln.Close() // ends the Accept under way
		accepted = (<-acceptDone).conns
		return CPUResult{}, fmt.Errorf("bench: cpu %s: %d of %d connections accepted", name, len(accepted), conns)
	}

	// The heap with every connection open and idle, the measurement's own
	// CPU and time left out.
	openCPU := processCPU() - open0
	heap1 := vtest.LiveHeap()

	// The data: every connection writes its share at once and closes; the
	// figures count from here.
	pk0, acks0, sends0, rto0 := ipSent(), acks(), sends(), rtos()
	var m0, m1 runtime.MemStats
	runtime.ReadMemStats(&m0)
	cpu0 := processCPU()

	share := shares(n, conns)
	done := make([]time.Duration, conns)
	got := make([]int64, conns)
	errs := make(chan error, 2*conns)
	var wg sync.WaitGroup
	go0 := time.Now()
	for i, c := range accepted {
		wg.Go(func() {
			k, err := drain(c, sp.Sink)
			done[i], got[i] = time.Since(go0), k
			if err != nil {
				errs <- fmt.Errorf("sink: %w", err)
			}
		})
	}
	for i, c := range dialed {
		wg.Go(func() {
			err := send(c, share[i])
			c.Close()
			if err != nil {
				errs <- err
			}
		})
	}
	finished := make(chan struct{})
	go func() { wg.Wait(); close(finished) }()
	select {
	case <-finished:
	case <-time.After(5 * time.Minute):
		return CPUResult{}, fmt.Errorf("bench: cpu %s: the sinks did not finish", name)
	}
	wall := time.Since(go0)
	cpu := processCPU() - cpu0
	runtime.ReadMemStats(&m1)
	select {
	case err := <-errs:
		return CPUResult{}, fmt.Errorf("bench: cpu %s: %w", name, err)
	default:
	}
	// Every byte arrived, each connection's share on its own: the sinks'
	// counts are the shares, whichever dialed connection each accepted.
	var received int64
	for _, k := range got {
		received += k
	}
	slices.Sort(got)
	slices.Sort(share)
	if received != n || !slices.Equal(got, share) {
		return CPUResult{}, fmt.Errorf("bench: cpu %s: %d of %d bytes arrived over %d connections", name, received, n, conns)
	}
	r := CPUResult{TCP: name, MTU: mtu, Link: link, Conns: conns, Bytes: n, Wall: wall, CPU: cpu, Allocs: m1.Mallocs - m0.Mallocs,
		Packets: ipSent() - pk0, Acks: acks().Diff(acks0), Sends: sends().Diff(sends0), Ends: 2 * conns, Done: done, OpenCPU: openCPU, RTOs: rtos() - rto0}
	if heap1 > heap0 {
		r.HeapBytes = heap1 - heap0
	}
	r.rates()
	return r, nil
}

// drain reads c to its end as sink says, and returns the bytes read.
func drain(c net.Conn, sink Sink) (int64, error) {
	// control:bench-cpu-sink-ignored
	if sink == SinkCopy {
		return io.Copy(io.Discard, c)
	}
	buf := make([]byte, 32<<10)
	var n int64
	for {
		k, err := c.Read(buf)
		n += int64(k)
		if err == io.EOF {
			return n, nil
		}
		if err != nil {
			return n, err
		}
	}
}

// send writes n bytes to w, from one buffer every sender shares (Write
// only reads it), so the bench's own buffers are not charged per
// connection.
func send(w io.Writer, n int64) error {
	buf := payload[:]
	for n > 0 {
		k := int64(len(buf))
		if n < k {
			k = n
		}
		m, err := w.Write(buf[:k])
		n -= int64(m)
		if err != nil {
			return err
		}
	}
	return nil
}

// WriteCPU prints the results side by side, with a netramp/gVisor ratio
// line for each GOMAXPROCS, MTU and connection count, and, where a row ran
// at several connection counts, each TCP's CPU per GB at each count over
// its CPU per GB at the fewest.
func WriteCPU(w io.Writer, rs []CPUResult) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "cores\tMTU\tconns\tTCP\tMB/s\tCPU-s per GB\tallocs per MB\tpackets per MB\tRTOs per MB\theap KiB/end\topen CPU/conn\tp50 done\tp99 done\twall\tCPU")
	type key struct {
		procs int
		mtu   uint32
		link  Offload
		conns int
	}
	by := map[key]map[string]CPUResult{}
	var keys []key
	for _, r := range rs {
		k := key{r.Procs, r.MTU, r.Link, r.Conns}
		if by[k] == nil {
			by[k] = map[string]CPUResult{}
			keys = append(keys, k)
		}
		by[k][r.TCP] = r
		fmt.Fprintf(tw, "%d\t%s\t%d\t%s\t%.0f\t%.2f\t%.0f\t%.0f\t%.3g\t%.1f\t%s\t%s\t%s\t%s\t%s\n", r.Procs, mtuLabel(r.MTU, r.Link), r.Conns, r.TCP, r.MBps, r.CPUSecPerGB, r.AllocsPerMB, r.PacketsPerMB,
			r.RTOsPerMB, r.HeapPerEnd/1024, r.OpenPerConn.Round(time.Microsecond), doneLabel(r.P50), doneLabel(r.P99), r.Wall.Round(time.Millisecond), r.CPU.Round(time.Millisecond))
	}
	for _, k := range keys {
		a, okA := by[k]["netramp"]
		b, okB := by[k]["gVisor"]
		if okA && okB {
			fmt.Fprintf(tw, "%d\t%s\t%d\tnetramp/gVisor\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t\t\n", k.procs, mtuLabel(k.mtu, k.link), k.conns, ratio(a.MBps, b.MBps), ratio(a.CPUSecPerGB, b.CPUSecPerGB),
				ratio(a.AllocsPerMB, b.AllocsPerMB), ratio(a.PacketsPerMB, b.PacketsPerMB), ratio(a.RTOsPerMB, b.RTOsPerMB), ratio(a.HeapPerEnd, b.HeapPerEnd), ratio(a.OpenPerConn.Seconds(), b.OpenPerConn.Seconds()),
				ratio(a.P50.Seconds(), b.P50.Seconds()), ratio(a.P99.Seconds(), b.P99.Seconds()))
		}
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	label := func(procs int, mtu uint32, link Offload, conns int) string {
		return fmt.Sprintf("%d core(s), MTU %s, %d conn(s)", procs, mtuLabel(mtu, link), conns)
	}
	printed := false
	// Each TCP's CPU per GB at each connection count over its own at the
	// fewest, a line per TCP and row.
	type rowKey struct {
		procs int
		mtu   uint32
		link  Offload
		tcp   string
	}
	scale := map[rowKey][]CPUResult{}
	var rowKeys []rowKey
	for _, r := range rs {
		k := rowKey{r.Procs, r.MTU, r.Link, r.TCP}
		if scale[k] == nil {
			rowKeys = append(rowKeys, k)
		}
		scale[k] = append(scale[k], r)
	}
	for _, k := range rowKeys {
		rows := slices.SortedFunc(slices.Values(scale[k]), func(a, b CPUResult) int { return a.Conns - b.Conns })
		if len(rows) < 2 {
			continue
		}
		printed = true
		fmt.Fprintf(w, "\n%d core(s), MTU %s, %s CPU per GB over its own at %d conn(s):", k.procs, mtuLabel(k.mtu, k.link), k.tcp, rows[0].Conns)
		for _, r := range rows[1:] {
			fmt.Fprintf(w, " %d conns %s", r.Conns, ratio(r.CPUSecPerGB, rows[0].CPUSecPerGB))
		}
	}
	for _, k := range keys {
		a, b := by[k]["netramp"], by[k]["gVisor"]
		if len(a.RoundCPU) < 2 || len(a.RoundCPU) != len(b.RoundCPU) {
			continue
		}
		printed = true
		fmt.Fprintf(w, "\n%s, CPU by round (ABBA), netramp over gVisor:", label(k.procs, k.mtu, k.link, k.conns))
		for i := range a.RoundCPU {
			fmt.Fprintf(w, " %s", ratio(a.RoundCPU[i].Seconds(), b.RoundCPU[i].Seconds()))
		}
	}
	for _, r := range rs {
		if len(r.Acks) == 0 {
			continue
		}
		printed = true
		fmt.Fprintf(w, "\n%s, %s pure ACKs per MB by reason:", label(r.Procs, r.MTU, r.Link, r.Conns), r.TCP)
		for _, name := range r.Acks.Names() {
			if v := r.Acks[name]; v > 0 {
				fmt.Fprintf(w, " %s %.3g", name, float64(v)/(float64(r.Bytes)/1e6))
			}
		}
	}
	for _, r := range rs {
		g := r.Sends
		if g["gso.packets"] == 0 {
			continue
		}
		printed = true
		mb := float64(r.Bytes) / 1e6
		fmt.Fprintf(w, "\n%s, %s GSO packets per MB %.3g, segments each %.1f; send stops per MB:", label(r.Procs, r.MTU, r.Link, r.Conns), r.TCP,
			float64(g["gso.packets"])/mb, float64(g["gso.segments"])/float64(g["gso.packets"]))
		for _, name := range g.Names() {
			if v := g[name]; v > 0 && strings.HasPrefix(name, "stops.") {
				fmt.Fprintf(w, " %s %.3g", strings.TrimPrefix(name, "stops."), float64(v)/mb)
			}
		}
	}
	if printed {
		fmt.Fprintln(w)
	}
	return nil
}

// doneLabel is a completion time as the table prints it: to the
// millisecond, to 10 µs under 10 ms.
func doneLabel(d time.Duration) string {
	if d < 10*time.Millisecond {
		return d.Round(10 * time.Microsecond).String()
	}
	return d.Round(time.Millisecond).String()
}

// mtuLabel is a row's MTU column: the MTU and the link's offloads.
func mtuLabel(mtu uint32, link Offload) string {
	return strconv.FormatUint(uint64(mtu), 10) + link.String()
}

func ratio(a, b float64) string {
	if b == 0 {
		return "-"
	}
	return strconv.FormatFloat(a/b, 'f', 2, 64) + "x"
}
