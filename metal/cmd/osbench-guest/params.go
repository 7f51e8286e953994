//go:build linux

package main

import (
	"errors"
	"fmt"
	"net/netip"
	"strconv"
	"strings"

	"github.com/netramp/netramp/metal/arms"
	"github.com/netramp/netramp/metal/osbench"
	"github.com/netramp/netramp/tcp"
)

// params is what the kernel command line asks of the guest.
type params struct {
	sink    netip.AddrPort    // osbench.sink: the host's sink as slirp shows it (10.0.2.2:port)
	dir     osbench.Direction // osbench.dir: upload (default) or download
	bytes   int64             // osbench.bytes: payload bytes per connection
	conns   int               // osbench.conns: connections, one after another (default 1)
	arm     string            // osbench.arm: A, B, P, D (the stack's default, arms.Default) or gvisor
	backend string            // osbench.backend: sysfs (default), uio or vfio
	dev     string            // osbench.dev: the card's PCI address (default: the first 82574L)
}

// errParam reports a missing or malformed osbench.* kernel argument.
var errParam = errors.New("osbench guest: kernel command line")

// parseCmdline reads the osbench.* arguments from a kernel command line;
// other arguments are the kernel's and are ignored.
func parseCmdline(line string) (params, error) {
	p := params{dir: osbench.Upload, conns: 1, arm: arms.Default(), backend: "sysfs"}
	var haveSink, haveBytes bool
	for _, f := range strings.Fields(line) {
		k, v, ok := strings.Cut(f, "=")
		if !ok || !strings.HasPrefix(k, "osbench.") {
			continue
		}
		var err error
		switch k {
		case "osbench.sink":
			p.sink, err = netip.ParseAddrPort(v)
			haveSink = err == nil
		case "osbench.dir":
			p.dir, err = osbench.ParseDirection(v)
		case "osbench.bytes":
			p.bytes, err = strconv.ParseInt(v, 10, 64)
			if err == nil && p.bytes <= 0 {
				err = errors.New("must be positive")
			}
			haveBytes = err == nil
		case "osbench.conns":
			p.conns, err = strconv.Atoi(v)
			if err == nil && p.conns <= 0 {
				err = errors.New("must be positive")
			}
		case "osbench.arm":
			_, _, err = armOptions(v)
			p.arm = v
		case "osbench.backend":
			switch v {
			case "sysfs", "uio", "vfio":
				p.backend = v
			default:
				err = errors.New("want sysfs, uio or vfio")
			}
		case "osbench.dev":
			p.dev = v
		default:
			err = errors.New("unknown argument")
		}
		if err != nil {
			return params{}, fmt.Errorf("%w: %s=%q: %v", errParam, k, v, err)
		}
	}
	if !haveSink {
		return params{}, fmt.Errorf("%w: osbench.sink=host:port is missing", errParam)
	}
	if !haveBytes {
		return params{}, fmt.Errorf("%w: osbench.bytes=N is missing", errParam)
	}
	return p, nil
}

// armOptions maps an arm name to the TCP the guest runs: an arm of the
// table (metal/arms), as the bench's arms of the same names run it, or
// gvisor, gVisor's own TCP.
func armOptions(arm string) (o tcp.Options, gvisor bool, err error) {
	if arm == "gvisor" {
		return o, true, nil
	}
	a, err := arms.Lookup(arm)
	if err != nil {
		return o, false, fmt.Errorf("%w, or gvisor", err)
	}
	return a.Options, false, nil
}
