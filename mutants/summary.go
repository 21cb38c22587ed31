package mutants

import (
	"encoding/json"
	"strings"
)

// Summary is the JSON line `relaysim run`, `replay`, `equiv` and `explore` print just
// before their last line (cmd/relaysim/summary.go writes it), and the
// typed result such a run writes to the file its parent names
// (internal/proc). The catalog runs relaysim through proc.Run and reads
// a run's class from its exit code and the violated properties from
// this result, never from the text it prints.
type Summary struct {
	Summary    string   `json:"summary"` // "ok", "violation" or "harness-error"
	Exit       int      `json:"exit"`
	Command    string   `json:"command"`
	Seed       string   `json:"seed"`
	Mode       string   `json:"mode"`
	Violations []string `json:"violations"`
	Error      string   `json:"error"`
	TraceHash  string   `json:"trace_hash"`
	Replay     string   `json:"replay"`
	// Evidence: a failed run's first banner lines (error, bubble, and the
	// first "violated: <property>: ..." line of each property).
	Evidence []string `json:"evidence"`
	// explore only: schedules run, distinct terminal states, whether the
	// search finished, and the schedules run until the first violation.
	Schedules      int            `json:"schedules"`
	Terminal       map[string]int `json:"terminal"` // per search (mode)
	Exhausted      bool           `json:"exhausted"`
	FirstViolation int            `json:"first_violation"`
	// sweep only (the probes suite): its runs, and the required code
	// probes no run hit.
	Runs        int      `json:"runs"`
	UnhitProbes []string `json:"unhit_probes"`
}

// summaryPrefix starts a summary line and nothing else a run prints.
const summaryPrefix = `{"summary":`

// ParseSummary returns the last summary line of out, for a tool that has
// only a run's printed text (the catalog itself reads result files); false when there is
// none (the process died before it could print one) or it does not parse.
func ParseSummary(out string) (Summary, bool) {
	var last string
	for l := range strings.Lines(out) {
		if l = strings.TrimSpace(l); strings.HasPrefix(l, summaryPrefix) {
			last = l
		}
	}
	var s Summary
	if last == "" || json.Unmarshal([]byte(last), &s) != nil {
		return Summary{}, false
	}
	return s, true
}
