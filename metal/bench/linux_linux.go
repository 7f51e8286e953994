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

	"gvisor.dev/gvisor/pkg/tcpip/header"

	"github.com/netramp/netramp/metal/report"
	"github.com/netramp/netramp/nic/netns"
	"github.com/netramp/netramp/nic/tap"
	"github.com/netramp/netramp/nic/wire"
)

// linuxArm is the host kernel's TCP at both ends of the emulated path: the
// source in one network namespace, the sink in another, each namespace's
// TUN device bridged by this process to one end of a real-time nic/wire.
// Both kernels run CUBIC (set per socket; the host default may be another),
// with buffer maxima raised and no cached path metrics between connections.
//
// Departure from the preset: the kernel's own device queue stands for the
// card, so the wire's TX ring model on the source side is off (TxRing 0).
type linuxArm struct{}

func newLinuxArm() Arm { return linuxArm{} }

func (linuxArm) Unavailable() string {
	if err := netns.Check(); err != nil {
		return err.Error()
	}
	return ""
}

func (linuxArm) Timebase() string   { return Real }
func (linuxArm) realTimeWire() bool { return true }
func (linuxArm) PathName(preset string) string {
	return "wire preset " + preset + " (real time on its releasing thread, TUN bridges, no TX-ring model)"
}
func (linuxArm) Describe() map[string]string {
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
	return map[string]string{"tcp": "Linux kernel " + rel + ", cubic per socket", "sysctls": strings.Join(linuxSysctls, "; ")}
}

var linuxSysctls = []string{
	"net.ipv4.tcp_rmem=4096 131072 33554432",
	"net.ipv4.tcp_wmem=4096 16384 33554432",
	"net.ipv4.tcp_no_metrics_save=1",
}

// tunBridge copies IP packets between a TUN device and one wire endpoint.
type tunBridge struct {
	dev *tap.Device
	ep  *wire.Endpoint
	wg  sync.WaitGroup
	mu  sync.Mutex // serialises writes to the device
}

// DeliverFrame writes a packet the wire delivered to the device.
func (b *tunBridge) DeliverFrame(frame []byte) {
	b.mu.Lock()
	_, _ = b.dev.Write(frame) // a refused write is a drop, as on a link
	b.mu.Unlock()
}

// run reads the device and writes every IPv4 packet into the wire.
func (b *tunBridge) run() {
	b.wg.Add(1)
	go func() {
		defer b.wg.Done()
		buf := make([]byte, 65536)
		for {
			n, err := b.dev.Read(buf)
			if err != nil {
				return
			}
			if n < header.IPv4MinimumSize || header.IPVersion(buf[:n]) != header.IPv4Version {
				continue
			}
			_ = b.ep.WriteFrame(buf[:n]) // refused frames are counted by the wire
		}
	}()
}

func (linuxArm) RunRow(ctx context.Context, spec RowSpec) (conns []report.Conn, err error) {
	cfg, err := wire.Preset(spec.Preset)
	if err != nil {
		return nil, err
	}
	cfg.Seed = spec.Seed
	cfg.AtoB.TxRing, cfg.BtoA.TxRing = 0, 0
	w, err := wire.NewRealTime(cfg)
	if err != nil {
		return nil, err
	}
	var cleanup []func()
	defer func() {
		for i := len(cleanup) - 1; i >= 0; i-- {
			cleanup[i]()
		}
	}()
	side := func(tag, dev string, addr netip4, ep *wire.Endpoint) (*netns.NS, error) {
		ns, err := netns.Create(tag)
		if err != nil {
			return nil, err
		}
		cleanup = append(cleanup, func() { _ = ns.Delete() })
		if err := ns.DisableIPv6(); err != nil {
			return nil, err
		}
		d, err := tap.Open(tap.Config{Name: dev, Netns: ns.Path(), TUN: true})
		if err != nil {
			return nil, err
		}
		if err := ns.SetupLink(netns.LinkConfig{Dev: dev, Addr: string(addr) + "/24"}); err != nil {
			d.Close()
			return nil, err
		}
		for _, kv := range linuxSysctls {
			k, v, _ := strings.Cut(kv, "=")
			if err := ns.Sysctl(k, v); err != nil {
				d.Close()
				return nil, err
			}
		}
		b := &tunBridge{dev: d, ep: ep}
		ep.AttachSink(b)
		b.run()
		cleanup = append(cleanup, func() { d.Close(); b.wg.Wait() })
		return ns, nil
	}
	dut, err := side("osb-src", "nrsrc0", netip4(sourcePrefix.Addr().String()), w.A())
	if err != nil {
		return nil, fmt.Errorf("linux source namespace: %w", err)
	}
	peer, err := side("osb-snk", "nrsnk0", netip4(sinkAddr.Addr().String()), w.B())
	if err != nil {
		return nil, fmt.Errorf("linux sink namespace: %w", err)
	}
	cleanup = append(cleanup, w.Close)
	counters := func() map[string]uint64 {
		m := map[string]uint64{}
		for _, ns := range []*netns.NS{dut, peer} {
			_ = ns.Do(func() error {
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
	lc := net.ListenConfig{Control: cubic}
	return runRealRow(ctx, spec,
		func() (ln net.Listener, err error) {
			err = peer.Do(func() error {
				ln, err = lc.Listen(ctx, "tcp4", sinkAddr.String())
				return err
			})
			return ln, err
		},
		func(ctx context.Context, addr string) (c net.Conn, err error) {
			err = dut.Do(func() error {
				d := net.Dialer{Control: cubic}
				c, err = d.DialContext(ctx, "tcp4", addr)
				return err
			})
			return c, err
		}, counters)
}

type netip4 string

// cubic sets the socket's congestion control to CUBIC (TCP_CONGESTION).
func cubic(_, _ string, c syscall.RawConn) error {
	var serr error
	if err := c.Control(func(fd uintptr) {
		serr = syscall.SetsockoptString(int(fd), syscall.IPPROTO_TCP, syscall.TCP_CONGESTION, "cubic")
	}); err != nil {
		return err
	}
	if serr != nil {
		return fmt.Errorf("setting cubic: %w", serr)
	}
	return nil
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
