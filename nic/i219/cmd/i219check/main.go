//go:build linux

// Command i219check runs inside a QEMU guest with an emulated 82574L
// ("e1000e") and proves the card through one platform backend at a time:
// the registers are reachable, the link is up and frames go both ways. Each
// check prints one line "CHECK <name> PASS|FAIL <detail>" on the console,
// which ci/qemu/run.sh reads from the host.
package main

import (
	"flag"
	"fmt"
	"net/netip"
	"os"
	"strings"
)

func main() {
	backend := flag.String("backend", "sysfs", "how the card is reached: sysfs, uio or vfio")
	checks := flag.String("checks", "regs", "comma-separated checks to run: regs, linkregs, smoke, e2e, flap, rxflood")
	flag.StringVar(&tcpImpl, "tcp", "ours", "the TCP over the driver: ours (netramp's) or gvisor")
	sink := flag.String("sink", "10.0.2.2:1", "the host's sink as slirp shows it")
	flag.Int64Var(&xferSize, "size", xferSize, "bytes per transfer")
	flag.StringVar(&pciAddr, "dev", "", "PCI address of the card (default: the first 8086:10d3)")
	flag.Parse()
	ap, err := netip.ParseAddrPort(*sink)
	if err != nil {
		fmt.Printf("CHECK args FAIL -sink: %v\n", err)
		os.Exit(2)
	}
	sinkAddr = ap
	failed := 0
	for _, c := range strings.Split(*checks, ",") {
		name := c + "/" + *backend
		detail, err := run(c, *backend)
		if err != nil {
			failed++
			fmt.Printf("CHECK %s FAIL %v\n", name, err)
			continue
		}
		fmt.Printf("CHECK %s PASS %s\n", name, detail)
	}
	if failed > 0 {
		os.Exit(1)
	}
}

// tcpImpl names the TCP the end-to-end checks run: "ours" or "gvisor".
var tcpImpl string

// pciAddr is the card's PCI address, e.g. 0000:00:02.0; empty finds it.
var pciAddr string

func run(check, backend string) (string, error) {
	switch check {
	case "regs":
		return checkRegs(backend)
	case "linkregs":
		return checkLinkRegs(backend)
	case "smoke":
		return checkSmoke(backend)
	case "rxflood":
		return checkRXFlood(backend)
	case "e2e", "flap":
		e, err := openEnv(backend)
		if err != nil {
			return "", err
		}
		defer e.Close()
		impl := tcpImpl
		if backend == "kernel" {
			impl = "linux"
		}
		var detail string
		if check == "e2e" {
			detail, err = checkE2E(e)
		} else {
			detail, err = checkFlap(e)
		}
		return "tcp=" + impl + " " + detail, err
	}
	return "", fmt.Errorf("unknown check %q", check)
}

// openEnv brings up the network for backend.
func openEnv(backend string) (netEnv, error) {
	switch backend {
	case "kernel":
		return kernelEnv{ifname: "eth0"}, nil
	}
	return openDriverEnv(backend, tcpImpl == "gvisor")
}
