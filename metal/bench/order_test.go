package bench

import (
	"testing"

	"github.com/netramp/netramp/metal/arms"
	"github.com/netramp/netramp/metal/judge"
)

// TestDefaultPlanJudgesTheDefaultArmAgainstLinux: the default bench runs at
// least three rows each of the kernel, gVisor and the default arm in real
// time, sending to the kernel's receiver (KernelSinkDefault) and at both
// ends (RealDefault), both from arms.Default; every rule of the default
// rules compares two arms the order runs, on one time base; the rules hold
// the first against Linux, whose rows have the same receiver, and the
// second against gVisor, whose rows run its TCP at both ends. The margin of
// a comparison is the spread of each arm's rows, so it needs three of each.
func TestDefaultPlanJudgesTheDefaultArmAgainstLinux(t *testing.T) {
	if want := "rt:" + arms.Default(); RealDefault != want {
		t.Fatalf("RealDefault %q, want %q", RealDefault, want)
	}
	if want := "rtk:" + arms.Default(); KernelSinkDefault != want {
		t.Fatalf("KernelSinkDefault %q, want %q", KernelSinkDefault, want)
	}
	held := map[string]string{"Linux": KernelSinkDefault, "gVisor": RealDefault}
	rows := map[string]int{}
	for _, a := range DefaultOrder {
		rows[a]++
	}
	for _, a := range []string{RealDefault, KernelSinkDefault, "Linux", "gVisor"} {
		if rows[a] < 3 {
			t.Errorf("DefaultOrder runs %d rows of %s, want at least 3", rows[a], a)
		}
	}
	rules, err := judge.Parse("default.rules", judge.DefaultRules)
	if err != nil {
		t.Fatal(err)
	}
	defs := DefaultDefinitions()
	timebase := func(name string) string {
		def, ok := defs[name]
		if !ok {
			t.Fatalf("the default rules name %q, which no default definition builds", name)
		}
		a, err := Build(name, def, ArmOptions{WorkDir: t.TempDir()})
		if err != nil {
			t.Fatal(err)
		}
		return a.Timebase()
	}
	against := map[string]int{}
	for _, r := range rules {
		for _, a := range []string{r.X, r.Y} {
			if a != "" && rows[a] == 0 {
				t.Errorf("rule %s names %s, which DefaultOrder does not run", r.Name, a)
			}
		}
		if r.Y == "" {
			continue
		}
		if x, y := timebase(r.X), timebase(r.Y); x != y {
			t.Errorf("rule %s compares %s (%s time) with %s (%s time)", r.Name, r.X, x, r.Y, y)
		}
		if want, ok := held[r.Y]; ok {
			if r.X != want {
				t.Errorf("rule %s holds %s against %s, want %s", r.Name, r.X, r.Y, want)
			}
			against[r.Y]++
		}
	}
	for y, x := range held {
		if against[y] == 0 {
			t.Errorf("no default rule holds %s against %s", x, y)
		}
	}
}
