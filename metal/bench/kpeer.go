package bench

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime/pprof"
	"slices"
	"strings"
	"text/tabwriter"
	"time"
)

// KernelDir is which way a kernel-peer transfer carries its bytes.
type KernelDir uint8

const (
	// ToKernel: the TCP in this process sends, a kernel socket receives.
	ToKernel KernelDir = iota
	// FromKernel: a kernel socket sends, the TCP in this process receives.
	FromKernel
)

// kernelDirs are the KernelDirs by name, as osbench's -dir flag gives them.
var kernelDirs = map[string]KernelDir{"to": ToKernel, "from": FromKernel}

// ParseKernelDir is the KernelDir named s: to or from (the kernel).
func ParseKernelDir(s string) (KernelDir, error) {
	if d, ok := kernelDirs[s]; ok {
		return d, nil
	}
	return 0, fmt.Errorf("bench: cpu: direction %q is not to or from", s)
}

// String is the direction column: "to kernel" or "from kernel".
func (d KernelDir) String() string {
	if d == FromKernel {
		return "from kernel"
	}
	return "to kernel"
}

// KernelCPUConfig sizes the CPU benchmark against the Linux kernel as the
// peer: each TCP in this process on a TAP device with the virtio-net
// header, GSO out and GRO in (nic/tap Options.GSO and GRO), moving bytes
// to or from a kernel socket in a network namespace the run makes and
// removes.
type KernelCPUConfig struct {
	Bytes int64    // payload per TCP and row, split over the rounds
	MTUs  []uint32 // the TAP's MTU, each a set of rows
	// Rounds as in CPUConfig: transfers per TCP and row in ABBA order,
	// after one unmeasured transfer each; 0 = 4.
	Rounds int
	TCPs   []string    // "netramp", "gVisor" (default: both)
	Dirs   []KernelDir // default: ToKernel, then FromKernel
}

// MaxKernelMTU bounds KernelCPUConfig.MTUs: a TAP's jumbo frames, as a
// NIC's; the kernel accepts more, no NIC this stands for does.
const MaxKernelMTU = 9000

// check applies the defaults and validates cfg; an error names the field.
func (c *KernelCPUConfig) check() error {
	if c.Rounds == 0 {
		c.Rounds = 4
	}
	if c.Rounds < 0 {
		return fmt.Errorf("bench: cpu -peer linux: Rounds = %d, want 0 (4) or more", c.Rounds)
	}
	if c.Bytes <= 0 || c.Bytes/int64(c.Rounds) < MinRoundBytes {
		return fmt.Errorf("bench: cpu -peer linux: Bytes = %d over %d rounds is under %d bytes a round", c.Bytes, c.Rounds, MinRoundBytes)
	}
	if len(c.MTUs) == 0 {
		return errors.New("bench: cpu -peer linux: MTUs is empty, want at least one")
	}
	for _, m := range c.MTUs {
		if m < 576 || m > MaxKernelMTU {
			return fmt.Errorf("bench: cpu -peer linux: MTUs holds %d, want each in [576, %d]", m, MaxKernelMTU)
		}
	}
	if len(c.TCPs) == 0 {
		c.TCPs = cpuTCPs
	}
	for _, t := range c.TCPs {
		if !slices.Contains(cpuTCPs, t) {
			return fmt.Errorf("bench: cpu -peer linux: TCPs holds %q, not one of %s", t, strings.Join(cpuTCPs, ", "))
		}
	}
	if len(c.Dirs) == 0 {
		c.Dirs = []KernelDir{ToKernel, FromKernel}
	}
	for _, d := range c.Dirs {
		if d > FromKernel {
			return fmt.Errorf("bench: cpu -peer linux: Dirs holds %d, not ToKernel or FromKernel", d)
		}
	}
	return nil
}

// KernelCPUResult is one row of a TCP against the kernel: CPUResult's
// figures (CPU is this process's, Packets unset), and the kernel peer's.
type KernelCPUResult struct {
	CPUResult
	Dir KernelDir
	// PeerCPU is the helper process's user and system CPU (getrusage) that
	// holds the kernel socket: the kernel's TCP work done in its reads or
	// writes and the copy to or from user space. The kernel's work done
	// inline in this process's TAP writes (the namespace's receive path
	// entered from tun's write) is in CPU, not here.
	PeerCPU         time.Duration
	PeerCPUSecPerGB float64
	// GSOOut is the GSO packets this TCP wrote to the TAP whole (nic/tap
	// tx.gso), GROIn the kernel's GSO frames it took whole (rx.gso.whole).
	GSOOut, GROIn uint64
	// FramesOut and FramesIn are every frame this TCP's stack wrote to the
	// TAP and took from it (nic/tap tx.frames, rx.frames): data one way,
	// ACKs the other. A frame written runs the kernel's side of it inline
	// in the write (its receive path, and what it sends in answer).
	FramesOut, FramesIn uint64
}

func (r *KernelCPUResult) add(x KernelCPUResult) {
	if r.TCP == "" {
		r.Dir = x.Dir
	}
	r.CPUResult.add(x.CPUResult)
	r.PeerCPU += x.PeerCPU
	r.GSOOut += x.GSOOut
	r.GROIn += x.GROIn
	r.FramesOut += x.FramesOut
	r.FramesIn += x.FramesIn
	r.PeerCPUSecPerGB = r.PeerCPU.Seconds() / (float64(r.Bytes) / 1e9)
}

// kernelSpec is one transfer against the kernel.
type kernelSpec struct {
	Bytes  int64
	MTU    uint32
	GVisor bool
	Dir    KernelDir
}

// kernelPeer is the namespace, its kernel socket's helper process, and a
// way to run one transfer against them; Close removes all of it.
type kernelPeer interface {
	transfer(ctx context.Context, sp kernelSpec) (KernelCPUResult, error)
	Close() error
}

// openKernelPeer makes the peer (kpeer_linux.go); a variable so the tests
// can see the rounds' order without a kernel.
var openKernelPeer = newKernelPeer

// KernelPeerUnavailable says why this host cannot run the kernel peer (not
// Linux, not root, no /dev/net/tun, no iproute2), or "" if it can.
func KernelPeerUnavailable() string { return kernelPeerUnavailable() }

// KernelCPU runs, for each MTU and direction, this TCP and gVisor's against
// a kernel socket in turns (ABBA, as CPU's rows), after one unmeasured
// transfer of each. The namespace and helper are made once and removed
// before it returns, error or not.
func KernelCPU(ctx context.Context, cfg KernelCPUConfig) (out []KernelCPUResult, err error) {
	if err := cfg.check(); err != nil {
		return nil, err
	}
	p, err := openKernelPeer(ctx) // fails on a host that cannot (KernelPeerUnavailable)
	if err != nil {
		return nil, err
	}
	defer func() { err = errors.Join(err, p.Close()) }()
	run := func(name string, sp kernelSpec) (r KernelCPUResult, err error) {
		pprof.Do(ctx, pprof.Labels("tcp", name), func(ctx context.Context) {
			sp.GVisor = name == "gVisor"
			r, err = p.transfer(ctx, sp)
		})
		return r, err
	}
	rounds := cfg.Rounds
	for _, mtu := range cfg.MTUs {
		for _, dir := range cfg.Dirs {
			rs, err := abbaRow(ctx, cfg.TCPs, rounds, cfg.Bytes, KernelCPUResult{}, func(name string, n int64) (KernelCPUResult, error) {
				return run(name, kernelSpec{Bytes: n, MTU: mtu, Dir: dir})
			})
			if err != nil {
				return out, err
			}
			out = append(out, rs...)
		}
	}
	return out, nil
}

// WriteKernelCPU prints the rows, a netramp/gVisor ratio line for each MTU
// and direction, and each row's CPU ratio by round.
func WriteKernelCPU(w io.Writer, rs []KernelCPUResult) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "MTU\tdirection\tTCP\tMB/s\tCPU-s per GB\tpeer CPU-s per GB\tallocs per MB\tframes out per MB\tframes in per MB\tGSO out per MB\tGRO in per MB\twall\tCPU\tpeer CPU")
	type key struct {
		mtu uint32
		dir KernelDir
	}
	by := map[key]map[string]KernelCPUResult{}
	var keys []key
	for _, r := range rs {
		k := key{r.MTU, r.Dir}
		if by[k] == nil {
			by[k] = map[string]KernelCPUResult{}
			keys = append(keys, k)
		}
		by[k][r.TCP] = r
		mb := float64(r.Bytes) / 1e6
		fmt.Fprintf(tw, "%d\t%s\t%s\t%.0f\t%.2f\t%.2f\t%.1f\t%.1f\t%.1f\t%.1f\t%.1f\t%s\t%s\t%s\n", r.MTU, r.Dir, r.TCP, r.MBps, r.CPUSecPerGB, r.PeerCPUSecPerGB, r.AllocsPerMB,
			float64(r.FramesOut)/mb, float64(r.FramesIn)/mb, float64(r.GSOOut)/mb, float64(r.GROIn)/mb, r.Wall.Round(time.Millisecond), r.CPU.Round(time.Millisecond), r.PeerCPU.Round(time.Millisecond))
	}
	for _, k := range keys {
		a, okA := by[k]["netramp"]
		b, okB := by[k]["gVisor"]
		if okA && okB {
			fmt.Fprintf(tw, "%d\t%s\tnetramp/gVisor\t%s\t%s\t%s\t%s\t%s\t%s\t\t\t\t\t\n", k.mtu, k.dir, ratio(a.MBps, b.MBps), ratio(a.CPUSecPerGB, b.CPUSecPerGB),
				ratio(a.PeerCPUSecPerGB, b.PeerCPUSecPerGB), ratio(a.AllocsPerMB, b.AllocsPerMB), ratio(float64(a.FramesOut), float64(b.FramesOut)), ratio(float64(a.FramesIn), float64(b.FramesIn)))
		}
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	printed := false
	for _, k := range keys {
		a, b := by[k]["netramp"], by[k]["gVisor"]
		if len(a.RoundCPU) < 2 || len(a.RoundCPU) != len(b.RoundCPU) {
			continue
		}
		printed = true
		fmt.Fprintf(w, "\nMTU %d, %s, CPU by round (ABBA), netramp over gVisor:", k.mtu, k.dir)
		for i := range a.RoundCPU {
			fmt.Fprintf(w, " %s", ratio(a.RoundCPU[i].Seconds(), b.RoundCPU[i].Seconds()))
		}
	}
	if printed {
		fmt.Fprintln(w)
	}
	return nil
}

// The kernel peer's helper is this program again, run inside the
// namespace with KernelPeerHelperEnv set to the address it listens on. It
// speaks one line a transfer on its standard input and output:
//
//	parent: "sink\n" or "source <bytes>\n"   (before dialling)
//	helper: "done <bytes> <cpu ns>\n"        (the bytes it read or wrote)
//
// and serves the next connection accepted as the line said.
const KernelPeerHelperEnv = "NETRAMP_KPEER_HELPER"

// IsKernelPeerHelper reports whether this process was started as the
// kernel peer's helper: a main (or TestMain) then calls
// RunKernelPeerHelper before anything else.
func IsKernelPeerHelper() bool { return os.Getenv(KernelPeerHelperEnv) != "" }

// helperLine is the helper's report of one transfer.
type helperLine struct {
	Bytes int64
	CPU   time.Duration
}

func parseHelperLine(s string) (helperLine, error) {
	var h helperLine
	var ns int64
	if _, err := fmt.Sscanf(s, "done %d %d", &h.Bytes, &ns); err != nil {
		return h, fmt.Errorf("bench: kernel peer helper said %q: %v", strings.TrimSpace(s), err)
	}
	h.CPU = time.Duration(ns)
	return h, nil
}

// readHelperLine reads the helper's next line.
func readHelperLine(r *bufio.Reader) (helperLine, error) {
	s, err := r.ReadString('\n')
	if err != nil {
		return helperLine{}, fmt.Errorf("bench: kernel peer helper: %w", err)
	}
	return parseHelperLine(s)
}
