package relaysim_test

import (
	"encoding/json"
	"errors"
	"io"
	"os/exec"
	"strings"
	"testing"
)

// The rooms of the repository and what each may import (docs/architecture.md).
// Only comments said so before; a change that crosses a wall fails here.

const module = "github.com/relaysim/relaysim"

// listed is what `go list -json` says of one package.
type listed struct {
	ImportPath   string
	Deps         []string // every package it imports, transitively (not its tests)
	TestImports  []string
	XTestImports []string
}

// goList lists the packages matching pattern.
func goList(t *testing.T, pattern string) []listed {
	t.Helper()
	out, err := exec.Command("go", "list", "-json", pattern).Output()
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			t.Fatalf("go list %s: %v\n%s", pattern, err, ee.Stderr)
		}
		t.Fatalf("go list %s: %v", pattern, err)
	}
	var pkgs []listed
	dec := json.NewDecoder(strings.NewReader(string(out)))
	for {
		var p listed
		if err := dec.Decode(&p); err == io.EOF {
			break
		} else if err != nil {
			t.Fatalf("go list %s: %v", pattern, err)
		}
		pkgs = append(pkgs, p)
	}
	if len(pkgs) == 0 {
		t.Fatalf("go list %s: no packages", pattern)
	}
	return pkgs
}

// ours reports whether path is a package of this module.
func ours(path string) bool { return path == module || strings.HasPrefix(path, module+"/") }

// standard reports whether path is in the standard library: its first
// element has no dot (every other module path's has).
func standard(path string) bool {
	first, _, _ := strings.Cut(path, "/")
	return !strings.Contains(first, ".")
}

// within reports whether path is room or one of its sub-packages.
func within(path, room string) bool {
	return path == module+"/"+room || strings.HasPrefix(path, module+"/"+room+"/")
}

// The relay is production code: it never imports the simulation, the
// oracle, the stories or the expected outputs, in its code or its tests —
// nothing of ours outside system/.
func TestSystemImportsNothingOfOurs(t *testing.T) {
	for _, p := range goList(t, "./system/...") {
		for _, d := range append(append(p.Deps, p.TestImports...), p.XTestImports...) {
			if ours(d) && !within(d, "system") {
				t.Errorf("%s imports %s: system/ may import nothing of ours outside system/", p.ImportPath, d)
			}
		}
	}
}

// The oracle never reuses the code it judges: model/ imports nothing of
// ours, in its code or its tests.
func TestModelImportsNothingOfOurs(t *testing.T) {
	for _, p := range goList(t, "./model/...") {
		for _, d := range append(append(p.Deps, p.TestImports...), p.XTestImports...) {
			if ours(d) && !within(d, "model") {
				t.Errorf("%s imports %s: model/ imports nothing of ours", p.ImportPath, d)
			}
		}
	}
}

// The kernel is relay-agnostic: sim/dst and its sub-packages import the
// standard library only (their tests may use test helpers, none of ours
// but the kernel).
func TestKernelImportsStandardLibraryOnly(t *testing.T) {
	for _, p := range goList(t, "./sim/dst/...") {
		for _, d := range p.Deps {
			if !standard(d) && !within(d, "sim/dst") {
				t.Errorf("%s imports %s: the kernel imports the standard library only", p.ImportPath, d)
			}
		}
		for _, d := range append(p.TestImports, p.XTestImports...) {
			if ours(d) && !within(d, "sim/dst") {
				t.Errorf("%s's tests import %s: the kernel's tests need nothing of the harness", p.ImportPath, d)
			}
		}
	}
}
