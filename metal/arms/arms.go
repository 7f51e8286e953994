// Package arms is the one table of this build's TCP configurations that the
// bench compares: the name of each arm, the tcp.Options it runs and what they
// mean. The bench's virtual-time and real-time arms, the QEMU guest and the
// commands all read it, so an arm means the same thing everywhere.
package arms

import (
	"errors"
	"fmt"
	"reflect"
	"strings"

	"github.com/netramp/netramp/cc"
	"github.com/netramp/netramp/tcp"
)

// ErrUnknown reports a name that is not in the table.
var ErrUnknown = errors.New("arms: unknown arm")

// Arm is one row of the table.
type Arm struct {
	Name    string
	Options tcp.Options
	// Describe says what the options do, for tables and evidence.
	Describe string
}

// table is the arms in their customary order.
var table = []Arm{
	{"A", tcp.Options{Arm: cc.ArmA},
		"Arm: A (RFC 5681 min(N, SMSS) slow start, card stop limited only under one SMSS of room)"},
	{"B", tcp.Options{Arm: cc.ArmB},
		"Arm: B (HyStart++ L = 8, half-window card rule, growth past the ACK clock paced)"},
	{"P", tcp.Options{Arm: cc.ArmB, Pacing: true},
		"Arm: B, Pacing: true (HyStart++ with L = infinity)"},
	{"D", tcp.Options{Arm: cc.ArmD},
		"Arm: D, the default (B's ACK clock, HyStart++ L = infinity with the paced arm's exits, growth past the ACK clock paced)"},
}

// Default is the name of the arm a user gets who sets nothing: the one whose
// Options equal the zero tcp.Options. The bench's comparisons with the
// kernel and with gVisor are about this arm.
func Default() string {
	for _, a := range table {
		if reflect.ValueOf(a.Options).IsZero() {
			return a.Name
		}
	}
	panic("arms: no arm runs the zero tcp.Options")
}

// All returns a copy of the table, in order: A, B, P, D.
func All() []Arm { return append([]Arm(nil), table...) }

// Names returns the arms' names in order: A, B, P, D.
func Names() []string {
	n := make([]string, len(table))
	for i, a := range table {
		n[i] = a.Name
	}
	return n
}

// Lookup returns the arm named name, or an error wrapping ErrUnknown that
// lists the valid names.
func Lookup(name string) (Arm, error) {
	for _, a := range table {
		if a.Name == name {
			return a, nil
		}
	}
	return Arm{}, fmt.Errorf("%w %q (want %s)", ErrUnknown, name, strings.Join(Names(), ", "))
}

// Is reports whether name is in the table.
func Is(name string) bool {
	_, err := Lookup(name)
	return err == nil
}
