package sim

import (
	"testing"

	"github.com/relaysim/relaysim/model"
	"github.com/relaysim/relaysim/system"
)

// Modes are the relay modes mode equivalence compares: all of them.
var Modes = system.Modes

// Equivalence runs cfg's calm variant (CalmVariant) in every relay mode and
// compares what every user received (model.CheckModeEquivalence). Each run
// is also judged on its own; the returned violations are only the
// differential ones. t may be nil outside tests.
func Equivalence(t *testing.T, cfg Config) ([]*Result, []model.Violation) {
	var runs []*Result
	for _, m := range Modes {
		runs = append(runs, Run(t, cfg.CalmVariant(m)))
	}
	var vs []model.Violation
	for i := 1; i < len(runs); i++ {
		a, b := runs[0].History, runs[i].History
		if a == nil || b == nil {
			continue // the run did not complete: its own result says why
		}
		vs = append(vs, model.CheckModeEquivalence(a, b)...)
	}
	return runs, vs
}
