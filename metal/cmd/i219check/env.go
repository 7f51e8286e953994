//go:build linux

package main

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"os"
	"strconv"
	"strings"
	"time"
)

// netEnv is one way for the guest to reach the network: the kernel's own
// e1000e driver (the reference that proves the harness) or netramp's stack on
// the nic/i219 driver.
type netEnv interface {
	Dial(ctx context.Context, addr netip.AddrPort) (net.Conn, error)
	// LinkUp reports the card's link state as the driver sees it.
	LinkUp() bool
	// SeesLink reports whether LinkUp follows a short drop of the link.
	SeesLink() bool
	// Counters is a one-line summary of the link's counters.
	Counters() string
	Close()
}

// kernelEnv is the guest kernel's TCP over its e1000e driver on eth0, which
// /init configures as 10.0.2.15/24 via 10.0.2.2.
type kernelEnv struct{ ifname string }

func (k kernelEnv) Dial(ctx context.Context, addr netip.AddrPort) (net.Conn, error) {
	var d net.Dialer
	return d.DialContext(ctx, "tcp4", addr.String())
}

func (k kernelEnv) sysfs(name string) string {
	b, err := os.ReadFile("/sys/class/net/" + k.ifname + "/" + name)
	if err != nil {
		return "?"
	}
	return strings.TrimSpace(string(b))
}

func (k kernelEnv) LinkUp() bool { return k.sysfs("carrier") == "1" }

// SeesLink is false: Linux's e1000e under QEMU 7.2 keeps its carrier through
// a two-second set_link drop (measured: carrier_changes does not move).
func (k kernelEnv) SeesLink() bool { return false }

func (k kernelEnv) Counters() string {
	var parts []string
	for _, n := range []string{"carrier_changes"} {
		parts = append(parts, n+"="+k.sysfs(n))
	}
	for _, n := range []string{"rx_packets", "rx_bytes", "rx_dropped", "rx_missed_errors", "tx_packets", "tx_bytes", "tx_dropped"} {
		parts = append(parts, n+"="+k.sysfs("statistics/"+n))
	}
	return strings.Join(parts, " ")
}

func (k kernelEnv) Close() {}

func (k kernelEnv) carrierChanges() int {
	n, _ := strconv.Atoi(k.sysfs("carrier_changes"))
	return n
}

// waitLink polls the link state until it is up or the timeout passes.
func waitLink(e netEnv, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for !e.LinkUp() {
		if time.Now().After(deadline) {
			return fmt.Errorf("link not up after %v", timeout)
		}
		time.Sleep(20 * time.Millisecond)
	}
	return nil
}
