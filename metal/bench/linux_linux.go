//go:build linux

package bench

import (
	"context"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"

	"github.com/netramp/netramp/counters"
	"github.com/netramp/netramp/metal/report"
	"github.com/netramp/netramp/nic/linuxpeer"
	"github.com/netramp/netramp/nic/netns"
)

// linuxArm is the host kernel's TCP at both ends of the emulated path:
// the source in one network namespace, the sink in another, on the two
// sides of a real-time nic/wire (nic/linuxpeer's Pair). Both kernels run the
// congestion control named (set per socket; the host default may be
// another), with buffer maxima raised and no cached path metrics between
// connections.
//
// Departure from the preset: the kernel's own device queue stands for the
// card, so the wire's TX ring model is off on both sides (TxRing 0).
type linuxArm struct{ cc string }

func newLinuxArm(cc string) Arm { return linuxArm{cc} }

func (linuxArm) Unavailable() string {
	if err := netns.Check(); err != nil {
		return err.Error()
	}
	return ""
}

func (linuxArm) Timebase() string { return Real }
func (linuxArm) PathName(preset string) string {
	return "wire preset " + preset + " (real time on its releasing thread, TUN bridges, no TX-ring model)"
}
func (a linuxArm) Describe() map[string]string {
	var u syscall.Utsname
	rel := ""
	if syscall.Uname(&u) == nil {
		for _, c := range u.Release {
			if c == 0 {
				break
			}
			rel += string(rune(c))
		}
	}
	return map[string]string{"tcp": "Linux kernel " + rel + ", " + a.cc + " per socket",
		"retrans": "tcpi_bytes_retrans of both sockets, read as each closes (counted from Linux 4.19; not measured before)",
		"sysctls": fmt.Sprintf("net.ipv4.tcp_rmem=4096 131072 %[1]d; net.ipv4.tcp_wmem=4096 16384 %[1]d; net.ipv4.tcp_no_metrics_save=1", linuxTCPMem)}
}

// linuxTCPMem is the kernels' tcp_rmem/tcp_wmem maximum.
const linuxTCPMem = 32 << 20

func (a linuxArm) RunRow(ctx context.Context, spec RowSpec) (conns []report.Conn, err error) {
	cfg, err := rowWire(spec)
	if err != nil {
		return nil, err
	}
	cfg.AtoB.TxRing, cfg.BtoA.TxRing = 0, 0
	pr, err := linuxpeer.StartPair(ctx, linuxpeer.Config{Wire: cfg, CongestionControl: a.cc, TCPMem: linuxTCPMem})
	if err != nil {
		return nil, fmt.Errorf("linux pair: %w", err)
	}
	defer pr.Close()
	if pr.B.Addr() != sinkAddr.Addr() {
		return nil, fmt.Errorf("linux pair: sink at %v, want %v", pr.B.Addr(), sinkAddr.Addr())
	}
	var retrans retransCount
	// The wire's own counters too, as for the in-process arms: drop.input
	// shows the frames lost because the TUN writes fell a whole input queue
	// behind.
	reg := counters.NewRegistry()
	pr.Wire().Counters(reg, "nic")
	snapshot := func() map[string]uint64 {
		// control:bench-linux-no-wire-counters
		m := reg.Snapshot()
		retrans.into(m)
		for _, k := range []*linuxpeer.Kernel{pr.A, pr.B} {
			_ = k.Do(func() error {
				b, err := os.ReadFile("/proc/thread-self/net/netstat")
				if err != nil {
					return err
				}
				ext := parseNetstat(string(b), "TcpExt:")
				m["tcp.rto"] += ext["TCPTimeouts"]
				m["tcp.loss-probes"] += ext["TCPLossProbes"]
				m["tcp.recoveries"] += ext["TCPSackRecovery"] + ext["TCPRenoRecovery"]
				if s, err := os.ReadFile("/proc/thread-self/net/snmp"); err == nil {
					m["linux.tcp.retransmitted.segments"] += parseNetstat(string(s), "Tcp:")["RetransSegs"]
				}
				return nil
			})
		}
		return m
	}
	conns, err = runRealRow(ctx, spec,
		func() (net.Listener, error) {
			ln, err := pr.B.Listen(sinkAddr.Port())
			return countingListener{ln, &retrans}, err
		},
		func(ctx context.Context, _ string) (net.Conn, error) {
			c, err := pr.A.Dial(ctx, sinkAddr)
			return retrans.watch(c), err
		},
		snapshot)
	spec.reportLate(pr.Wire())
	return conns, err
}

// retransCount is tcp.retransmitted.bytes of a kernel row: the sum of
// tcpi_bytes_retrans over both sockets of every connection closed so far,
// each read as its socket closes (both, as this TCP's counter counts both
// stacks). Per connection it is the difference before and after, as for the
// other counters. A kernel that does not count them leaves the counter out,
// so the row's retrans is not measured rather than 0.
type retransCount struct {
	mu     sync.Mutex
	bytes  uint64
	unread uint64 // sockets whose count could not be read
}

// into records the count in m; while any socket's could not be read, it
// records how many (linux.tcp.bytes-retrans.unread, in the evidence) instead.
func (r *retransCount) into(m map[string]uint64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	// control:bench-linux-retrans-unread-as-zero
	if r.unread == 0 {
		m["tcp.retransmitted.bytes"] = r.bytes
	} else {
		m["linux.tcp.bytes-retrans.unread"] = r.unread
	}
}

// watch returns c reading its count as it closes (nil for nil).
func (r *retransCount) watch(c net.Conn) net.Conn {
	tc, ok := c.(*net.TCPConn)
	if !ok {
		return c
	}
	return &countedConn{TCPConn: tc, r: r}
}

// countedConn is a kernel socket that adds its retransmitted bytes to its
// row's count when it closes; it keeps CloseWrite and SyscallConn.
type countedConn struct {
	*net.TCPConn
	r    *retransCount
	once sync.Once
}

func (c *countedConn) Close() error {
	c.once.Do(func() {
		n, err := linuxpeer.RetransmittedBytes(c.TCPConn)
		c.r.mu.Lock()
		defer c.r.mu.Unlock()
		if err != nil {
			c.r.unread++
		}
		// control:bench-linux-retrans-not-added
		c.r.bytes += n
	})
	return c.TCPConn.Close()
}

type countingListener struct {
	net.Listener
	r *retransCount
}

func (l countingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	return l.r.watch(c), err
}

// parseNetstat reads the header and value lines of one /proc/net/netstat or
// snmp section ("TcpExt:", "Tcp:").
func parseNetstat(text, section string) map[string]uint64 {
	m := map[string]uint64{}
	var head []string
	for _, ln := range strings.Split(text, "\n") {
		if !strings.HasPrefix(ln, section+" ") {
			continue
		}
		f := strings.Fields(ln)[1:]
		if head == nil {
			head = f
			continue
		}
		for i, v := range f {
			if i < len(head) {
				if n, err := strconv.ParseUint(v, 10, 64); err == nil {
					m[head[i]] = n
				}
			}
		}
		break
	}
	return m
}
