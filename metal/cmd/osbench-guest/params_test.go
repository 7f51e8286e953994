//go:build linux

package main

import (
	"errors"
	"net/netip"
	"testing"

	"github.com/netramp/netramp/metal/arms"
	"github.com/netramp/netramp/metal/osbench"
)

func TestCmdlineGivesTheRowAndIgnoresTheKernelsArguments(t *testing.T) {
	p, err := parseCmdline("console=ttyS0 panic=-1 quiet osbench.sink=10.0.2.2:40123 osbench.dir=download osbench.bytes=8000000 osbench.conns=3 osbench.arm=A\n")
	if err != nil {
		t.Fatal(err)
	}
	want := params{sink: netip.MustParseAddrPort("10.0.2.2:40123"), dir: osbench.Download, bytes: 8000000, conns: 3, arm: "A", backend: "sysfs"}
	if p != want {
		t.Fatalf("got %+v, want %+v", p, want)
	}
}

func TestCmdlineDefaultsToOneUploadOnTheDefaultArm(t *testing.T) {
	p, err := parseCmdline("osbench.sink=10.0.2.2:1 osbench.bytes=1")
	if err != nil {
		t.Fatal(err)
	}
	if p.dir != osbench.Upload || p.conns != 1 || p.arm != arms.Default() || p.backend != "sysfs" {
		t.Fatalf("defaults: %+v", p)
	}
}

func TestCmdlineRefusesWhatTheRowCannotRun(t *testing.T) {
	base := "osbench.sink=10.0.2.2:5 osbench.bytes=10 "
	for _, line := range []string{
		"osbench.bytes=10",                      // no sink
		"osbench.sink=10.0.2.2:5",               // no bytes
		"osbench.sink=10.0.2.2 osbench.bytes=1", // no port
		base + "osbench.bytes=0",
		base + "osbench.bytes=-5",
		base + "osbench.conns=0",
		base + "osbench.dir=sideways",
		base + "osbench.arm=C",
		base + "osbench.backend=kernel",
		base + "osbench.bites=10",
	} {
		if _, err := parseCmdline(line); !errors.Is(err, errParam) {
			t.Errorf("%q: err = %v, want errParam", line, err)
		}
	}
}

func TestArmsRunTheBenchsTCPConfigurations(t *testing.T) {
	for _, name := range arms.Names() {
		a, _ := arms.Lookup(name)
		o, gv, err := armOptions(name)
		if err != nil || gv || o.Arm != a.Options.Arm || o.Pacing != a.Options.Pacing {
			t.Errorf("arm %s: %+v gvisor=%v err=%v, want the table's %+v", name, o, gv, err, a.Options)
		}
	}
	if _, gv, err := armOptions("gvisor"); err != nil || !gv {
		t.Errorf("gvisor: gvisor=%v err=%v", gv, err)
	}
	if _, _, err := armOptions("Q"); !errors.Is(err, arms.ErrUnknown) {
		t.Errorf("Q: err = %v, want arms.ErrUnknown", err)
	}
}
