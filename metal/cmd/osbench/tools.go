package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"net"
	"os"
	"runtime"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/netramp/netramp/metal/arms"
	"github.com/netramp/netramp/metal/bench"
	"github.com/netramp/netramp/metal/osbench"
	"github.com/netramp/netramp/metal/report"
)

// runSink accepts connections one after another and prints each receiver's
// report as a JSON line.
func runSink(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("osbench sink", flag.ContinueOnError)
	listen := fs.String("listen", ":5201", "address to listen on")
	n := fs.Int("n", 0, "connections to serve before exiting (0 = until interrupted)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	ln, err := net.Listen("tcp", *listen)
	if err != nil {
		return err
	}
	defer ln.Close()
	go func() { <-ctx.Done(); ln.Close() }()
	fmt.Fprintf(os.Stderr, "osbench sink: %s on %s\n", osbench.Version, ln.Addr())
	for i := 0; *n == 0 || i < *n; i++ {
		c, err := ln.Accept()
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return err
		}
		r, err := (&osbench.Sink{}).Serve(c, time.Now())
		if err != nil {
			fmt.Fprintf(os.Stderr, "osbench sink: %s: %v\n", c.RemoteAddr(), err)
			continue
		}
		os.Stdout.Write(r.MarshalLine())
	}
	return nil
}

// runSource dials the sink for each connection and prints the receiver's
// report as a JSON line, then a one-line summary on stderr.
func runSource(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("osbench source", flag.ContinueOnError)
	addr := fs.String("connect", "", "sink address host:port")
	dir := fs.String("dir", "upload", "upload or download")
	nbytes := fs.Int64("bytes", 250_000_000, "payload bytes per connection")
	conns := fs.Int("conns", 1, "connections, one after another")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *addr == "" {
		return fmt.Errorf("source: -connect host:port is required")
	}
	d, err := osbench.ParseDirection(*dir)
	if err != nil {
		return err
	}
	for i := 0; i < *conns; i++ {
		var dl net.Dialer
		c, err := dl.DialContext(ctx, "tcp", *addr)
		if err != nil {
			return err
		}
		r, err := (&osbench.Source{}).Run(c, d, *nbytes)
		if err != nil {
			return fmt.Errorf("connection %d: %w", i, err)
		}
		os.Stdout.Write(r.MarshalLine())
		fmt.Fprintf(os.Stderr, "connection %d: %.1f MB/s, received by 100 ms/300 ms/1 s/2 s: %.2f/%.2f/%.1f/%.1f MB\n", i,
			r.GoodputMBps, mb(r, 0), mb(r, 1), mb(r, 2), mb(r, 3))
	}
	return nil
}

func mb(r osbench.Report, i int) float64 {
	if i >= len(r.Marks) {
		return 0
	}
	return float64(r.Marks[i].FromFirst) / 1e6
}

// runRow runs one row of a built-in arm and prints its records as JSON lines:
// what a rev: arm's subprocess speaks.
func runRow(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("osbench row", flag.ContinueOnError)
	arm := fs.String("arm", arms.Default(), "built-in arm definition (A, B, P, D, gvisor, linux, loopback); the stack's default arm when not named")
	preset := fs.String("preset", "t14", "nic/wire preset")
	dir := fs.String("dir", "upload", "upload or download")
	nbytes := fs.Int64("bytes", defaultBytes, "payload bytes per connection")
	conns := fs.Int("conns", defaultConns, "connections")
	seed := fs.Int64("seed", 1, "path seed")
	if err := fs.Parse(args); err != nil {
		return err
	}
	d, err := osbench.ParseDirection(*dir)
	if err != nil {
		return err
	}
	a, err := bench.Build(*arm, *arm, bench.ArmOptions{})
	if err != nil {
		return err
	}
	if why := a.Unavailable(); why != "" {
		return fmt.Errorf("arm %s unavailable: %s", *arm, why)
	}
	recs, err := a.RunRow(ctx, bench.RowSpec{Preset: *preset, Dir: d, Bytes: *nbytes, Conns: *conns, Seed: *seed})
	enc := json.NewEncoder(os.Stdout)
	for i := range recs {
		recs[i].Arm, recs[i].Conn, recs[i].Timebase, recs[i].Path = *arm, i, a.Timebase(), a.PathName(*preset)
		if err := enc.Encode(recs[i]); err != nil {
			return err
		}
	}
	return err
}

// runCPU prints the CPU benchmark: this TCP and gVisor's, each a bulk
// transfer between two stacks of this process over an in-memory link.
func runCPU(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("osbench cpu", flag.ContinueOnError)
	nbytes := fs.Int64("bytes", 256_000_000, "payload bytes per TCP and row, split over the rounds")
	rounds := fs.Int("rounds", 4, "transfers per TCP and row, the TCPs taking turns in ABBA order")
	mtus := fs.String("mtu", "1500,9000", "MTUs, comma-separated")
	procs := fs.String("cores", "1,2", "GOMAXPROCS of each set of rows, comma-separated")
	profile := fs.String("cpuprofile", "", "write a CPU profile of the whole run to this file, each transfer's samples labelled with its TCP (go tool pprof -tagfocus tcp=netramp or tcp=gVisor)")
	memprofile := fs.String("memprofile", "", "write an allocation profile of the whole run to this file (pprof -sample_index=alloc_objects)")
	tcps := fs.String("tcp", "netramp,gVisor", "TCPs to run, comma-separated (one alone for a profile of its own)")
	tsoList := fs.String("tso", "off,on,gro", "links, comma-separated: off (MTU-sized packets), on (host GSO of 64 KiB, cut into MTU-sized frames like a NIC's TSO), gro (the same GSO, delivered whole like a receiver's GRO)")
	connList := fs.String("conns", "1", "connections each transfer spreads its bytes over, all open and writing at once, comma-separated: a set of rows for each (e.g. 1,100,10000)")
	peer := fs.String("peer", "memory", "the other end: memory (two stacks of this process over an in-memory link, the rows above) or linux (a kernel socket in a network namespace this run makes and removes, across a TAP with the virtio-net header, GSO out and GRO in; root only; -mtu, -bytes, -rounds, -tcp and -dir apply)")
	dirList := fs.String("dir", "to,from", "with -peer linux: directions, comma-separated: to (this TCP sends to the kernel) and from (the kernel sends to this TCP)")
	sink := fs.String("sink", "copy", "how the receiver reads: copy (io.Copy(io.Discard, conn), which takes a conn's io.WriterTo where it has one: ours has, gonet's has not) or read (a loop of Read into one 32 KB buffer, on both TCPs)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	var ps []int
	for _, p := range strings.Split(*procs, ",") {
		v, err := strconv.Atoi(strings.TrimSpace(p))
		if err != nil || v < 1 {
			return fmt.Errorf("cpu: -cores %q is not a positive count", p)
		}
		ps = append(ps, v)
	}
	if *profile != "" {
		f, err := os.Create(*profile)
		if err != nil {
			return err
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return err
		}
		defer pprof.StopCPUProfile()
	}
	if *memprofile != "" {
		runtime.MemProfileRate = 1 // every allocation, so the profile's counts are exact (and the run slower)
	}
	var ms []uint32
	for _, m := range strings.Split(*mtus, ",") {
		v, err := strconv.ParseUint(strings.TrimSpace(m), 10, 32)
		if err != nil || v < 576 || v > 65535 {
			return fmt.Errorf("cpu: MTU %q is not in [576, 65535]", m)
		}
		ms = append(ms, uint32(v))
	}
	switch *peer {
	case "memory":
	case "linux":
		err := runKernelCPU(ctx, *nbytes, *rounds, ms, splitList(*tcps), *dirList)
		return errors.Join(err, writeMemProfile(*memprofile))
	default:
		return fmt.Errorf("cpu: -peer %q is not memory or linux", *peer)
	}
	var links []bench.Offload
	for _, v := range splitList(*tsoList) {
		o, err := bench.ParseOffload(v)
		if err != nil {
			return fmt.Errorf("cpu: -tso: %w", err)
		}
		links = append(links, o)
	}
	if *rounds < 1 {
		return fmt.Errorf("cpu: -rounds %d is not a positive count", *rounds)
	}
	sk, err := bench.ParseSink(*sink)
	if err != nil {
		return fmt.Errorf("cpu: -sink: %w", err)
	}
	var cs []int
	for _, c := range splitList(*connList) {
		v, err := strconv.Atoi(c)
		if err != nil || v < 1 || v > bench.MaxCPUConns {
			return fmt.Errorf("cpu: -conns %q is not a count in [1, %d]", c, bench.MaxCPUConns)
		}
		cs = append(cs, v)
	}
	rs, err := bench.CPU(ctx, bench.CPUConfig{Bytes: *nbytes, MTUs: ms, Procs: ps, TCPs: splitList(*tcps), Links: links, Rounds: *rounds, Sink: sk, Conns: cs})
	if ferr := writeMemProfile(*memprofile); ferr != nil {
		return ferr
	}
	if len(rs) > 0 {
		fmt.Printf("osbench cpu: %d MB per TCP and row in %d transfers after an unmeasured one, the TCPs taking turns (ABBA), two stacks in one process over an in-memory link (real time; figures, not thresholds)\n", *nbytes/1e6, *rounds)
		fmt.Printf("-conns: a transfer opens its connections (%d dials at a time), measures the live heap with all open and idle (heap KiB/end: over 2 ends a connection; the GC it takes is not counted), then every connection writes its share of the bytes at once; p50/p99 done: a connection's time from that start to its sink's end of stream, over every round's connections; CPU, wall, allocs, packets and RTOs run from that start to the last end, the opening's CPU apart (open CPU/conn)\n", bench.CPUDialers)
		if slices.ContainsFunc(cs, func(c int) bool { return c > 1 }) {
			fmt.Print("bytes per connection (a round's bytes over its connections; at a few KB a connection's close and first window are most of its cost, for either TCP):")
			for _, c := range cs {
				fmt.Printf(" %d conn(s) %.1f KB", c, float64(*nbytes)/float64(*rounds)/float64(c)/1e3)
			}
			fmt.Println()
		}
		fmt.Printf("links: all rows nic/gso's pipe (gVisor's pipe inside; no GSO offered on plain rows), each write of several packets delivered as one burst; both TCPs on the same links; ours writes a send opportunity's segments in one write and ACKs per burst, gVisor's writes one packet a call\n")
		fmt.Printf("%s\n\n", bench.CPUConns(sk))
		bench.WriteCPU(os.Stdout, rs)
	}
	return err
}

// writeMemProfile writes the allocation profile to path, if one was asked.
func writeMemProfile(path string) error {
	if path == "" {
		return nil
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	defer f.Close()
	runtime.GC() // the profile holds what the last completed GC published
	return pprof.Lookup("allocs").WriteTo(f, 0)
}

// runKernelCPU prints the CPU benchmark against the Linux kernel as the
// peer, or says why this host cannot run it and returns nil.
func runKernelCPU(ctx context.Context, nbytes int64, rounds int, mtus []uint32, tcps []string, dirList string) error {
	var dirs []bench.KernelDir
	for _, v := range splitList(dirList) {
		d, err := bench.ParseKernelDir(v)
		if err != nil {
			return fmt.Errorf("cpu: -dir: %w", err)
		}
		dirs = append(dirs, d)
	}
	if why := bench.KernelPeerUnavailable(); why != "" {
		fmt.Printf("osbench cpu -peer linux: skipped: %s\n", why)
		return nil
	}
	rs, err := bench.KernelCPU(ctx, bench.KernelCPUConfig{Bytes: nbytes, MTUs: mtus, Rounds: rounds, TCPs: tcps, Dirs: dirs})
	if len(rs) > 0 {
		fmt.Printf("osbench cpu -peer linux: %d MB per TCP, MTU and direction in %d transfers after an unmeasured one, the TCPs taking turns (ABBA), GOMAXPROCS %d (real time; figures, not thresholds)\n", nbytes/1e6, rounds, runtime.GOMAXPROCS(0))
		fmt.Printf("link: each TCP's stack in this process on a fresh nic/tap device (IFF_VNET_HDR, TUNSETOFFLOAD; Options.GSO and GRO) inside a network namespace, the peer a kernel socket (cubic) in a helper process there; the sink is io.Copy(io.Discard, conn) here, 256 KB reads there\n")
		fmt.Printf("CPU-s per GB: this process (user + system, so the TAP reads and writes and the kernel work done inline in them); peer: the helper's (its socket reads or writes), the same kernel for both TCPs; from the connection's establishment to the receiver's end of stream\n\n")
		bench.WriteKernelCPU(os.Stdout, rs)
	}
	return err
}

func runMem(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("osbench mem", flag.ContinueOnError)
	conns := fs.Int("conns", 4000, "connections per case")
	if err := fs.Parse(args); err != nil {
		return err
	}
	rs, err := bench.Mem(ctx, bench.MemConfig{Conns: *conns})
	if len(rs) > 0 {
		fmt.Printf("osbench mem: live heap per connection end, %d connections per case, both ends in one process (half-open: the listener's end only)\n\n", *conns)
		bench.WriteMem(os.Stdout, rs)
	}
	return err
}

// runFigures prints the rows of some arms from a suite's evidence folder as
// report.Figures JSON: by default the kernel's rows on the parity suite's
// parity-* paths, the figures host_tests holds the default arm to.
//
//	osbench figures -evidence evidence/suite-parity-<UTC> -command 'sudo go run ./metal/cmd/osbench -suite parity' > host_tests/testdata/kernel-parity-<date>.json
func runFigures(args []string) error {
	fs := flag.NewFlagSet("osbench figures", flag.ContinueOnError)
	evidence := fs.String("evidence", "", "the suite's evidence folder (required)")
	var parity []string
	for _, p := range bench.ParitySuite().Paths {
		if strings.HasPrefix(p.Preset, "parity-") {
			parity = append(parity, p.Preset)
		}
	}
	paths := fs.String("paths", strings.Join(parity, ","), "comma-separated presets (sub-folders of -evidence)")
	armList := fs.String("arms", "Linux-cubic,Linux-bbr", "comma-separated arms whose rows to keep")
	command := fs.String("command", "", "the command that ran the suite, for the record (required)")
	note := fs.String("note", "", "anything else the record needs")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *evidence == "" || *command == "" {
		return errors.New("figures: -evidence and -command are required")
	}
	f, err := report.ReadFigures(*evidence, strings.Split(*paths, ","), strings.Split(*armList, ","))
	if err != nil {
		return err
	}
	f.Command, f.Note = *command, *note
	b, err := json.MarshalIndent(f, "", "  ")
	if err != nil {
		return err
	}
	_, err = os.Stdout.Write(append(b, '\n'))
	return err
}
