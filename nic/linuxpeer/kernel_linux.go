//go:build linux

package linuxpeer

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"os/exec"
	"sync"
	"syscall"

	"github.com/netramp/netramp/nic/netns"
	"golang.org/x/sys/unix"
)

// Kernel is the Linux kernel's TCP inside one namespace: sockets made here
// belong to the namespace and use the configured congestion control.
type Kernel struct {
	ns   *netns.NS
	addr netip.Addr
	cc   string
}

// Addr is the kernel side's address on the test link.
func (k *Kernel) Addr() netip.Addr { return k.addr }

// Namespace returns the namespace.
func (k *Kernel) Namespace() *netns.NS { return k.ns }

// control sets the per-socket congestion control: the host default may be
// bbr, and a bench arm must say which algorithm it measured.
func (k *Kernel) control(_, _ string, rc syscall.RawConn) error {
	// control:linuxpeer-no-per-socket-cc
	if k.cc == "" {
		return nil
	}
	var serr error
	err := rc.Control(func(fd uintptr) {
		serr = unix.SetsockoptString(int(fd), unix.IPPROTO_TCP, unix.TCP_CONGESTION, k.cc)
	})
	if err != nil {
		return err
	}
	if serr != nil {
		return fmt.Errorf("linuxpeer: TCP_CONGESTION %q: %w", k.cc, serr)
	}
	return nil
}

// Listen opens a kernel TCP listener on the kernel's address and port (0
// picks one). Accepted sockets inherit its congestion control.
func (k *Kernel) Listen(port uint16) (net.Listener, error) {
	var ln net.Listener
	err := k.ns.Do(func() error {
		var err error
		lc := net.ListenConfig{Control: k.control}
		ln, err = lc.Listen(context.Background(), "tcp4", netip.AddrPortFrom(k.addr, port).String())
		return err
	})
	return ln, err
}

// Dial opens a kernel TCP connection from inside the namespace.
func (k *Kernel) Dial(ctx context.Context, to netip.AddrPort) (net.Conn, error) {
	var c net.Conn
	err := k.ns.Do(func() error {
		var err error
		d := net.Dialer{Control: k.control}
		c, err = d.DialContext(ctx, "tcp4", to.String())
		return err
	})
	return c, err
}

// Do runs f on a thread inside the namespace (see netns.NS.Do).
func (k *Kernel) Do(f func() error) error { return k.ns.Do(f) }

// Command returns a command that runs inside the namespace.
func (k *Kernel) Command(ctx context.Context, name string, args ...string) *exec.Cmd {
	return k.ns.Command(ctx, name, args...)
}

// newKernel makes a namespace tuned for bulk TCP: IPv6 off, buffer maxima
// raised past the 4 MB default cap, no cached metrics between connections
// (a second run must not start from the first run's ssthresh).
func newKernel(tag string, addr netip.Addr, cc string, tcpMem int) (*Kernel, error) {
	ns, err := netns.Create(tag)
	if err != nil {
		return nil, err
	}
	k := &Kernel{ns: ns, addr: addr, cc: cc}
	if err := ns.DisableIPv6(); err != nil {
		ns.Delete()
		return nil, err
	}
	mem := fmt.Sprint(tcpMem)
	for _, kv := range [][2]string{
		{"net.ipv4.tcp_rmem", "4096 131072 " + mem},
		{"net.ipv4.tcp_wmem", "4096 16384 " + mem},
		{"net.ipv4.tcp_no_metrics_save", "1"},
	} {
		if err := ns.Sysctl(kv[0], kv[1]); err != nil {
			ns.Delete()
			return nil, err
		}
	}
	if cc != "" {
		// Best effort: a namespace other than the initial one may only
		// default to an algorithm in tcp_allowed_congestion_control (EPERM
		// otherwise). Every socket made here sets cc itself anyway.
		ns.Sysctl("net.ipv4.tcp_congestion_control", cc)
	}
	return k, nil
}

// CongestionControlOf returns the congestion control a kernel socket runs.
func CongestionControlOf(c net.Conn) (string, error) {
	sc, ok := c.(syscall.Conn)
	if !ok {
		return "", fmt.Errorf("%w: %T is not a kernel socket", ErrBadConfig, c)
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return "", err
	}
	var name string
	var gerr error
	if err := rc.Control(func(fd uintptr) {
		name, gerr = unix.GetsockoptString(int(fd), unix.IPPROTO_TCP, unix.TCP_CONGESTION)
	}); err != nil {
		return "", err
	}
	return name, gerr
}

// Serve listens on port in the namespace and runs handler for each accepted
// connection on its own goroutine, closing the connection when handler
// returns: a kernel sink or source the caller writes in Go. stop closes the
// listener and waits for running handlers.
func (k *Kernel) Serve(port uint16, handler func(net.Conn)) (addr netip.AddrPort, stop func(), err error) {
	ln, err := k.Listen(port)
	if err != nil {
		return netip.AddrPort{}, nil, err
	}
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer c.Close()
				handler(c)
			}()
		}
	}()
	var once sync.Once
	stop = func() { once.Do(func() { ln.Close(); wg.Wait() }) }
	return ln.Addr().(*net.TCPAddr).AddrPort(), stop, nil
}
