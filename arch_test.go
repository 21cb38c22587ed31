package relaysim_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"go/ast"
	"go/parser"
	"go/token"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/relaysim/relaysim/sim/plan"
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

// maxSimFileLines is the most lines a non-test, non-generated Go file of
// sim/ (the harness, the kernel and their sub-packages) may have: a file
// is one concept, and a longer one is split by concept (issue 28).
const maxSimFileLines = 600

// generated matches the standard header of a generated Go file
// (https://go.dev/s/generatedcode).
var generated = regexp.MustCompile(`(?m)^// Code generated .* DO NOT EDIT\.$`)

// isGenerated reports whether src is a generated Go file: the header is a
// line before the package clause.
func isGenerated(src []byte) bool {
	head := src
	if loc := packageClause.FindIndex(src); loc != nil {
		head = src[:loc[0]]
	}
	return generated.Match(head)
}

// packageClause matches the start of a package clause's line.
var packageClause = regexp.MustCompile(`(?m)^package `)

// Every non-test Go file of sim/ has at most maxSimFileLines lines, but
// for generated ones; testdata folders are not Go packages and are left
// out, as the go tool leaves them out.
func TestSimFilesAreSmall(t *testing.T) {
	n := 0
	err := filepath.WalkDir("sim", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if name := d.Name(); path != "sim" && (name == "testdata" || strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_")) {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		src, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		if isGenerated(src) {
			return nil
		}
		n++
		if lines := countLines(src); lines > maxSimFileLines {
			t.Errorf("%s has %d lines (at most %d): split it by concept into files of the same package", path, lines, maxSimFileLines)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if n == 0 {
		t.Fatal("no Go files found under sim/")
	}
}

// countLines counts src's lines as wc -l does, plus a last line without
// a newline.
func countLines(src []byte) int {
	n := 0
	sc := bufio.NewScanner(bytes.NewReader(src))
	sc.Buffer(make([]byte, 0, 64*1024), len(src)+1)
	for sc.Scan() {
		n++
	}
	return n
}

func TestIsGenerated(t *testing.T) {
	for _, c := range []struct {
		src  string
		want bool
	}{
		{"// Code generated by protoc-gen-go. DO NOT EDIT.\n\npackage x\n", true},
		{"// Copyright.\n\n// Code generated by stringer; DO NOT EDIT.\n\npackage x\n", true},
		{"package x\n\n// Code generated by hand. DO NOT EDIT.\n", false},
		{"// Code generated by hand, edit freely.\npackage x\n", false},
		{"package x\n", false},
	} {
		if got := isGenerated([]byte(c.src)); got != c.want {
			t.Errorf("isGenerated(%q) = %v, want %v", c.src, got, c.want)
		}
	}
}

// The plan is data: sim/plan imports no runtime harness — not sim or the
// kernel, not the relay, not the stories or the commands, not gRPC — in
// its code or its tests; model (the fault kinds) it may.
func TestPlanImportsNoHarness(t *testing.T) {
	for _, p := range goList(t, "./sim/plan/...") {
		for _, d := range append(append(p.Deps, p.TestImports...), p.XTestImports...) {
			switch {
			case strings.HasPrefix(d, "google.golang.org/grpc"):
				t.Errorf("%s imports %s: the plan imports no gRPC", p.ImportPath, d)
			case ours(d) && !within(d, "sim/plan") && !within(d, "model"):
				t.Errorf("%s imports %s: the plan imports model and nothing else of ours", p.ImportPath, d)
			}
		}
	}
}

// otherMeanings are string literals that spell a registered fault kind's
// name but mean something else, by file: the oracle's own vocabulary
// (the kinds name its constants), action kinds and explore op classes of
// the same word, and flags, knobs and verdicts named alike.
var otherMeanings = map[string][]string{
	"model/faultkind.go":          nil, // the oracle's names of the kinds: every one
	"sim/plan/action.go":          {"vanish", "slow", "steal", "stall"},
	"sim/exploring.go":            {"crash"},
	"scenarios/explore.go":        {"crash"},
	"scenarios/story.go":          {"upgrade"},
	"cmd/relaysim/run.go":         {"upgrade"},
	"cmd/relaysim/guide_genes.go": {"upgrade"}, // the run flag -upgrade
	"cmd/relaysim/junit.go":       {"crash"},
	"mutants/verdict.go":          {"crash"},
}

// A fault kind's name is spelled as a string literal only in its own
// file, sim/plan/fault_<kind>.go (the registry's): everything else names
// the kind through it (or model's constant), so that renaming or adding
// a kind is one file. Tests and testdata are left out.
func TestFaultKindNamesLiveInTheirFiles(t *testing.T) {
	names := map[string]bool{}
	for _, k := range plan.Registry {
		names[string(k.Name())] = true
	}
	fset := token.NewFileSet()
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if name := d.Name(); path != "." && (name == "testdata" || strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_")) {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		path = filepath.ToSlash(path)
		allowed, listed := otherMeanings[path]
		if listed && allowed == nil {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		ast.Inspect(f, func(n ast.Node) bool {
			lit, ok := n.(*ast.BasicLit)
			if !ok || lit.Kind != token.STRING {
				return true
			}
			s, err := strconv.Unquote(lit.Value)
			if err != nil || !names[s] || slices.Contains(allowed, s) {
				return true
			}
			if own := "sim/plan/fault_" + strings.ReplaceAll(s, "-", "") + ".go"; path != own {
				t.Errorf("%s spells fault kind %q: name it through its kind (%s) or model's constant", fset.Position(lit.Pos()), s, own)
			}
			return true
		})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
