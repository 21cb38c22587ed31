package scenarios

import (
	"github.com/relaysim/relaysim/internal/proc"
	"github.com/relaysim/relaysim/model"
)

// recordViolations names vs's properties in the test binary's typed
// result, for a parent that runs it as a child (the mutant catalog's
// test and rapid suites judge that result, never the test's output).
// The test must fail as well.
func recordViolations(vs []model.Violation) {
	for _, v := range vs {
		_ = proc.AddViolation(v.Property, "violated: "+v.String())
	}
}
