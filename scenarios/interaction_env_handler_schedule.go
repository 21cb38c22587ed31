package scenarios

import (
	"fmt"

	"github.com/cockroachdb/datadriven"

	"github.com/relaysim/relaysim/sim/dst"
	"github.com/relaysim/relaysim/system"
)

// handleSchedule carries a model checker's counterexample in the file:
// the next explore block, played in mode, replays exactly this schedule
// (the "# relaysim schedule v1" format: stable op keys) instead of
// searching, so the file fails while the bug is there. A schedule belongs
// to its mode (op keys differ between modes): played in another mode, the
// block searches as usual. A schedule the code no longer follows (the bug
// fixed may park other ops) is a divergence, an error naming the op.
//
// Example:
//
//	schedule mode=bulk
//	# relaysim schedule v1: one choice per line (op key, key!fault, or @tick)
//	u1|client|a1 send r1 hi
//	----
func (e *Env) handleSchedule(d *datadriven.TestData) (string, error) {
	var mode string
	for _, a := range d.CmdArgs {
		if a.Key != "mode" || len(a.Vals) != 1 {
			return "", fmt.Errorf("schedule: takes mode=M only (the mode the schedule was found in)")
		}
		mode = a.Vals[0]
	}
	if _, err := system.ParseMode(mode); err != nil {
		return "", fmt.Errorf("schedule: mode=%s: %w", mode, err)
	}
	s, err := dst.ParseSchedule(d.Input)
	if err != nil {
		return "", fmt.Errorf("schedule: %w", err)
	}
	if system.Mode(mode) == e.Mode {
		e.replay, e.replayBuild = s, dst.ScheduleBuild(d.Input)
	}
	return fmt.Sprintf("the next explore block in %s replays these %d choices\n", mode, len(s)), nil
}
