package main

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// coverAsideFile lists the statements of system/ that the simulation does
// not reach by design, each with its reason (docs/coverage.md, "Set
// aside"). The cover: line gives the share of the others run beside the
// share of all.
const coverAsideFile = "docs/cover-aside.txt"

// coverAside is one entry of coverAsideFile: a whole function of a file
// ("system/config.go ParseLegacy") or one block of it
// ("system/node.go:110.49,114.3"), and why it is set aside.
type coverAside struct {
	line   int    // in coverAsideFile
	file   string // as in the profile: the package's import path, then the file's name
	fn     string // the function, as uncovered.txt names it; "" for a block
	pos    string // the block's position, for a block entry
	reason string
	stmts  int // of the blocks it matched
	ran    int // of those, statements run
}

// readCoverAside reads coverAsideFile under the module's root; a missing
// file sets nothing aside.
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
	return parseCoverAside(f, coverAsideFile)
}

func parseCoverAside(r interface{ Read([]byte) (int, error) }, name string) ([]*coverAside, error) {
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
			return nil, fmt.Errorf("%s:%d: want \"system/FILE.go FUNC -- reason\" or \"system/FILE.go:L.C,L.C -- reason\"", name, n)
		}
		a := &coverAside{line: n, reason: reason}
		f := strings.Fields(what)
		switch {
		case len(f) == 2 && strings.HasSuffix(f[0], ".go"):
			a.file, a.fn = f[0], f[1]
		case len(f) == 1 && strings.Contains(f[0], ".go:"):
			a.file, a.pos, _ = strings.Cut(f[0], ":")
		default:
			return nil, fmt.Errorf("%s:%d: %q: want a file and a function, or file:block", name, n, what)
		}
		if !strings.HasPrefix(a.file, "system/") {
			return nil, fmt.Errorf("%s:%d: %q is not a file of system/", name, n, a.file)
		}
		a.file = "github.com/relaysim/relaysim/" + a.file
		out = append(out, a)
	}
	return out, sc.Err()
}

// match returns the entry that sets b aside (fn: b's function, or nil),
// or nil.
func matchAside(aside []*coverAside, b coverBlock, fn *coverFunc) *coverAside {
	for _, a := range aside {
		if a.file != b.file {
			continue
		}
		if a.pos != "" && a.pos == b.pos() || a.fn != "" && fn != nil && a.fn == fn.name {
			return a
		}
	}
	return nil
}

// unmatched names the entries that matched no block: a function renamed
// or a block moved, so the file no longer says what it sets aside.
func unmatchedAside(aside []*coverAside) []string {
	var out []string
	for _, a := range aside {
		if a.stmts == 0 {
			what := a.fn
			if a.pos != "" {
				what = a.pos
			}
			out = append(out, fmt.Sprintf("%s:%d (%s %s)", coverAsideFile, a.line, strings.TrimPrefix(a.file, "github.com/relaysim/relaysim/"), what))
		}
	}
	return out
}
