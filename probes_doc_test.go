package relaysim_test

import (
	"os"
	"regexp"
	"slices"
	"testing"

	"github.com/relaysim/relaysim/system"
)

// TestProbesDoc: docs/probes.md has a row for every registered code probe
// (system.Probes) and for no other, and every probe CI requires
// (.ci/required-probes) is registered.
func TestProbesDoc(t *testing.T) {
	doc, err := os.ReadFile("docs/probes.md")
	if err != nil {
		t.Fatal(err)
	}
	var rows []string
	for _, m := range regexp.MustCompile("(?m)^\\| `([^`]+)` \\|").FindAllStringSubmatch(string(doc), -1) {
		rows = append(rows, m[1])
	}
	var names []string
	for _, p := range system.Probes() {
		names = append(names, p.Name)
		if !slices.Contains(rows, p.Name) {
			t.Errorf("docs/probes.md has no row for probe %s", p.Name)
		}
	}
	for _, r := range rows {
		if !slices.Contains(names, r) {
			t.Errorf("docs/probes.md has a row for %s, which system/probes.go does not register", r)
		}
	}
	req, err := os.ReadFile(".ci/required-probes")
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range regexp.MustCompile(`\S+`).FindAllString(string(req), -1) {
		if !slices.Contains(names, name) {
			t.Errorf(".ci/required-probes names %s, which is no probe", name)
		}
	}
}
