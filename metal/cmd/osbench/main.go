// Command osbench is netramp's A/B bench. With no arguments it runs the
// default bench on the t14 preset and prints the table and the verdict:
//
//	osbench [flags]            the bench (see -h)
//	osbench -suite parity      the parity suite: the kernel's TCP and A, B, P, D, all in real time on nic/wire
//	osbench sink [flags]       an osbench-lan/3 sink on the kernel's TCP
//	osbench source [flags]     an osbench-lan/3 source on the kernel's TCP
//	osbench row [flags]        one row of a built-in arm, as JSON lines (the subprocess arm)
//	osbench cpu [flags]        CPU cost of a bulk transfer: this TCP against gVisor's, MTU 1500 and 9000, without offload, with TSO, and with TSO and GRO; -conns 1,100,10000 spreads each row over that many connections at once
//	osbench mem [flags]        heap per connection (idle, half-open, 64 KB unacked, 64 KB unread) against gVisor
//	osbench figures [flags]    some arms' rows of a suite's evidence as JSON (the kernel's parity figures a host test holds this TCP to)
//	osbench soak [flags]       many clients against one listener for virtual hours under churn and faults; non-zero exit on a failed check
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"strings"

	"github.com/netramp/netramp/metal/bench"
	"github.com/netramp/netramp/metal/judge"
	"github.com/netramp/netramp/metal/osbench"
	"github.com/netramp/netramp/nic/wire"
)

func main() {
	if bench.IsKernelPeerHelper() {
		// The kernel peer's helper (osbench cpu -peer linux), run in its namespace.
		if err := bench.RunKernelPeerHelper(); err != nil {
			fmt.Fprintln(os.Stderr, "osbench:", err)
			os.Exit(1)
		}
		return
	}
	args := os.Args[1:]
	cmd := ""
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		cmd, args = args[0], args[1:]
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	var err error
	switch cmd {
	case "", "bench":
		err = runBench(ctx, args)
	case "sink":
		err = runSink(ctx, args)
	case "source":
		err = runSource(ctx, args)
	case "row":
		err = runRow(ctx, args)
	case "cpu":
		err = runCPU(ctx, args)
	case "mem":
		err = runMem(ctx, args)
	case "soak":
		err = runSoak(args)
	case "figures":
		err = runFigures(args)
	default:
		err = fmt.Errorf("unknown command %q (want sink, source, row, cpu, mem, soak, figures, or none for the bench)", cmd)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "osbench:", err)
		os.Exit(1)
	}
}

// Defaults of the bench, sized so the default run finishes in a few minutes
// on two cores.
const (
	defaultBytes = 250_000_000
	defaultConns = 5
	// gVisor's TCP opens its window slowly on t14 (ACK aggregation): at the
	// full size its rows alone would take minutes of real time.
	defaultArmBytes = "gVisor=20000000"
)

func runBench(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("osbench", flag.ContinueOnError)
	preset := fs.String("preset", "t14", "nic/wire preset of the path ("+strings.Join(wire.PresetNames(), ", ")+")")
	order := fs.String("arms", strings.Join(bench.DefaultOrder, ","), "arm names in row order")
	defs := fs.String("define", "", "arm definitions Name=def,... on top of the built-ins (A, B, P, D, rt:<arm>, rtk:<arm>, gvisor, linux[:<cc>], loopback, rev:<rev>:<arm>, boot:<command>, boot:qemu[:<arm>])")
	conns := fs.Int("conns", defaultConns, "connections per row (their figures are averaged)")
	nbytes := fs.Int64("bytes", defaultBytes, "payload bytes per connection")
	armBytes := fs.String("arm-bytes", defaultArmBytes, "per-arm payload overrides Name=bytes,... (for slow real-time arms)")
	dir := fs.String("dir", "upload", "upload or download")
	rulesPath := fs.String("rules", "", "rule file, written before the run (default: the built-in rules)")
	evidence := fs.String("evidence", "", "evidence folder (default ./evidence/<UTC timestamp>)")
	seed := fs.Int64("seed", 1, "base path seed (row i of each arm uses seed+i)")
	noPlot := fs.Bool("no-plot", false, "skip the plot")
	lateLimit := fs.Duration("late-limit", bench.DefaultLateLimit, "reject a real-time emulated row whose wire hands frames over later than this at p99")
	suite := fs.String("suite", "", "run a suite instead (parity: every arm in real time on the parity paths; its rows, rules and sizes are the suite's)")
	paths := fs.String("paths", "", "with -suite: only these of its paths (presets), comma-separated")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *suite != "" {
		mk, ok := bench.Suites[*suite]
		if !ok {
			return fmt.Errorf("-suite %q: want parity", *suite)
		}
		sc := bench.Config{Seed: *seed, Evidence: *evidence, Repo: repoRoot(), Out: os.Stdout, NoPlot: *noPlot, LateLimit: *lateLimit}
		if bench.IsTerminal(os.Stderr) {
			sc.Progress = os.Stderr
		}
		_, err := bench.RunSuite(ctx, mk(), sc, splitList(*paths))
		return err
	}
	d, err := osbench.ParseDirection(*dir)
	if err != nil {
		return err
	}
	df, err := bench.ParseDefinitions(*defs)
	if err != nil {
		return err
	}
	rules, rulesName := judge.DefaultRules, "the built-in rules"
	if *rulesPath != "" {
		b, err := os.ReadFile(*rulesPath)
		if err != nil {
			return fmt.Errorf("reading the rule file: %w", err)
		}
		rules, rulesName = string(b), *rulesPath
	}
	ab := map[string]int64{}
	for _, kv := range splitList(*armBytes) {
		name, v, ok := strings.Cut(kv, "=")
		n, err := strconv.ParseInt(v, 10, 64)
		if !ok || err != nil || n <= 0 {
			return fmt.Errorf("-arm-bytes %q: want Name=bytes", kv)
		}
		ab[name] = n
	}
	cfg := bench.Config{
		Order: splitList(*order), Defs: df, Preset: *preset, Dir: d, Bytes: *nbytes, ArmBytes: ab, Conns: *conns, Seed: *seed,
		Rules: rules, RulesName: rulesName, Evidence: *evidence, Repo: repoRoot(), Out: os.Stdout, NoPlot: *noPlot, LateLimit: *lateLimit,
	}
	if bench.IsTerminal(os.Stderr) {
		cfg.Progress = os.Stderr
	}
	_, err = bench.Run(ctx, cfg)
	return err
}

func splitList(s string) []string {
	var out []string
	for _, x := range strings.Split(s, ",") {
		if x = strings.TrimSpace(x); x != "" {
			out = append(out, x)
		}
	}
	return out
}

func repoRoot() string {
	out, err := exec.Command("git", "rev-parse", "--show-toplevel").Output()
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(out))
}
