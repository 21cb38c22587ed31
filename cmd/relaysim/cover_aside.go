package main

import (
	"bufio"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io"
	"os"
	"path/filepath"
	"strings"
)

// coverAsideFile lists the statements of system/ that the simulation does
// not reach by design, each with its reason (docs/coverage.md, "Set
// aside"). The cover: line gives the share of the others run beside the
// share of all.
const coverAsideFile = "docs/cover-aside.txt"

// coverAside is one entry of coverAsideFile, naming code by its source,
// never by line numbers (which every edit moves):
//
//	system/FILE.go FUNC -- reason            a whole function
//	system/FILE.go FUNC: SNIPPET -- reason   the first statement of FUNC whose
//	                                         source starts with SNIPPET, with
//	                                         everything nested in it
//	system/FILE.go var NAME -- reason        a package-level var's value (the
//	                                         function literals it holds)
type coverAside struct {
	line    int    // in coverAsideFile
	file    string // as in the profile: the package's import path, then the file's name
	fn      string // the function, as uncovered.txt names it; or "var NAME"
	snippet string // the statement's start, for a statement entry
	reason  string
	extents []coverFunc // where it lies in the source (resolveAside)
	stmts   int         // of the blocks it matched
	ran     int         // of those, statements run
}

func (a *coverAside) what() string {
	if a.snippet != "" {
		return a.fn + ": " + a.snippet
	}
	return a.fn
}

// readCoverAside reads coverAsideFile under the module's root and finds
// each entry's code; a missing file sets nothing aside.
func readCoverAside(root string) ([]*coverAside, error) {
	path := filepath.Join(root, filepath.FromSlash(coverAsideFile))
	f, err := os.Open(path)
	if os.IsNotExist(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	aside, err := parseCoverAside(f, coverAsideFile)
	if err != nil {
		return nil, err
	}
	return aside, resolveAside(root, aside)
}

func parseCoverAside(r io.Reader, name string) ([]*coverAside, error) {
	var out []*coverAside
	sc := bufio.NewScanner(r)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		what, reason, ok := strings.Cut(line, " -- ")
		reason = strings.TrimSpace(reason)
		if !ok || reason == "" {
			return nil, fmt.Errorf("%s:%d: want \"system/FILE.go FUNC[: SNIPPET] -- reason\"", name, n)
		}
		file, code, ok := strings.Cut(strings.TrimSpace(what), " ")
		code = strings.TrimSpace(code)
		if !ok || code == "" || !strings.HasSuffix(file, ".go") {
			return nil, fmt.Errorf("%s:%d: %q: want a file of system/ and a function", name, n, what)
		}
		if !strings.HasPrefix(file, "system/") {
			return nil, fmt.Errorf("%s:%d: %q is not a file of system/", name, n, file)
		}
		a := &coverAside{line: n, file: "github.com/relaysim/relaysim/" + file, fn: code, reason: reason}
		if fn, snippet, ok := strings.Cut(code, ": "); ok && !strings.HasPrefix(code, "var ") {
			a.fn, a.snippet = strings.TrimSpace(fn), strings.TrimSpace(snippet)
		}
		out = append(out, a)
	}
	return out, sc.Err()
}

// resolveAside finds each entry's extents in system/'s source. An entry
// that names no code is an error: the file must never claim to set aside
// what is not there.
func resolveAside(root string, aside []*coverAside) error {
	fset := token.NewFileSet()
	files := map[string]*ast.File{}
	for _, a := range aside {
		f := files[a.file]
		if f == nil {
			rel := strings.TrimPrefix(a.file, "github.com/relaysim/relaysim/")
			var err error
			if f, err = parser.ParseFile(fset, filepath.Join(root, filepath.FromSlash(rel)), nil, parser.SkipObjectResolution); err != nil {
				return fmt.Errorf("%s:%d: %v", coverAsideFile, a.line, err)
			}
			files[a.file] = f
		}
		extent := func(n ast.Node) coverFunc {
			s, e := fset.Position(n.Pos()), fset.Position(n.End())
			return coverFunc{file: a.file, name: a.fn, startL: s.Line, startC: s.Column, endL: e.Line, endC: e.Column}
		}
		for _, d := range f.Decls {
			switch d := d.(type) {
			case *ast.GenDecl:
				for _, s := range d.Specs {
					if vs, ok := s.(*ast.ValueSpec); ok {
						for _, id := range vs.Names {
							if "var "+id.Name == a.fn {
								a.extents = append(a.extents, extent(vs))
							}
						}
					}
				}
			case *ast.FuncDecl:
				if d.Body == nil || funcName(d) != a.fn {
					continue
				}
				if a.snippet == "" {
					a.extents = append(a.extents, extent(d))
					continue
				}
				src, err := os.ReadFile(fset.Position(d.Pos()).Filename)
				if err != nil {
					return err
				}
				ast.Inspect(d.Body, func(n ast.Node) bool {
					st, ok := n.(ast.Stmt)
					if !ok || len(a.extents) > 0 {
						return len(a.extents) == 0
					}
					if off := fset.Position(st.Pos()).Offset; strings.HasPrefix(string(src[off:]), a.snippet) {
						a.extents = append(a.extents, extent(st))
						return false
					}
					return true
				})
			}
		}
		if len(a.extents) == 0 {
			return fmt.Errorf("%s:%d: %s %s names no code (renamed or changed?)", coverAsideFile, a.line, strings.TrimPrefix(a.file, "github.com/relaysim/relaysim/"), a.what())
		}
	}
	return nil
}

// matchAside returns the entry that sets b aside, or nil.
func matchAside(aside []*coverAside, b coverBlock) *coverAside {
	for _, a := range aside {
		for _, e := range a.extents {
			// Strictly before the end: the block that follows a
			// statement starts where the statement ends.
			after := b.startL > e.startL || b.startL == e.startL && b.startC >= e.startC
			before := b.startL < e.endL || b.startL == e.endL && b.startC < e.endC
			if e.file == b.file && after && before {
				return a
			}
		}
	}
	return nil
}

// unmatchedAside names the entries that matched no block of a profile.
func unmatchedAside(aside []*coverAside) []string {
	var out []string
	for _, a := range aside {
		if a.stmts == 0 {
			out = append(out, fmt.Sprintf("%s:%d (%s %s)", coverAsideFile, a.line, strings.TrimPrefix(a.file, "github.com/relaysim/relaysim/"), a.what()))
		}
	}
	return out
}
