//go:build linux

package netns

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"golang.org/x/sys/unix"
)

// NS is a named network namespace made by Create (or adopted by Open).
type NS struct {
	name string
	once sync.Once
	err  error
}

var seq atomic.Uint64

// Check reports whether this host can run namespace tests: root, a
// /dev/net/tun node, and the ip command (installed with apt-get if missing).
// The error wraps ErrUnsupported and says what is missing.
func Check() error {
	if os.Geteuid() != 0 {
		return fmt.Errorf("%w: not root (euid %d)", ErrUnsupported, os.Geteuid())
	}
	if _, err := os.Stat("/dev/net/tun"); err != nil {
		return fmt.Errorf("%w: %v", ErrUnsupported, err)
	}
	if err := ensureIP(); err != nil {
		return fmt.Errorf("%w: %v", ErrUnsupported, err)
	}
	return nil
}

var ipOnce sync.Once
var ipErr error

// ensureIP installs iproute2 once if the ip command is missing.
func ensureIP() error {
	ipOnce.Do(func() {
		if _, err := exec.LookPath("ip"); err == nil {
			return
		}
		out, err := exec.Command("apt-get", "install", "-y", "-q", "iproute2").CombinedOutput()
		if err != nil {
			ipErr = fmt.Errorf("ip missing and apt-get install iproute2 failed: %v: %s", err, lastLine(out))
			return
		}
		if _, err := exec.LookPath("ip"); err != nil {
			ipErr = fmt.Errorf("ip still missing after installing iproute2")
		}
	})
	return ipErr
}

func lastLine(b []byte) string {
	s := strings.TrimSpace(string(b))
	if i := strings.LastIndexByte(s, '\n'); i >= 0 {
		s = s[i+1:]
	}
	return s
}

// Run runs the ip command with args and returns its combined output in the
// error if it fails.
func Run(args ...string) error {
	out, err := exec.Command("ip", args...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("ip %s: %v: %s", strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return nil
}

// Create makes a fresh namespace named Prefix+<pid>-<n>-tag with its
// loopback up. It first deletes namespaces left by dead processes.
func Create(tag string) (*NS, error) {
	if err := Check(); err != nil {
		return nil, err
	}
	CleanupStale()
	name := fmt.Sprintf("%s%d-%d", Prefix, os.Getpid(), seq.Add(1))
	if tag != "" {
		name += "-" + tag
	}
	if err := Run("netns", "add", name); err != nil {
		// Root without the right to mount or unshare (a restricted
		// container) cannot make namespaces at all: the host is unsupported.
		return nil, fmt.Errorf("%w: %v", ErrUnsupported, err)
	}
	ns := &NS{name: name}
	if err := ns.IP("link", "set", "lo", "up"); err != nil {
		ns.Delete()
		return nil, err
	}
	return ns, nil
}

// Name returns the namespace's name as ip netns knows it.
func (n *NS) Name() string { return n.name }

// Path returns the bind-mounted namespace file.
func (n *NS) Path() string { return "/run/netns/" + n.name }

// IP runs `ip -n <name> args...`.
func (n *NS) IP(args ...string) error {
	return Run(append([]string{"-n", n.name}, args...)...)
}

// Sysctl sets key (dotted, as sysctl spells it) to value inside the namespace.
func (n *NS) Sysctl(key, value string) error {
	path := "/proc/sys/" + strings.ReplaceAll(key, ".", "/")
	return n.Do(func() error {
		// /proc/sys/net resolves against the opening thread's namespace.
		return os.WriteFile(path, []byte(value), 0)
	})
}

// Command returns a command that runs name inside the namespace through
// `ip netns exec`.
func (n *NS) Command(ctx context.Context, name string, args ...string) *exec.Cmd {
	return exec.CommandContext(ctx, "ip", append([]string{"netns", "exec", n.name, name}, args...)...)
}

// Do runs f on an OS thread that has entered the namespace, then returns the
// thread to the caller's namespace. Sockets and TAP devices opened inside f
// belong to the namespace for their whole life, whatever thread uses them.
func (n *NS) Do(f func() error) error { return DoPath(n.Path(), f) }

// DoPath is Do for a namespace file given by path ("" runs f unchanged).
func DoPath(path string, f func() error) error {
	if path == "" {
		return f()
	}
	errc := make(chan error, 1)
	go func() {
		// Setns changes only this thread; locking keeps every syscall of f
		// on it. If the thread cannot be returned to its namespace it stays
		// locked, and the runtime discards it when this goroutine exits.
		runtime.LockOSThread()
		orig, err := unix.Open("/proc/thread-self/ns/net", unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err != nil {
			runtime.UnlockOSThread()
			errc <- fmt.Errorf("netns: open own namespace: %w", err)
			return
		}
		defer unix.Close(orig)
		target, err := unix.Open(path, unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err != nil {
			runtime.UnlockOSThread()
			errc <- fmt.Errorf("netns: open %s: %w", path, err)
			return
		}
		defer unix.Close(target)
		if err := unix.Setns(target, unix.CLONE_NEWNET); err != nil {
			runtime.UnlockOSThread()
			errc <- fmt.Errorf("netns: setns %s: %w", path, err)
			return
		}
		ferr := f()
		if err := unix.Setns(orig, unix.CLONE_NEWNET); err != nil {
			errc <- errors.Join(ferr, fmt.Errorf("netns: setns back: %w", err))
			return
		}
		runtime.UnlockOSThread()
		errc <- ferr
	}()
	return <-errc
}

// Delete removes the namespace; devices inside it go with it. Safe to call
// twice.
func (n *NS) Delete() error {
	n.once.Do(func() { n.err = Run("netns", "delete", n.name) })
	return n.err
}

// CleanupStale deletes namespaces named Prefix+<pid>-... whose pid is no
// longer a running process, and returns their names.
func CleanupStale() []string {
	out, err := exec.Command("ip", "netns", "list").Output()
	if err != nil {
		return nil
	}
	var gone []string
	for _, line := range strings.Split(string(out), "\n") {
		f := strings.Fields(line)
		if len(f) == 0 || !strings.HasPrefix(f[0], Prefix) {
			continue
		}
		name := f[0]
		rest := strings.TrimPrefix(name, Prefix)
		i := strings.IndexByte(rest, '-')
		if i <= 0 {
			continue
		}
		pid, err := strconv.Atoi(rest[:i])
		if err != nil || pid <= 0 || pid == os.Getpid() {
			continue
		}
		if err := unix.Kill(pid, 0); err == nil || errors.Is(err, unix.EPERM) {
			continue // still running
		}
		if Run("netns", "delete", name) == nil {
			gone = append(gone, name)
		}
	}
	return gone
}

// LinkConfig is how SetupLink configures an interface inside the namespace.
type LinkConfig struct {
	Dev        string
	MAC        string // fixed, so neighbour entries can be permanent
	Addr       string // CIDR, e.g. 198.18.0.2/24
	MTU        int    // 0 = 1500
	TxQueueLen int    // 0 = 10000: a short device queue drops bursts before the emulator sees them
	// Peer and PeerMAC, if set, become a permanent neighbour entry: no ARP
	// ever runs, so the first segment of a run is never held behind one.
	Peer, PeerMAC string
}

// DisableIPv6 turns IPv6 off in the namespace, so no router or neighbour
// solicitations appear on the test links.
func (n *NS) DisableIPv6() error {
	for _, k := range []string{"net.ipv6.conf.all.disable_ipv6", "net.ipv6.conf.default.disable_ipv6"} {
		if err := n.Sysctl(k, "1"); err != nil {
			return err
		}
	}
	return nil
}

// SetupLink sets the MAC, MTU, queue length and address of c.Dev, brings it
// up and adds the permanent neighbour entry.
func (n *NS) SetupLink(c LinkConfig) error {
	mtu, qlen := c.MTU, c.TxQueueLen
	if mtu == 0 {
		mtu = 1500
	}
	if qlen == 0 {
		qlen = 10000
	}
	args := []string{"link", "set", "dev", c.Dev, "mtu", strconv.Itoa(mtu), "txqueuelen", strconv.Itoa(qlen)}
	if c.MAC != "" {
		args = append(args, "address", c.MAC)
	}
	if err := n.IP(args...); err != nil {
		return err
	}
	if c.Addr != "" {
		if err := n.IP("addr", "add", c.Addr, "dev", c.Dev); err != nil {
			return err
		}
	}
	if err := n.IP("link", "set", "dev", c.Dev, "up"); err != nil {
		return err
	}
	if c.Peer != "" {
		if err := n.IP("neigh", "replace", c.Peer, "lladdr", c.PeerMAC, "dev", c.Dev, "nud", "permanent"); err != nil {
			return err
		}
	}
	return nil
}
