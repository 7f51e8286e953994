//go:build linux

package bench

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"runtime"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
	"gvisor.dev/gvisor/pkg/tcpip"
	"gvisor.dev/gvisor/pkg/tcpip/header"

	"github.com/netramp/netramp/nic/netns"
	"github.com/netramp/netramp/nic/tap"
	"github.com/netramp/netramp/stack"
)

// The kernel peer's link: our stack at sourcePrefix with ourMAC, the
// kernel at sinkPrefix's address with kernelMAC, each a permanent
// neighbour of the other so no ARP runs.
var (
	kpeerOurMAC    = net.HardwareAddr{0x02, 0, 0x5e, 0, 1, 1}
	kpeerKernelMAC = net.HardwareAddr{0x02, 0, 0x5e, 0, 1, 2}
)

// kpeerPort is where the helper listens, on every address of its namespace.
const kpeerPort = 5204

// kpeerTCPMem is the namespace's tcp_rmem/tcp_wmem maximum: the 4 MB
// default caps the kernel's window (FACTS: raise it inside the namespace).
const kpeerTCPMem = 32 << 20

func kernelPeerUnavailable() string {
	if err := netns.Check(); err != nil {
		return err.Error()
	}
	return ""
}

// linuxKernelPeer is a namespace with the helper running in it; each
// transfer opens a fresh TAP device in the namespace for a fresh stack.
type linuxKernelPeer struct {
	ns   *netns.NS
	cmd  *exec.Cmd
	in   io.WriteCloser
	out  *bufio.Reader
	devs atomic.Uint32
	once sync.Once
	err  error
}

// newKernelPeer makes the namespace (deleting any a dead run left, see
// netns.Create), tunes its TCP and starts the helper inside it. On error
// nothing is left behind.
func newKernelPeer(ctx context.Context) (_ kernelPeer, err error) {
	ns, err := netns.Create("kpeer")
	if err != nil {
		return nil, err
	}
	p := &linuxKernelPeer{ns: ns}
	defer func() {
		if err != nil {
			p.Close()
		}
	}()
	if err := ns.DisableIPv6(); err != nil {
		return nil, err
	}
	mem := fmt.Sprint(kpeerTCPMem)
	for _, kv := range [][2]string{
		{"net.ipv4.tcp_rmem", "4096 131072 " + mem},
		{"net.ipv4.tcp_wmem", "4096 16384 " + mem},
		{"net.ipv4.tcp_no_metrics_save", "1"},
	} {
		if err := ns.Sysctl(kv[0], kv[1]); err != nil {
			return nil, err
		}
	}
	exe, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("bench: kernel peer helper: %w", err)
	}
	// The helper is this program, run inside the namespace; it dies with
	// the thread that started it (Pdeathsig), so a killed run leaves no
	// helper behind, and the next run deletes its namespace.
	cmd := ns.Command(context.WithoutCancel(ctx), exe)
	cmd.Env = append(os.Environ(), fmt.Sprintf("%s=0.0.0.0:%d", KernelPeerHelperEnv, kpeerPort))
	cmd.Stderr = os.Stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if p.in, err = cmd.StdinPipe(); err != nil {
		return nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	runtime.LockOSThread() // Pdeathsig follows the starting thread, not the process
	err = cmd.Start()
	runtime.UnlockOSThread()
	if err != nil {
		return nil, fmt.Errorf("bench: kernel peer helper: %w", err)
	}
	p.cmd, p.out = cmd, bufio.NewReader(stdout)
	if s, err := p.out.ReadString('\n'); err != nil || s != "ready\n" {
		return nil, fmt.Errorf("bench: kernel peer helper did not start: %q, %v", s, err)
	}
	return p, nil
}

// Close ends the helper (its input closed, then killed if it lingers) and
// deletes the namespace with every device in it. Safe to call twice.
func (p *linuxKernelPeer) Close() error {
	p.once.Do(func() {
		var errs []error
		if p.cmd != nil {
			p.in.Close()
			done := make(chan error, 1)
			go func() { done <- p.cmd.Wait() }()
			select {
			case <-done:
			case <-time.After(5 * time.Second):
				p.cmd.Process.Kill()
				<-done
			}
		}
		errs = append(errs, p.ns.Delete())
		p.err = errors.Join(errs...)
	})
	return p.err
}

// transfer moves sp.Bytes between a fresh stack of the TCP named, on a
// fresh TAP device in the namespace (GSO and GRO on), and the helper's
// kernel socket. The figures count from the connection's establishment
// to the receiver's end of stream; the helper's CPU over the same span is
// PeerCPU.
func (p *linuxKernelPeer) transfer(ctx context.Context, sp kernelSpec) (KernelCPUResult, error) {
	name := "netramp"
	if sp.GVisor {
		name = "gVisor"
	}
	fail := func(err error) (KernelCPUResult, error) {
		return KernelCPUResult{}, fmt.Errorf("bench: cpu -peer linux, %s %s at MTU %d: %w", name, sp.Dir, sp.MTU, err)
	}
	// A fresh name a device: the last one goes when its stack closes it.
	dname := fmt.Sprintf("nrkp%d", p.devs.Add(1))
	dev, err := tap.Open(tap.Config{Name: dname, Netns: p.ns.Path(), VnetHdr: true, Offload: true})
	if err != nil {
		return fail(err)
	}
	if err := p.ns.SetupLink(netns.LinkConfig{Dev: dname, MAC: kpeerKernelMAC.String(), Addr: sinkPrefix.String(), MTU: int(sp.MTU),
		Peer: sourcePrefix.Addr().String(), PeerMAC: kpeerOurMAC.String()}); err != nil {
		dev.Close()
		return fail(err)
	}
	// control:bench-kpeer-no-offload
	ep, err := tap.New(dev, tap.Options{MTU: sp.MTU, MAC: kpeerOurMAC, GSO: true, GRO: true})
	if err != nil {
		dev.Close()
		return fail(err)
	}
	s, err := stack.New(stack.Options{GVisorTCP: sp.GVisor, NICs: []stack.NIC{{Link: ep, Addr: sourcePrefix}}})
	if err != nil {
		ep.Close()
		return fail(err)
	}
	defer s.Close()
	if err := s.Gvisor().AddStaticNeighbor(1, header.IPv4ProtocolNumber, tcpip.AddrFrom4(sinkPrefix.Addr().As4()), tcpip.LinkAddress(kpeerKernelMAC)); err != nil {
		return fail(fmt.Errorf("static neighbour: %s", err))
	}
	cmd := "sink\n"
	if sp.Dir == FromKernel {
		cmd = fmt.Sprintf("source %d\n", sp.Bytes)
	}
	if _, err := io.WriteString(p.in, cmd); err != nil {
		return fail(fmt.Errorf("helper: %w", err))
	}
	dctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	c, err := s.Dial(dctx, netip.AddrPortFrom(sinkPrefix.Addr(), kpeerPort))
	cancel()
	if err != nil {
		return fail(fmt.Errorf("dial: %w", err))
	}
	defer c.Close()
	c0 := ep.Counters()
	gso0, gro0, out0, in0 := c0.TxGSO.Load(), c0.RxWhole.Load(), c0.TxFrames.Load(), c0.RxFrames.Load()
	var m0, m1 runtime.MemStats
	runtime.ReadMemStats(&m0)
	cpu0 := processCPU()
	t0 := time.Now()

	type end struct {
		got  int64
		line helperLine
		err  error
	}
	ended := make(chan end, 1)
	go func() {
		var e end
		if sp.Dir == ToKernel {
			e.err = send(c, sp.Bytes)
			c.Close()
			e.got = sp.Bytes
		} else {
			e.got, e.err = drain(c, SinkCopy)
		}
		line, err := readHelperLine(p.out)
		e.line, e.err = line, errors.Join(e.err, err)
		ended <- e
	}()
	var e end
	select {
	case e = <-ended:
	case <-time.After(5 * time.Minute):
		return fail(errors.New("the transfer did not finish within 5 minutes"))
	case <-ctx.Done():
		return fail(ctx.Err()) // the deferred closes end our side; Close ends the helper
	}
	wall := time.Since(t0)
	cpu := processCPU() - cpu0
	runtime.ReadMemStats(&m1)
	if e.err != nil {
		return fail(e.err)
	}
	// Both ends counted every byte: ours (what it sent or read) and the
	// kernel's (what the helper read or wrote).
	if e.got != sp.Bytes || e.line.Bytes != sp.Bytes {
		return fail(fmt.Errorf("%d bytes here, %d at the kernel, want %d", e.got, e.line.Bytes, sp.Bytes))
	}
	r := KernelCPUResult{
		CPUResult: CPUResult{TCP: name, MTU: sp.MTU, Link: TSOGRO, Conns: 1, Bytes: sp.Bytes, Wall: wall, CPU: cpu, Allocs: m1.Mallocs - m0.Mallocs},
		Dir:       sp.Dir, PeerCPU: e.line.CPU, GSOOut: c0.TxGSO.Load() - gso0, GROIn: c0.RxWhole.Load() - gro0,
		FramesOut: c0.TxFrames.Load() - out0, FramesIn: c0.RxFrames.Load() - in0,
	}
	r.rates()
	r.PeerCPUSecPerGB = r.PeerCPU.Seconds() / (float64(r.Bytes) / 1e9)
	return r, nil
}

// RunKernelPeerHelper is the helper's main (see KernelPeerHelperEnv): it
// listens where the variable says, says "ready", then serves one
// connection per line of its input until the input ends. cubic is set per
// socket: the host's default may be bbr (FACTS).
func RunKernelPeerHelper() error {
	lc := net.ListenConfig{Control: func(_, _ string, rc syscall.RawConn) error {
		var serr error
		if err := rc.Control(func(fd uintptr) {
			serr = unix.SetsockoptString(int(fd), unix.IPPROTO_TCP, unix.TCP_CONGESTION, "cubic")
		}); err != nil {
			return err
		}
		return serr
	}}
	ln, err := lc.Listen(context.Background(), "tcp4", os.Getenv(KernelPeerHelperEnv))
	if err != nil {
		return err
	}
	defer ln.Close()
	fmt.Println("ready")
	in := bufio.NewScanner(os.Stdin)
	buf := make([]byte, 256<<10)
	for in.Scan() {
		var n int64
		source := false
		switch line := in.Text(); {
		case line == "sink":
		case func() bool { _, err := fmt.Sscanf(line, "source %d", &n); return err == nil }():
			source = true
		default:
			return fmt.Errorf("kernel peer helper: unknown command %q", line)
		}
		c, err := ln.Accept()
		if err != nil {
			return err
		}
		cpu0 := processCPU()
		var moved int64
		if source {
			for moved < n && err == nil {
				var k int
				k, err = c.Write(buf[:min(int64(len(buf)), n-moved)])
				moved += int64(k)
			}
		} else {
			for err == nil {
				var k int
				k, err = c.Read(buf)
				moved += int64(k)
			}
			if err == io.EOF {
				err = nil
			}
		}
		c.Close()
		if err != nil {
			return fmt.Errorf("kernel peer helper: %w", err)
		}
		fmt.Printf("done %d %d\n", moved, processCPU()-cpu0)
	}
	return in.Err()
}
