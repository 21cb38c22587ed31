package mutants

import (
	"regexp"
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

// Outcome is what one run of a suite produced.
type Outcome struct {
	Output     string
	Failed     bool // the command exited non-zero
	TimedOut   bool // killed at its time limit
	BuildError bool
}

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

var violatedRe = regexp.MustCompile(`violated: ([a-z][a-z-]*[a-z]):`)

// Violated lists the properties named in "violated: <property>:" lines,
// in order of first appearance.
func Violated(out string) []string {
	var props []string
	for _, m := range violatedRe.FindAllStringSubmatch(out, -1) {
		if !slices.Contains(props, m[1]) {
			props = append(props, m[1])
		}
	}
	return props
}

// crashSigns are the marks of a run that did not finish normally.
var crashSigns = []string{
	"panic: ", "fatal error: ", "the run crashed", "deadlock", "bubble: ",
	"test timed out", "[setup failed]",
}

// Judge decides what an outcome says about a mutant that names property.
// The named property is caught only when the suite failed and printed it;
// a failure of other properties, a crash or a timeout is reported as such.
func Judge(property string, o Outcome) Verdict {
	if o.BuildError {
		return Verdict{Kind: BuildError, Evidence: firstLine(o.Output, "")}
	}
	props := Violated(o.Output)
	if o.Failed && !o.TimedOut {
		if slices.Contains(props, property) {
			return Verdict{Kind: Caught, Evidence: firstLine(o.Output, "violated: "+property+":")}
		}
		if ev, ok := pseudo[property]; ok && strings.Contains(o.Output, ev) {
			return Verdict{Kind: Caught, Evidence: firstLine(o.Output, ev)}
		}
	}
	if len(props) > 0 && o.Failed {
		return Verdict{Kind: Other, Props: props, Evidence: firstLine(o.Output, "violated: ")}
	}
	if o.TimedOut {
		return Verdict{Kind: Crash, Evidence: "timed out"}
	}
	if !o.Failed {
		return Verdict{Kind: Survived}
	}
	for _, sign := range crashSigns {
		if strings.Contains(o.Output, sign) {
			return Verdict{Kind: Crash, Evidence: firstLine(o.Output, sign)}
		}
	}
	// A failure that names no property and shows no crash: still not
	// caught, and worth a look.
	return Verdict{Kind: Other, Props: []string{"unnamed"}, Evidence: firstLine(o.Output, "FAIL")}
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
