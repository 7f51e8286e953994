//go:build linux

// Package guestnet brings up netramp's stack on the I219/82574L driver inside
// a QEMU guest whose e1000e is on slirp user networking: the guest programs
// (the driver's checks and the bench's boot source) share it so the card is
// found, opened and addressed one way.
package guestnet

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/netramp/netramp/counters"
	"github.com/netramp/netramp/nic/i219"
	i219linux "github.com/netramp/netramp/nic/i219/linux"
	"github.com/netramp/netramp/stack"
	"github.com/netramp/netramp/tcp"
)

// Slirp's fixed addresses: the guest network 10.0.2.0/24 with its gateway
// (which also stands for the host's loopback) at 10.0.2.2.
var (
	GatewayIP = netip.MustParseAddr("10.0.2.2")
	GuestIP   = netip.MustParseAddr("10.0.2.15")
)

// FindCard returns the sysfs directory of the PCI function bdf or, when bdf
// is empty, of the first whose vendor:device is 8086:10d3, the 82574L that
// QEMU's e1000e models.
func FindCard(bdf string) (string, error) {
	if bdf != "" {
		return filepath.Join("/sys/bus/pci/devices", bdf), nil
	}
	dirs, err := filepath.Glob("/sys/bus/pci/devices/*")
	if err != nil {
		return "", err
	}
	for _, d := range dirs {
		v, _ := readHex(filepath.Join(d, "vendor"))
		id, _ := readHex(filepath.Join(d, "device"))
		if v == 0x8086 && id == 0x10d3 {
			return d, nil
		}
	}
	return "", errors.New("no 8086:10d3 PCI function in /sys/bus/pci/devices")
}

func readHex(path string) (uint64, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, err
	}
	return strconv.ParseUint(strings.TrimPrefix(strings.TrimSpace(string(b)), "0x"), 16, 32)
}

// OpenPlatform opens the card bdf through one Linux backend of the driver:
// sysfs, uio or vfio.
func OpenPlatform(backend, bdf string) (i219.Platform, error) {
	switch backend {
	case "sysfs":
		return i219linux.OpenSysfs(bdf)
	case "uio":
		return i219linux.OpenUIO(bdf)
	case "vfio":
		return i219linux.OpenVFIO(bdf)
	}
	return i219.Platform{}, fmt.Errorf("unknown backend %q", backend)
}

// OpenEndpoint opens the platform and the driver on it; on error nothing
// stays open.
func OpenEndpoint(backend, bdf string, cfg i219.Config) (*i219.Endpoint, error) {
	p, err := OpenPlatform(backend, bdf)
	if err != nil {
		return nil, fmt.Errorf("open %s platform: %w", backend, err)
	}
	ep, err := i219.Open(p, cfg)
	if err != nil {
		if p.Close != nil {
			p.Close()
		}
		return nil, fmt.Errorf("i219.Open: %w", err)
	}
	return ep, nil
}

// Options choose how Open brings the network up.
type Options struct {
	Backend string // sysfs, uio or vfio
	BDF     string // the card's PCI address, e.g. 0000:00:02.0
	// GVisorTCP runs gVisor's own TCP instead of netramp's (TCP is then unused).
	GVisorTCP bool
	TCP       tcp.Options
	// RXChecksumOffload turns on the driver's receive checksum offload.
	RXChecksumOffload bool
}

// Driver is netramp's stack over the driver at GuestIP/24, with the driver's,
// the stack's and the TCP's counters in one registry.
type Driver struct {
	EP    *i219.Endpoint
	Reg   *counters.Registry
	Stack *stack.Stack
}

// Open opens the card and builds the stack on it.
func Open(o Options) (*Driver, error) {
	reg := counters.NewRegistry()
	ep, err := OpenEndpoint(o.Backend, o.BDF, i219.Config{Counters: reg, RXChecksumOffload: o.RXChecksumOffload})
	if err != nil {
		return nil, err
	}
	s, err := stack.New(stack.Options{
		TCP:       o.TCP,
		GVisorTCP: o.GVisorTCP,
		Counters:  reg,
		NICs:      []stack.NIC{{Link: ep, Addr: netip.PrefixFrom(GuestIP, 24), Name: "i219"}},
	})
	if err != nil {
		ep.Close()
		return nil, fmt.Errorf("stack.New: %w", err)
	}
	return &Driver{EP: ep, Reg: reg, Stack: s}, nil
}

// Dial opens a TCP connection through the stack.
func (d *Driver) Dial(ctx context.Context, addr netip.AddrPort) (net.Conn, error) {
	return d.Stack.Dial(ctx, addr)
}

// LinkUp reports the card's link as the driver sees it.
func (d *Driver) LinkUp() bool { return d.EP.LinkUp() }

// SeesLink is true: the driver reads the link state from the card, so it
// follows even a short drop.
func (d *Driver) SeesLink() bool { return true }

// Counters is a one-line summary of the nonzero nic.* and loss-related
// tcp.* counters.
func (d *Driver) Counters() string { return NICCounters(d.Reg) + "; " + TCPCounters(d.Reg) }

// Close closes the stack alone, as a program using the driver would: the
// stack must stop and close the endpoint itself (gVisor's Stack.Wait waits
// on each link endpoint before closing it).
func (d *Driver) Close() { d.Stack.Close() }

// NICCounters prints the registry's nonzero nic.* counters, sorted.
func NICCounters(r *counters.Registry) string {
	s := r.Snapshot()
	var parts []string
	for _, n := range s.Names() {
		if strings.HasPrefix(n, "nic.") && s[n] != 0 {
			parts = append(parts, fmt.Sprintf("%s=%d", strings.TrimPrefix(n, "nic."), s[n]))
		}
	}
	sort.Strings(parts)
	if len(parts) == 0 {
		return "nic.* all zero"
	}
	return "nic: " + strings.Join(parts, " ")
}

// TCPCounters prints the nonzero loss-related tcp.* counters of netramp's
// TCP (none exist when gVisor's TCP runs).
func TCPCounters(r *counters.Registry) string {
	s := r.Snapshot()
	var parts []string
	for _, n := range s.Names() {
		switch {
		case n == "tcp.rto", n == "tcp.recoveries", n == "tcp.retransmitted.bytes", n == "tcp.loss-probes",
			n == "tcp.card-stops", n == "tcp.card-refusals", n == "tcp.spurious", strings.HasPrefix(n, "tcp.drops."):
			if s[n] != 0 {
				parts = append(parts, fmt.Sprintf("%s=%d", strings.TrimPrefix(n, "tcp."), s[n]))
			}
		}
	}
	sort.Strings(parts)
	if len(parts) == 0 {
		return "tcp: no losses counted"
	}
	return "tcp: " + strings.Join(parts, " ")
}
