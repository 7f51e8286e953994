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
	"runtime"
	"strings"
	"time"

	"github.com/netramp/netramp/metal/cmd/internal/guestnet"
)

func main() {
	backend := flag.String("backend", "sysfs", "how the card is reached: sysfs, uio or vfio")
	checks := flag.String("checks", "regs", "comma-separated checks to run: regs, linkregs, smoke, e2e, e2ecsum (e2e with RX checksum offload), flap, rxflood")
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
		start := time.Now()
		detail, err := run(c, *backend)
		took := time.Since(start).Seconds()
		if err != nil {
			failed++
			fmt.Printf("CHECK %s FAIL [%.1fs] %v\n", name, took, err)
		} else {
			fmt.Printf("CHECK %s PASS [%.1fs] %s\n", name, took, detail)
		}
		start = time.Now()
		runClosers(name)
		fmt.Printf("GUEST %s closed in %.1fs\n", name, time.Since(start).Seconds())
	}
	if failed > 0 {
		os.Exit(1)
	}
}

// tcpImpl names the TCP the end-to-end checks run: "ours" or "gvisor".
var tcpImpl string

// pciAddr is the card's PCI address, e.g. 0000:00:02.0; empty finds it.
var pciAddr string

// closers release what a check opened, after its result line is out.
var closers []func()

func closeAfter(f func()) { closers = append(closers, f) }

func runClosers(check string) {
	for i := len(closers) - 1; i >= 0; i-- {
		closeWithin(closers[i], 10*time.Second, check)
	}
	closers = nil
}

// closeWithin runs closeFn and, if it has not returned within d, prints the
// check's failure and the goroutines, and exits: a close that hangs leaves
// the card in an unknown state for the checks after it.
func closeWithin(closeFn func(), d time.Duration, check string) {
	done := make(chan struct{})
	go func() { closeFn(); close(done) }()
	select {
	case <-done:
	case <-time.After(d):
		buf := make([]byte, 1<<20)
		buf = buf[:runtime.Stack(buf, true)]
		fmt.Printf("GUEST goroutines at the hang:\n%s\n", buf)
		fmt.Printf("CHECK close/%s FAIL Close did not return within %v after %s\n", strings.SplitN(check, "/", 2)[1], d, check)
		os.Exit(3)
	}
}

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
	case "e2e", "e2ecsum", "flap":
		e, err := openEnv(backend, check == "e2ecsum")
		if err != nil {
			return "", err
		}
		closeAfter(e.Close)
		impl := tcpImpl
		if backend == "kernel" {
			impl = "linux"
		}
		var detail string
		irq0 := cardIRQs()
		if check != "flap" {
			detail, err = checkE2E(e)
			if d, ok := e.(*guestnet.Driver); ok && err == nil && check == "e2ecsum" {
				// Offload that was asked for but never used proves nothing.
				if d.Reg.Lookup("nic.rx.csum-offloaded").Load() == 0 {
					err = fmt.Errorf("no frame took the offloaded checksum path; %s", detail)
				}
			}
		} else {
			detail, err = checkFlap(e)
		}
		if backend == "uio" || backend == "vfio" {
			irqs := cardIRQs() - irq0
			detail += fmt.Sprintf("; %s interrupts %d", backend, irqs)
			if err == nil && irqs == 0 {
				err = fmt.Errorf("no interrupt counted in /proc/interrupts for the %s backend: %s", backend, detail)
			}
		}
		return "tcp=" + impl + " " + detail, err
	}
	return "", fmt.Errorf("unknown check %q", check)
}

// openEnv brings up the network for backend.
func openEnv(backend string, csumOffload bool) (netEnv, error) {
	switch backend {
	case "kernel":
		return kernelEnv{ifname: "eth0"}, nil
	}
	return guestnet.Open(guestnet.Options{Backend: backend, BDF: pciAddr, GVisorTCP: tcpImpl == "gvisor", RXChecksumOffload: csumOffload})
}
