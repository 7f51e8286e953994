//go:build linux

package bench

import (
	"context"
	"fmt"
	"net"
	"runtime/debug"

	"github.com/netramp/netramp/counters"
	"github.com/netramp/netramp/metal/arms"
	"github.com/netramp/netramp/metal/report"
	"github.com/netramp/netramp/nic/linuxpeer"
	"github.com/netramp/netramp/nic/netns"
)

// kernelSinkArm is this build's TCP sending, on side A of a real-time
// nic/wire, to the host kernel's TCP receiving in a network namespace on
// side B (nic/linuxpeer's Peer): the sink the Linux rows read from, on the
// same preset, releasing thread and lateness histogram. A row of it and a
// Linux row differ only in the sender, and the receiver-side marks are the
// same kernel's reads in both. The process runs one TCP stack, not two, so
// the emulator shares the cores with a sender only, as in the Linux rows.
//
// Departure from the preset, as for the Linux rows: the kernel's side has no
// TX-ring model (BtoA.TxRing 0; its own device queue stands for its card).
// Our side keeps the preset's ring.
type kernelSinkArm struct{ arm arms.Arm }

func newKernelSinkArm(name string) (Arm, error) {
	a, err := arms.Lookup(name)
	if err != nil {
		return nil, fmt.Errorf("%w: rtk:%s: %v", ErrUnknownArm, name, err)
	}
	return &kernelSinkArm{a}, nil
}

func (a *kernelSinkArm) Unavailable() string {
	if err := netns.Check(); err != nil {
		return err.Error()
	}
	return ""
}

func (a *kernelSinkArm) Timebase() string { return Real }
func (a *kernelSinkArm) PathName(preset string) string {
	return "wire preset " + preset + " (real time on its releasing thread, the kernel's receiver behind a TUN bridge)"
}
func (a *kernelSinkArm) Describe() map[string]string {
	return map[string]string{"tcp": "netramp tcp sending to the Linux kernel's receiver", "arm": a.arm.Name, "options": a.arm.Describe,
		"sysctls": fmt.Sprintf("receiver: net.ipv4.tcp_rmem=4096 131072 %d", linuxTCPMem)}
}

func (a *kernelSinkArm) RunRow(ctx context.Context, spec RowSpec) ([]report.Conn, error) {
	cfg, err := rowWire(spec)
	if err != nil {
		return nil, err
	}
	cfg.BtoA.TxRing = 0
	defer debug.SetGCPercent(debug.SetGCPercent(rowGCPercent))
	p, err := linuxpeer.Start(ctx, linuxpeer.Config{Wire: cfg, TCPMem: linuxTCPMem})
	if err != nil {
		return nil, fmt.Errorf("kernel sink: %w", err)
	}
	defer p.Close()
	if p.Addr() != sinkAddr.Addr() || p.LocalPrefix() != sourcePrefix {
		return nil, fmt.Errorf("kernel sink: at %v from %v, want %v from %v", p.Addr(), p.LocalPrefix(), sinkAddr.Addr(), sourcePrefix)
	}
	reg := counters.NewRegistry()
	p.Wire().Counters(reg, "nic")
	src, err := armStack(a.arm, reg, p.Link(), sourcePrefix)
	if err != nil {
		return nil, err
	}
	defer src.Close()
	conns, err := runRealRow(ctx, spec,
		func() (net.Listener, error) { return p.Listen(sinkAddr.Port()) },
		func(ctx context.Context, _ string) (net.Conn, error) { return src.Dial(ctx, sinkAddr) },
		func() map[string]uint64 { return reg.Snapshot() })
	spec.reportLate(p.Wire())
	return conns, err
}
