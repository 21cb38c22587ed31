package mutants

import (
	"strings"
	"testing"
)

// TestProbesSuite: a probes mutant changes the harness (sim/), names
// -require-probes and the pseudo-property require-probes; its sweep is
// caught only on unhit probes with no property violated.
func TestProbesSuite(t *testing.T) {
	good := "name: x\nstory: s\nfile: sim/a.go\nproperty: require-probes\nsuite: probes\nargs: -seeds 1-2 -require-probes a.b\n-- find --\na\n-- replace --\nb\n"
	if _, err := Parse("x.txtar", []byte(good)); err != nil {
		t.Fatalf("good file: %v", err)
	}
	for why, text := range map[string]string{
		"relay file":       strings.Replace(good, "sim/a.go", "system/a.go", 1),
		"no require flag":  strings.Replace(good, " -require-probes a.b", "", 1),
		"another property": strings.Replace(good, "property: require-probes", "property: no-loss", 1),
		"sim in a sweep":   strings.Replace(good, "suite: probes", "suite: sweep", 1),
	} {
		if _, err := Parse("x.txtar", []byte(text)); err == nil {
			t.Errorf("%s: parsed without error", why)
		}
	}
	for _, c := range []struct {
		name string
		o    Outcome
		want string
	}{
		{"unhit", Outcome{Failed: true, Exit: 1, Summary: &Summary{Exit: 1, Violations: []string{}, UnhitProbes: []string{"a.b"}}}, Caught},
		{"all hit", Outcome{Exit: 0, Summary: &Summary{Exit: 0}}, Survived},
		{"a violation", Outcome{Failed: true, Exit: 1, Summary: &Summary{Exit: 1, Violations: []string{"no-loss"}, UnhitProbes: []string{"a.b"}}}, Other},
		{"no result", Outcome{Failed: true, Exit: 2}, Crash},
		{"hung", Outcome{TimedOut: true}, Crash},
		{"harness", Outcome{Failed: true, Exit: 3, Summary: &Summary{Exit: 3}}, Crash},
	} {
		if got := judgeProbes(c.o); got.Kind != c.want {
			t.Errorf("%s: %s, want %s", c.name, got.Kind, c.want)
		}
	}
}
