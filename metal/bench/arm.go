// Package bench runs the A/B bench: arms (builds or configurations of a
// TCP) in a fixed row order, each row a few osbench-lan/3 connections on a
// named path, then the judge's verdict on rules written before the run, the
// table, the plot and an evidence folder.
package bench

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/netramp/netramp/metal/arms"
	"github.com/netramp/netramp/metal/osbench"
	"github.com/netramp/netramp/metal/report"
	"github.com/netramp/netramp/nic/wire"
)

// Timebases: an arm runs in virtual time (exact, repeatable) or real time.
const (
	Virtual = "virtual"
	Real    = "real"
)

// ErrUnknownArm reports an arm name with no definition.
var ErrUnknownArm = errors.New("bench: unknown arm")

// RowSpec is what one row runs.
type RowSpec struct {
	Preset string // a nic/wire preset name
	Dir    osbench.Direction
	Bytes  int64 // payload per connection
	Conns  int
	// Seed is the row's path seed: the i-th row of every arm gets the same
	// seed, so paired rows see the same random draws on a lossy path.
	Seed int64
	// Progress, if set, is told when each connection starts (from 0).
	Progress func(conn int)
	// Late, if set, is given the lateness of the real-time wire a row ran
	// on and its receivers' input lag (wire.Wire.InputLag), once the row
	// ends; arms on no such wire never call it.
	Late func(late, lag wire.Lateness)
}

// reportLate hands a real-time row's wire lateness and input lag to Late,
// if set.
func (s RowSpec) reportLate(w *wire.Wire) {
	if s.Late != nil {
		s.Late(w.Lateness(), w.InputLag())
	}
}

// Arm is one side of a comparison.
type Arm interface {
	// Unavailable says why the arm cannot run on this host ("" = it can).
	Unavailable() string
	// Timebase is Virtual or Real.
	Timebase() string
	// PathName describes the path a row runs on, for the table and evidence.
	PathName(preset string) string
	// RunRow runs one row's connections in order. Records need only Report,
	// Counters and Wall; the runner fills in the rest.
	RunRow(ctx context.Context, spec RowSpec) ([]report.Conn, error)
	// Describe is the arm's revision and options, for the evidence.
	Describe() map[string]string
}

// Definitions maps arm names to constructors. A definition string is one of:
//
//	A, B, P, D        this build's TCP in virtual time (the arm table, metal/arms; D is the default)
//	rt:A, ..., rt:D   the same TCP on the wire in real time, as the kernel's rows run
//	rtk:A, ..., rtk:D the same TCP in real time sending to the kernel's receiver, the
//	                  Linux rows' sink, so the two differ only in the sender (root, Linux)
//	gvisor            gVisor's own TCP on a real-time wire
//	linux[:<cc>]      the host kernel's TCP (cubic, or the congestion control named) on a
//	                  real-time wire through nic/linuxpeer, where the host allows it
//	loopback          the host kernel's TCP over 127.0.0.1, no path emulation (a self-check of the bench)
//	rev:<git-rev>:<builtin>  a build of another revision of this repository, run as a subprocess arm
//	boot:<command>    a command that boots an image whose source dials this host's sink
//	boot:qemu[:arm]   the QEMU hook, the image's source on arm A, B, P, D (default) or gvisor (see boot.go)
type Definitions map[string]string

// DefaultDefinitions name the built-in arms, the default arm's real-time
// rows (RealDefault, KernelSinkDefault) among them.
func DefaultDefinitions() Definitions {
	d := Definitions{RealDefault: RealDefault, KernelSinkDefault: KernelSinkDefault, "gVisor": "gvisor", "Linux": "linux", "loopback": "loopback"}
	for _, n := range arms.Names() {
		d[n] = n
	}
	return d
}

// ParseDefinitions reads "Name=def,Name=def" on top of the defaults.
func ParseDefinitions(s string) (Definitions, error) {
	d := DefaultDefinitions()
	if strings.TrimSpace(s) == "" {
		return d, nil
	}
	for _, kv := range strings.Split(s, ",") {
		name, def, ok := strings.Cut(strings.TrimSpace(kv), "=")
		if !ok || name == "" || def == "" || strings.ContainsAny(name, " \t") {
			return nil, fmt.Errorf("bench: arm definition %q: want Name=definition", kv)
		}
		d[name] = def
	}
	return d, nil
}

// Options shared by the arms a run builds.
type ArmOptions struct {
	Repo      string // repository root, for rev: arms
	SinkAddr  string // listen address of boot: arms' sink
	WorkDir   string // scratch space for builds
	LogPrefix string
}

// Build makes the arm a definition names.
func Build(name, def string, o ArmOptions) (Arm, error) {
	switch {
	case arms.Is(def):
		return newVirtualArm(def)
	case strings.HasPrefix(def, "rt:"):
		return newRealArm(strings.TrimPrefix(def, "rt:"))
	case strings.HasPrefix(def, "rtk:"):
		return newKernelSinkArm(strings.TrimPrefix(def, "rtk:"))
	case def == "gvisor":
		return newGVisorArm(), nil
	case def == "linux":
		return newLinuxArm("cubic"), nil
	case strings.HasPrefix(def, "linux:") && len(def) > len("linux:"):
		return newLinuxArm(strings.TrimPrefix(def, "linux:")), nil
	case def == "loopback":
		return &loopbackArm{}, nil
	case strings.HasPrefix(def, "rev:"):
		rest := strings.TrimPrefix(def, "rev:")
		rev, inner, ok := strings.Cut(rest, ":")
		if !ok || rev == "" || inner == "" {
			return nil, fmt.Errorf("bench: arm %s: %q: want rev:<git-rev>:<builtin arm>", name, def)
		}
		return newRevArm(o.Repo, o.WorkDir, rev, inner), nil
	case strings.HasPrefix(def, "boot:"):
		return newBootArm(name, strings.TrimPrefix(def, "boot:"), o.SinkAddr)
	}
	return nil, fmt.Errorf("%w: %s=%q (want A, B, P, D, rt:<arm>, rtk:<arm>, gvisor, linux[:<cc>], loopback, rev:<rev>:<arm>, boot:<command>)", ErrUnknownArm, name, def)
}

// sortedKeys is for stable evidence.
func sortedKeys(m map[string]string) []string {
	k := make([]string, 0, len(m))
	for x := range m {
		k = append(k, x)
	}
	sort.Strings(k)
	return k
}
