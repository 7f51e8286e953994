//go:build linux

// Command osbench-guest is the source of the bench's boot:qemu arm. It runs
// as the program of a QEMU guest's initramfs: it reads osbench.sink,
// osbench.dir, osbench.bytes, osbench.conns and osbench.arm from the kernel
// command line, brings up netramp's stack (that arm's TCP) on the
// I219/82574L driver over the emulated e1000e, runs the osbench-lan/3
// connections against the host's sink, and prints one line
// "OSBENCH RESULT PASS|FAIL <detail>" on the console. The image's init
// powers the guest off after it.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/netramp/netramp/metal/cmd/internal/guestnet"
	"github.com/netramp/netramp/metal/osbench"
)

// Bounds on the guest's steps, so a stall ends in a FAIL line rather than a
// guest that never powers off.
const (
	linkTimeout  = 15 * time.Second
	dialTimeout  = 20 * time.Second
	connTimeout  = 5 * time.Minute
	closeTimeout = 10 * time.Second
)

func main() {
	cmdline := flag.String("cmdline", "/proc/cmdline", "file holding the kernel command line")
	flag.Parse()
	detail, err := run(*cmdline)
	if err != nil {
		fmt.Printf("OSBENCH RESULT FAIL %v\n", err)
		os.Exit(1)
	}
	fmt.Printf("OSBENCH RESULT PASS %s\n", detail)
}

func run(cmdline string) (string, error) {
	b, err := os.ReadFile(cmdline)
	if err != nil {
		return "", err
	}
	p, err := parseCmdline(string(b))
	if err != nil {
		return "", err
	}
	opts, gvisor, _ := armOptions(p.arm) // parseCmdline checked the arm
	dev, err := guestnet.FindCard(p.dev)
	if err != nil {
		return "", err
	}
	fmt.Printf("OSBENCH guest: arm %s, %d connection(s) of %d bytes, %s, sink %v, card %s through %s\n",
		p.arm, p.conns, p.bytes, p.dir, p.sink, filepath.Base(dev), p.backend)
	d, err := guestnet.Open(guestnet.Options{Backend: p.backend, BDF: filepath.Base(dev), TCP: opts, GVisorTCP: gvisor})
	if err != nil {
		return "", err
	}
	detail, err := transfer(d, p)
	if cerr := closeWithin(d.Close, closeTimeout); cerr != nil && err == nil {
		err = cerr
	}
	return detail, err
}

// transfer runs the connections one after another and checks that each
// receiver's report counts every payload byte.
func transfer(d *guestnet.Driver, p params) (string, error) {
	if !d.EP.WaitLink(linkTimeout) {
		return "", fmt.Errorf("link not up after %v; %s", linkTimeout, d.Counters())
	}
	var total int64
	start := time.Now()
	for i := 0; i < p.conns; i++ {
		ctx, cancel := context.WithTimeout(context.Background(), dialTimeout)
		c, err := d.Dial(ctx, p.sink)
		cancel()
		if err != nil {
			return "", fmt.Errorf("connection %d: dial %v: %w; %s", i, p.sink, err, d.Counters())
		}
		_ = c.SetDeadline(time.Now().Add(connTimeout))
		r, err := (&osbench.Source{}).Run(c, p.dir, p.bytes)
		if err != nil {
			return "", fmt.Errorf("connection %d: %w; %s", i, err, d.Counters())
		}
		if r.Bytes != p.bytes {
			return "", fmt.Errorf("connection %d: the receiver counted %d of %d bytes; %s", i, r.Bytes, p.bytes, d.Counters())
		}
		total += r.Bytes
		fmt.Printf("OSBENCH conn %d: %d bytes, %.2f MB/s, first byte after %v\n", i, r.Bytes, r.GoodputMBps, r.FirstByte.Round(time.Millisecond))
	}
	return fmt.Sprintf("arm %s: %d connection(s), %d bytes %s in %.1fs; %s",
		p.arm, p.conns, total, p.dir, time.Since(start).Seconds(), d.Counters()), nil
}

// closeWithin runs f and fails if it has not returned within limit: a close
// that hangs would keep the guest from powering off.
func closeWithin(f func(), limit time.Duration) error {
	done := make(chan struct{})
	go func() { f(); close(done) }()
	select {
	case <-done:
		return nil
	case <-time.After(limit):
		return fmt.Errorf("closing the stack did not return within %v", limit)
	}
}
