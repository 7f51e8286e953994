//go:build linux

// Command linuxramp measures how fast a TCP connection opens its window over
// nic/wire's path in real time, with the Linux kernel as sender and receiver
// (two namespaces), or with gVisor's TCP or one of this TCP's arms (A, B, P)
// sending to the kernel. It prints bytes received by each mark and the
// wire's lateness per run, and marks runs whose p99 lateness exceeds -late
// as rejected. The bench (osbench) is the judged comparison; this is a
// quick probe of one path.
//
//	go build -o /tmp/linuxramp ./metal/cmd/linuxramp && sudo /tmp/linuxramp -arms linux,gvisor,B -runs 3
package main

import (
	"context"
	"flag"
	"fmt"
	"net"
	"net/netip"
	"os"
	"strings"
	"time"

	"github.com/netramp/netramp/metal/arms"
	"github.com/netramp/netramp/nic/linuxpeer"
	"github.com/netramp/netramp/nic/wire"
	"github.com/netramp/netramp/stack"
)

func main() {
	preset := flag.String("preset", "", "nic/wire preset of the path (overrides -rate, -rtt, -loss, -ackagg, -ackhold)")
	rate := flag.Float64("rate", 100e6, "bottleneck rate, bits/s")
	rtt := flag.Duration("rtt", 10*time.Millisecond, "round-trip propagation delay")
	loss := flag.Float64("loss", 0, "loss probability per frame, each way")
	runs := flag.Int("runs", 3, "runs per arm")
	armList := flag.String("arms", "linux", "comma-separated: linux (kernel to kernel), gvisor, or an arm of this TCP ("+strings.Join(arms.Names(), ", ")+") sending to the kernel")
	cc := flag.String("cc", "cubic", "kernel congestion control")
	late := flag.Duration("late", 500*time.Microsecond, "reject runs whose p99 lateness exceeds this")
	aggN := flag.Int("ackagg", 0, "hold the receiver's pure ACKs until this many data segments passed (0 = off)")
	aggHold := flag.Duration("ackhold", 0, "release held ACKs after at most this long (0 = no time limit)")
	marksFlag := flag.String("marks", "100ms,300ms,1s,2s", "comma-separated instants to report bytes received by")
	flag.Parse()
	var marks []time.Duration
	for _, m := range strings.Split(*marksFlag, ",") {
		d, err := time.ParseDuration(strings.TrimSpace(m))
		if err != nil {
			fail("-marks: %v", err)
		}
		marks = append(marks, d)
	}
	d := wire.Dir{RateBps: int64(*rate), Delay: *rtt / 2, Loss: *loss}
	path := wire.Config{AtoB: d, BtoA: d, Seed: 1}
	path.BtoA.AckAggSegments, path.BtoA.AckAggHold = *aggN, *aggHold
	desc := fmt.Sprintf("%.0f Mbit/s, RTT %v, loss %g, ACK aggregation %d segments / %v", *rate/1e6, *rtt, *loss, *aggN, *aggHold)
	if *preset != "" {
		var err error
		if path, err = wire.Preset(*preset); err != nil {
			fail("-preset: %v", err)
		}
		desc = "preset " + *preset
	}
	// The kernel's device queue stands for its card: no TX ring model on a
	// side the kernel feeds.
	path.BtoA.TxRing = 0
	fmt.Printf("path: %s; marks %v; reject p99 lateness > %v\n", desc, marks, *late)
	failed := false
	for _, arm := range strings.Split(*armList, ",") {
		for i := 0; i < *runs; i++ {
			r, w, err := run(arm, linuxpeer.Config{Wire: path, CongestionControl: *cc}, marks)
			if err != nil {
				fmt.Fprintf(os.Stderr, "%s run %d: %v\n", arm, i+1, err)
				failed = true
				continue
			}
			l := w.Lateness()
			verdict := "ok"
			if l.Late(*late) {
				verdict = "REJECTED"
			}
			fmt.Printf("%-8s run %d: %v  [%s]\n%-8s        %v\n", arm, i+1, r, verdict, "", l)
			if ab, _ := w.Stats(); ab.DropRing > 0 {
				fmt.Printf("%-8s        writes refused at the full %d-slot ring: %d\n", "", path.AtoB.TxRing, ab.DropRing)
			}
		}
	}
	if failed {
		os.Exit(1)
	}
}

func fail(format string, args ...any) {
	fmt.Fprintf(os.Stderr, format+"\n", args...)
	os.Exit(2)
}

// run measures one ramp of arm and returns it with the wire it ran on
// (closed, its statistics final).
func run(arm string, cfg linuxpeer.Config, marks []time.Duration) (linuxpeer.RampResult, *wire.Wire, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if arm == "linux" {
		cfg.Wire.AtoB.TxRing = 0
		pr, err := linuxpeer.StartPair(ctx, cfg)
		if err != nil {
			return linuxpeer.RampResult{}, nil, err
		}
		defer pr.Close()
		ln, err := pr.B.Listen(5001)
		if err != nil {
			return linuxpeer.RampResult{}, nil, err
		}
		defer ln.Close()
		r, err := linuxpeer.MeasureRamp(ctx, func(ctx context.Context) (net.Conn, error) {
			return pr.A.Dial(ctx, netip.AddrPortFrom(pr.B.Addr(), 5001))
		}, ln, marks)
		return r, pr.Wire(), err
	}
	opts := stack.Options{GVisorTCP: arm == "gvisor"}
	if arm != "gvisor" {
		a, err := arms.Lookup(arm)
		if err != nil {
			return linuxpeer.RampResult{}, nil, fmt.Errorf("%w (or linux, gvisor)", err)
		}
		opts.TCP = a.Options
	}
	p, err := linuxpeer.Start(ctx, cfg)
	if err != nil {
		return linuxpeer.RampResult{}, nil, err
	}
	defer p.Close()
	opts.NICs = []stack.NIC{{Link: p.Link(), Addr: p.LocalPrefix()}}
	s, err := stack.New(opts)
	if err != nil {
		return linuxpeer.RampResult{}, nil, err
	}
	defer s.Close()
	ln, err := p.Listen(5001)
	if err != nil {
		return linuxpeer.RampResult{}, nil, err
	}
	defer ln.Close()
	r, err := linuxpeer.MeasureRamp(ctx, func(ctx context.Context) (net.Conn, error) {
		return s.Dial(ctx, netip.AddrPortFrom(p.Addr(), 5001))
	}, ln, marks)
	return r, p.Wire(), err
}
