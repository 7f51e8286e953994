package bench

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"runtime/debug"

	"github.com/netramp/netramp/counters"
	"github.com/netramp/netramp/metal/arms"
	"github.com/netramp/netramp/metal/report"
	"github.com/netramp/netramp/nic/wire"
	"github.com/netramp/netramp/stack"
)

// realArm is this build's TCP at both ends of a nic/wire path in real time:
// the same preset, on the same releasing thread and with the same lateness
// histogram as the kernel's rows, so a row of it and a Linux row differ only
// in the TCP. A row's connections share one wire and one pair of stacks, as
// a Linux row's share two namespaces; nothing a connection learns about the
// path outlives it in this TCP.
type realArm struct{ arm arms.Arm }

// rowGCPercent is the GC target while a real-time row of ours runs.
const rowGCPercent = 800

func newRealArm(name string) (Arm, error) {
	a, err := arms.Lookup(name)
	if err != nil {
		return nil, fmt.Errorf("%w: rt:%s: %v", ErrUnknownArm, name, err)
	}
	return &realArm{a}, nil
}

func (a *realArm) Unavailable() string { return "" }
func (a *realArm) Timebase() string    { return Real }
func (a *realArm) PathName(preset string) string {
	return "wire preset " + preset + " (real time on its releasing thread)"
}
func (a *realArm) Describe() map[string]string {
	return map[string]string{"tcp": "netramp tcp", "arm": a.arm.Name, "options": a.arm.Describe}
}

func (a *realArm) RunRow(ctx context.Context, spec RowSpec) ([]report.Conn, error) {
	cfg, err := rowWire(spec)
	if err != nil {
		return nil, err
	}
	// The wire's releasing thread shares this process with both stacks, and
	// every collection's stop-the-world stops it too: fewer collections keep
	// the wire punctual. The kernel's rows have no such cost to hide.
	defer debug.SetGCPercent(debug.SetGCPercent(rowGCPercent))
	w, err := wire.NewRealTime(cfg)
	if err != nil {
		return nil, err
	}
	defer w.Close()
	reg := counters.NewRegistry()
	w.Counters(reg, "nic")
	src, err := armStack(a.arm, reg, w.A(), sourcePrefix)
	if err != nil {
		return nil, err
	}
	defer src.Close()
	dst, err := armStack(a.arm, reg, w.B(), sinkPrefix)
	if err != nil {
		return nil, err
	}
	defer dst.Close()
	conns, err := runRealRow(ctx, spec,
		func() (net.Listener, error) { return dst.Listen(sinkAddr) },
		func(ctx context.Context, _ string) (net.Conn, error) { return src.Dial(ctx, sinkAddr) },
		func() map[string]uint64 { return reg.Snapshot() })
	spec.reportLate(w)
	return conns, err
}

// rowWire is the path of a real-time row of spec: its preset and seed,
// without the trace hash.
func rowWire(spec RowSpec) (wire.Config, error) {
	cfg, err := wire.Preset(spec.Preset)
	if err != nil {
		return cfg, err
	}
	cfg.Seed = spec.Seed
	cfg.NoTraceHash = true
	return cfg, nil
}

// armStack is a stack running arm's TCP on link at prefix, its counters
// and the TCP's in reg.
func armStack(arm arms.Arm, reg *counters.Registry, link *wire.Endpoint, prefix netip.Prefix) (*stack.Stack, error) {
	o := arm.Options
	o.Counters = reg
	return stack.New(stack.Options{TCP: o, Counters: reg, NICs: []stack.NIC{{Link: link, Addr: prefix}}})
}
