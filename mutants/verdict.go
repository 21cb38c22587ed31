package mutants

import (
	"fmt"
	"slices"
	"strings"
)

// Verdict kinds. Only Caught counts: every other kind says why the suite
// did not show that it sees the bug.
const (
	Caught     = "caught"
	Survived   = "survived"    // the budget ran out and every run passed
	BuildError = "build-error" // the mutant does not compile
	Crash      = "crash"       // a panic, a bubble deadlock, a run that crashed or hung
	Other      = "other"       // other properties failed, not the named one
	Invalid    = "invalid"     // the mutant cannot be applied to this tree
)

// Outcome is what one run of a suite produced: its exit code and the
// typed result it wrote to the file its parent named (internal/proc).
// Every suite writes one: relaysim's run, replay, equiv and explore their
// summary, a go test binary (the test and rapid suites) the properties
// its tests saw violated (proc.AddViolation). Output is kept to quote,
// never judged.
type Outcome struct {
	Output     string
	Failed     bool // the command exited non-zero
	Exit       int  // its exit code (-1 when killed)
	TimedOut   bool // killed at its time limit
	BuildError bool
	Summary    *Summary // the typed result; nil when it wrote none
}

// Exit codes of relaysim (cmd/relaysim/summary.go).
const (
	exitViolation = 1
	exitHarness   = 3
)

// Verdict is the judgement of a suite's outcome against a mutant.
type Verdict struct {
	Kind     string
	Props    []string // for Other: the properties that did fail
	Evidence string   // the first line that shows the failure
}

func (v Verdict) String() string {
	if v.Kind == Other {
		return Other + ":" + strings.Join(v.Props, ",")
	}
	return v.Kind
}

// crashSigns are the marks of a run that did not finish normally: quoted
// as the evidence of a run that wrote no result, never a verdict.
var crashSigns = []string{
	"panic: ", "fatal error: ", "the run crashed", "deadlock", "bubble: ",
	"test timed out", "[setup failed]",
}

// Judge decides what an outcome says about a mutant that names property,
// from its exit code and its typed result: caught only when it exited 1
// naming property. A failure of other properties, a crash, a hang or a
// failure with no result (a go test that failed outside every property
// check) is reported as such.
func Judge(property string, o Outcome) Verdict {
	if o.BuildError {
		return Verdict{Kind: BuildError, Evidence: firstLine(o.Output, "")}
	}
	return judgeRun(property, o)
}

// judgeRun judges a run by its exit code (the class) and its typed
// result (the properties, their evidence lines): caught when it exited 1
// naming property. Its printed text decides nothing; for a run without a
// result (it died) it is only quoted.
func judgeRun(property string, o Outcome) Verdict {
	if o.TimedOut {
		return Verdict{Kind: Crash, Evidence: "hung: killed at the run's time limit"}
	}
	var s Summary
	ok := o.Summary != nil
	if ok {
		s = *o.Summary
	}
	switch {
	case !ok && !o.Failed:
		return Verdict{Kind: Crash, Evidence: "exit 0 without a result"}
	case !ok:
		// The process died before its verdict: a panic, a fatal error.
		for _, sign := range crashSigns {
			if strings.Contains(o.Output, sign) {
				return Verdict{Kind: Crash, Evidence: firstLine(o.Output, sign)}
			}
		}
		return Verdict{Kind: Crash, Evidence: fmt.Sprintf("exit %d without a result: %s", o.Exit, firstLine(o.Output, ""))}
	case s.Exit != o.Exit:
		return Verdict{Kind: Crash, Evidence: fmt.Sprintf("the result says exit %d, the process exited %d", s.Exit, o.Exit)}
	}
	switch o.Exit {
	case 0:
		return Verdict{Kind: Survived}
	case exitViolation:
		if slices.Contains(s.Violations, property) {
			return Verdict{Kind: Caught, Evidence: evidence(s, property)}
		}
		if len(s.Violations) == 0 {
			return Verdict{Kind: Crash, Evidence: "exit 1 with no violated property in its result"}
		}
		return Verdict{Kind: Other, Props: s.Violations, Evidence: evidence(s, s.Violations[0])}
	case exitHarness:
		return Verdict{Kind: Crash, Evidence: "harness error: " + s.Error}
	}
	return Verdict{Kind: Crash, Evidence: fmt.Sprintf("exit %d: %s", o.Exit, s.Error)}
}

// judgeProbes judges a sweep of the probes suite: caught when it exited 1
// with required probes unhit and no property violated (a violation is
// another catch: the mutant is not the blind spot it claims to be).
func judgeProbes(o Outcome) Verdict {
	if o.TimedOut {
		return Verdict{Kind: Crash, Evidence: "hung: killed at the run's time limit"}
	}
	s := o.Summary
	switch {
	case s == nil:
		return Verdict{Kind: Crash, Evidence: fmt.Sprintf("exit %d without a result: %s", o.Exit, firstLine(o.Output, ""))}
	case s.Exit != o.Exit:
		return Verdict{Kind: Crash, Evidence: fmt.Sprintf("the result says exit %d, the process exited %d", s.Exit, o.Exit)}
	case o.Exit == 0:
		return Verdict{Kind: Survived, Evidence: "every required probe was hit"}
	case o.Exit == exitViolation && len(s.Violations) > 0:
		return Verdict{Kind: Other, Props: s.Violations, Evidence: evidence(*s, s.Violations[0])}
	case o.Exit == exitViolation && len(s.UnhitProbes) > 0:
		return Verdict{Kind: Caught, Evidence: "probes never hit: " + strings.Join(s.UnhitProbes, ", ")}
	}
	return Verdict{Kind: Crash, Evidence: fmt.Sprintf("exit %d: %s", o.Exit, s.Error)}
}

// evidence is a violated property's evidence line in s, or its name.
func evidence(s Summary, property string) string {
	for _, l := range s.Evidence {
		if strings.HasPrefix(l, "violated: "+property+":") {
			return l
		}
	}
	return "violated: " + property
}

// firstLine returns the first line of out containing sub (the first
// non-empty line when sub is empty), trimmed.
func firstLine(out, sub string) string {
	for _, l := range strings.Split(out, "\n") {
		if l = strings.TrimSpace(l); l != "" && strings.Contains(l, sub) {
			return l
		}
	}
	return ""
}
