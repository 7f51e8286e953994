//go:build linux

// Command linuxramp measures how fast a TCP connection opens its window over
// an emulated path, with the Linux kernel as sender and receiver (two
// namespaces), or with gVisor's or netramp's TCP sending to the kernel. It
// prints bytes received by each mark and the emulator's lateness per run,
// and marks runs whose p99 lateness exceeds -late as rejected.
//
//	go build -o /tmp/linuxramp ./metal/cmd/linuxramp && sudo /tmp/linuxramp -arms linux,gvisor,netramp -runs 3
package main

import (
	"context"
	"flag"
	"fmt"
	"net"
	"net/netip"
	"os"
	"runtime"
	"strings"
	"time"

	"github.com/netramp/netramp/nic/linuxpeer"
	"github.com/netramp/netramp/stack"
)

func main() {
	rate := flag.Float64("rate", 1e9, "bottleneck rate, bits/s")
	rtt := flag.Duration("rtt", 2*time.Millisecond, "round-trip propagation delay")
	loss := flag.Float64("loss", 0, "loss probability per frame, each way")
	runs := flag.Int("runs", 3, "runs per arm")
	arms := flag.String("arms", "linux", "comma-separated: linux (kernel to kernel), gvisor, netramp (stack to kernel)")
	cc := flag.String("cc", "cubic", "kernel congestion control")
	rt := flag.Bool("rt", false, "run the emulator's releasing threads SCHED_FIFO")
	split := flag.Bool("split", false, "linux arm: split GSO frames so loss and queue act per segment")
	late := flag.Duration("late", 0, "reject runs whose p99 lateness exceeds this (0 = RTT/10)")
	aggN := flag.Int("ackagg", 0, "hold the receiver's pure ACKs until this many data segments passed (0 = off)")
	aggHold := flag.Duration("ackhold", 0, "release held ACKs after at most this long (0 = no time limit)")
	ring := flag.Int("ring", 0, "stack arms: model the card's TX ring with this many slots at the path rate (0 = none)")
	procs := flag.Int("procs", 0, "GOMAXPROCS (0 = leave): extra Ps let the emulator's threads run beside a busy in-process stack")
	marksFlag := flag.String("marks", "100ms,300ms,1s,2s", "comma-separated instants to report bytes received by")
	flag.Parse()
	if *procs > 0 {
		runtime.GOMAXPROCS(*procs)
	}
	var marks []time.Duration
	for _, m := range strings.Split(*marksFlag, ",") {
		d, err := time.ParseDuration(strings.TrimSpace(m))
		if err != nil {
			fmt.Fprintf(os.Stderr, "-marks: %v\n", err)
			os.Exit(2)
		}
		marks = append(marks, d)
	}
	if *late == 0 {
		*late = *rtt / 10
	}
	cfg := linuxpeer.Config{Path: linuxpeer.Symmetric(int64(*rate), *rtt, *loss), CongestionControl: *cc, Realtime: *rt, SplitGSO: *split}
	cfg.Path.In.AckAggSegments, cfg.Path.In.AckAggHold = *aggN, *aggHold
	cfg.TxRing = *ring
	fmt.Printf("path: %.0f Mbit/s, RTT %v, loss %g, ACK aggregation %d segments / %v; marks %v; reject p99 lateness > %v\n",
		*rate/1e6, *rtt, *loss, *aggN, *aggHold, marks, *late)
	failed := false
	for _, arm := range strings.Split(*arms, ",") {
		for i := 0; i < *runs; i++ {
			r, st, err := run(arm, cfg, marks)
			if err != nil {
				fmt.Fprintf(os.Stderr, "%s run %d: %v\n", arm, i+1, err)
				failed = true
				continue
			}
			verdict := "ok"
			if st.Out.Lateness.Late(*late) || st.In.Lateness.Late(*late) {
				verdict = "REJECTED"
			}
			fmt.Printf("%-8s run %d: %v  [%s]\n", arm, i+1, r, verdict)
			fmt.Printf("%-8s        data: %v\n%-8s        acks: %v\n", "", st.Out.Lateness, "", st.In.Lateness)
			if arm != "linux" && cfg.TxRing > 0 {
				fmt.Printf("%-8s        writes refused at the full %d-slot ring: %d\n", "", cfg.TxRing, st.RingFull)
			}
		}
	}
	if failed {
		os.Exit(1)
	}
}

func run(arm string, cfg linuxpeer.Config, marks []time.Duration) (linuxpeer.RampResult, linuxpeer.PathStats, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	switch arm {
	case "linux":
		cfg.TxRing = 0 // the kernels' own device queues stand for their cards
		pr, err := linuxpeer.StartPair(ctx, cfg)
		if err != nil {
			return linuxpeer.RampResult{}, linuxpeer.PathStats{}, err
		}
		defer pr.Close()
		ln, err := pr.B.Listen(5001)
		if err != nil {
			return linuxpeer.RampResult{}, linuxpeer.PathStats{}, err
		}
		defer ln.Close()
		r, err := linuxpeer.MeasureRamp(ctx, func(ctx context.Context) (net.Conn, error) {
			return pr.A.Dial(ctx, netip.AddrPortFrom(pr.B.Addr(), 5001))
		}, ln, marks)
		return r, pr.Stats(), err
	case "gvisor", "netramp":
		p, err := linuxpeer.Start(ctx, cfg)
		if err != nil {
			return linuxpeer.RampResult{}, linuxpeer.PathStats{}, err
		}
		defer p.Close()
		s, err := stack.New(stack.Options{GVisorTCP: arm == "gvisor", NICs: []stack.NIC{{Link: p.Link(), Addr: p.LocalPrefix()}}})
		if err != nil {
			return linuxpeer.RampResult{}, linuxpeer.PathStats{}, err
		}
		defer s.Close()
		ln, err := p.Listen(5001)
		if err != nil {
			return linuxpeer.RampResult{}, linuxpeer.PathStats{}, err
		}
		defer ln.Close()
		r, err := linuxpeer.MeasureRamp(ctx, func(ctx context.Context) (net.Conn, error) {
			return s.Dial(ctx, netip.AddrPortFrom(p.Addr(), 5001))
		}, ln, marks)
		return r, p.Stats(), err
	}
	return linuxpeer.RampResult{}, linuxpeer.PathStats{}, fmt.Errorf("unknown arm %q (linux, gvisor, netramp)", arm)
}
