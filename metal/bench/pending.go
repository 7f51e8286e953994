package bench

import (
	"context"
	"errors"

	"github.com/netramp/netramp/metal/report"
)

// pendingArm stands for an arm whose parts are not in this build yet; it
// never runs and says why, so a rule that needs it is NOT JUDGED.
type pendingArm struct {
	tb, why string
}

func (a *pendingArm) Unavailable() string           { return a.why }
func (a *pendingArm) Timebase() string              { return a.tb }
func (a *pendingArm) PathName(preset string) string { return "wire preset " + preset }
func (a *pendingArm) Describe() map[string]string   { return map[string]string{} }
func (a *pendingArm) RunRow(context.Context, RowSpec) ([]report.Conn, error) {
	return nil, errors.New(a.why)
}
