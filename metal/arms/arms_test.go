package arms

import (
	"errors"
	"reflect"
	"testing"

	"github.com/netramp/netramp/cc"
)

// TestTableRunsTheDocumentedConfigurations pins what each arm runs: A is
// RFC 5681 slow start, B HyStart++ with the half-window rule, P B with
// pacing, D the default arm; anything else is refused by name.
func TestTableRunsTheDocumentedConfigurations(t *testing.T) {
	for name, want := range map[string]struct {
		arm    cc.Arm
		pacing bool
	}{"A": {cc.ArmA, false}, "B": {cc.ArmB, false}, "P": {cc.ArmB, true}, "D": {cc.ArmD, false}} {
		a, err := Lookup(name)
		if err != nil || a.Options.Arm != want.arm || a.Options.Pacing != want.pacing || a.Describe == "" {
			t.Errorf("arm %s: %+v, %v", name, a, err)
		}
	}
	if _, err := Lookup("Q"); !errors.Is(err, ErrUnknown) {
		t.Errorf("Lookup(Q) = %v, want ErrUnknown", err)
	}
	if got := Names(); len(got) != 4 || got[0] != "A" || got[1] != "B" || got[2] != "P" || got[3] != "D" {
		t.Errorf("Names() = %v", got)
	}
}

func TestDefaultIsTheArmOfTheZeroOptions(t *testing.T) {
	a, err := Lookup(Default())
	if err != nil {
		t.Fatal(err)
	}
	if a.Name != "D" || !reflect.ValueOf(a.Options).IsZero() {
		t.Fatalf("default arm %s runs %+v, want the zero tcp.Options", a.Name, a.Options)
	}
}
