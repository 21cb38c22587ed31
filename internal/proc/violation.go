package proc

import (
	"slices"
	"strings"
	"sync"
)

// TestResult is the typed result of a go test binary run as a child (the
// mutant catalog's test and rapid suites): the properties its tests saw
// violated, and for each the first evidence line ("violated: <property>:
// ..."). Its JSON is that of a relaysim run's summary, so that one judge
// reads both. A test binary that passes writes none.
type TestResult struct {
	Summary    string   `json:"summary"` // "violation"
	Exit       int      `json:"exit"`    // 1, what a failing test binary exits with
	Command    string   `json:"command"` // "test"
	Violations []string `json:"violations"`
	Evidence   []string `json:"evidence,omitempty"`
}

var violations struct {
	sync.Mutex
	r TestResult
}

// AddViolation is what a test calls when it finds property violated (a
// model property, or "determinism" for a seed that replayed
// differently), with the line that shows it. When the parent named a
// result file (EnvResult) the test binary's result there then lists the
// property; otherwise it does nothing. The test must still fail: a
// result names what failed, the exit code says that something did.
func AddViolation(property, evidence string) error {
	violations.Lock()
	defer violations.Unlock()
	r := &violations.r
	if !slices.Contains(r.Violations, property) {
		r.Violations = append(r.Violations, property)
		line, _, _ := strings.Cut(evidence, "\n")
		if !strings.HasPrefix(line, "violated: ") {
			line = "violated: " + property + ": " + line
		}
		r.Evidence = append(r.Evidence, line)
	}
	r.Summary, r.Exit, r.Command = "violation", 1, "test"
	return WriteResult(r)
}
