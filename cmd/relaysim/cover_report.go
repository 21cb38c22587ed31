package main

import (
	"bufio"
	"cmp"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// The report of -cover and `relaysim cover` (cover.go), in its DIR.
const (
	coverOut     = "cover.out"     // the textfmt profile of system/, generated code left out
	uncoveredTxt = "uncovered.txt" // the blocks never run, by function
	coverHTML    = "cover.html"    // go tool cover -html of cover.out
)

// coverBlock is one block of a profile: file:startLine.startCol,endLine.endCol.
type coverBlock struct {
	file                       string // import path of the package, then the file's name
	startL, startC, endL, endC int
	stmts, count               int
}

// coverStats counts system/'s statements and those run; aside and
// asideRan count those of them set aside (coverAsideFile).
type coverStats struct{ stmts, covered, aside, asideRan int }

func (s coverStats) percent() float64 {
	if s.stmts == 0 {
		return 0
	}
	return 100 * float64(s.covered) / float64(s.stmts)
}

// rest is the share of the statements not set aside that ran.
func (s coverStats) rest() float64 {
	if s.stmts-s.aside == 0 {
		return 0
	}
	return 100 * float64(s.covered-s.asideRan) / float64(s.stmts-s.aside)
}

// line is the cover: line of these statements, more (probes) after.
func (s coverStats) line(more string) string {
	switch {
	case s.aside > 0 && more != "":
		more = s.restPart() + ", " + more
	case s.aside > 0:
		more = s.restPart()
	}
	return coverLine(s.percent(), more)
}

func (s coverStats) restPart() string {
	return fmt.Sprintf("%.1f%% of the %d not set aside", s.rest(), s.stmts-s.aside)
}

// writeCoverReport merges the counters in the data directories (go tool
// covdata textfmt), keeps system/ less its generated code, and writes
// cover.out, uncovered.txt and cover.html into dir.
func writeCoverReport(dir string, data []string) (coverStats, error) {
	root, err := moduleRoot()
	if err != nil {
		return coverStats{}, fmt.Errorf("the report reads system/'s source: %v", err)
	}
	if dir, err = filepath.Abs(dir); err != nil {
		return coverStats{}, err
	}
	abs := make([]string, len(data))
	for i, d := range data {
		if abs[i], err = filepath.Abs(d); err != nil {
			return coverStats{}, err
		}
	}
	all := filepath.Join(dir, ".cover-all.out")
	defer os.Remove(all)
	c := exec.Command("go", "tool", "covdata", "textfmt", "-i="+strings.Join(abs, ","), "-o="+all)
	c.Dir = root
	if out, err := c.CombinedOutput(); err != nil {
		return coverStats{}, fmt.Errorf("go tool covdata textfmt: %v\n%s", err, out)
	}
	text, err := os.ReadFile(all)
	if err != nil {
		return coverStats{}, err
	}
	mode, blocks, err := parseProfile(string(text))
	if err != nil {
		return coverStats{}, err
	}
	blocks = systemBlocks(blocks)
	if len(blocks) == 0 {
		return coverStats{}, fmt.Errorf("the counters hold no block of %s: the runner was built without coverage of it (%s)", systemPkg, coverBuildCommand("relaysim"))
	}
	funcs, err := systemFuncs(root, blocks)
	if err != nil {
		return coverStats{}, err
	}
	aside, err := readCoverAside(root)
	if err != nil {
		return coverStats{}, err
	}
	st := countCover(blocks, aside)
	if err := os.WriteFile(filepath.Join(dir, coverOut), []byte(formatProfile(mode, blocks)), 0o644); err != nil {
		return st, err
	}
	if err := os.WriteFile(filepath.Join(dir, uncoveredTxt), []byte(formatUncovered(st, blocks, funcs, aside)), 0o644); err != nil {
		return st, err
	}
	h := exec.Command("go", "tool", "cover", "-html="+filepath.Join(dir, coverOut), "-o="+filepath.Join(dir, coverHTML))
	h.Dir = root
	if out, err := h.CombinedOutput(); err != nil {
		return st, fmt.Errorf("go tool cover -html: %v\n%s", err, out)
	}
	return st, nil
}

// countCover counts the blocks' statements, those run, and those of them
// set aside (each entry of aside counting its own).
func countCover(blocks []coverBlock, aside []*coverAside) coverStats {
	var st coverStats
	for _, b := range blocks {
		st.stmts += b.stmts
		ran := 0
		if b.count > 0 {
			ran = b.stmts
		}
		st.covered += ran
		if a := matchAside(aside, b); a != nil {
			a.stmts += b.stmts
			a.ran += ran
			st.aside += b.stmts
			st.asideRan += ran
		}
	}
	return st
}

// parseProfile reads a textfmt profile; a block listed more than once
// (by several counter files) is one block, its counts added.
func parseProfile(text string) (string, []coverBlock, error) {
	sc := bufio.NewScanner(strings.NewReader(text))
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	mode := ""
	idx := map[string]int{}
	var out []coverBlock
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		if m, ok := strings.CutPrefix(line, "mode: "); ok && n == 1 {
			mode = m
			continue
		}
		if line == "" {
			continue
		}
		b, err := parseBlock(line)
		if err != nil {
			return "", nil, fmt.Errorf("profile line %d: %v", n, err)
		}
		key, _, _ := strings.Cut(line, " ")
		if i, ok := idx[key]; ok {
			out[i].count += b.count
			continue
		}
		idx[key] = len(out)
		out = append(out, b)
	}
	if mode == "" {
		return "", nil, fmt.Errorf("profile: no mode line")
	}
	return mode, out, sc.Err()
}

// parseBlock reads "file:sl.sc,el.ec stmts count".
func parseBlock(line string) (coverBlock, error) {
	colon := strings.LastIndexByte(line, ':')
	f := strings.Fields(line[colon+1:])
	if colon < 0 || len(f) != 3 {
		return coverBlock{}, fmt.Errorf("%q: want file:sl.sc,el.ec stmts count", line)
	}
	b := coverBlock{file: line[:colon]}
	start, end, _ := strings.Cut(f[0], ",")
	var err error
	num := func(s string) int {
		v, e := strconv.Atoi(s)
		if e != nil && err == nil {
			err = fmt.Errorf("%q: %v", line, e)
		}
		return v
	}
	sl, sc, _ := strings.Cut(start, ".")
	el, ec, _ := strings.Cut(end, ".")
	b.startL, b.startC, b.endL, b.endC = num(sl), num(sc), num(el), num(ec)
	b.stmts, b.count = num(f[1]), num(f[2])
	return b, err
}

// systemBlocks keeps the blocks of system/ but not its generated code, in
// file and position order.
func systemBlocks(all []coverBlock) []coverBlock {
	var out []coverBlock
	for _, b := range all {
		if strings.HasPrefix(b.file, systemPkg+"/") && !strings.HasPrefix(b.file, generatedPkg+"/") {
			out = append(out, b)
		}
	}
	slices.SortFunc(out, func(a, b coverBlock) int {
		return cmp.Or(cmp.Compare(a.file, b.file), cmp.Compare(a.startL, b.startL), cmp.Compare(a.startC, b.startC))
	})
	return out
}

func (b coverBlock) pos() string {
	return fmt.Sprintf("%d.%d,%d.%d", b.startL, b.startC, b.endL, b.endC)
}

func formatProfile(mode string, blocks []coverBlock) string {
	var sb strings.Builder
	fmt.Fprintf(&sb, "mode: %s\n", mode)
	for _, b := range blocks {
		fmt.Fprintf(&sb, "%s:%s %d %d\n", b.file, b.pos(), b.stmts, b.count)
	}
	return sb.String()
}

// coverFunc is a function of system/'s source: its name as go tool cover
// -func would show it, with its receiver, and its extent.
type coverFunc struct {
	file           string // as in the profile
	name           string
	startL, startC int
	endL, endC     int
}

func (f coverFunc) holds(b coverBlock) bool {
	after := b.startL > f.startL || b.startL == f.startL && b.startC >= f.startC
	before := b.startL < f.endL || b.startL == f.endL && b.startC <= f.endC
	return f.file == b.file && after && before
}

// systemFuncs reads the functions of the files the blocks are in.
func systemFuncs(root string, blocks []coverBlock) ([]coverFunc, error) {
	var out []coverFunc
	fset := token.NewFileSet()
	var files []string
	for _, b := range blocks {
		if !slices.Contains(files, b.file) {
			files = append(files, b.file)
		}
	}
	for _, file := range files {
		rel, ok := strings.CutPrefix(file, "github.com/relaysim/relaysim/")
		if !ok {
			continue
		}
		f, err := parser.ParseFile(fset, filepath.Join(root, filepath.FromSlash(rel)), nil, parser.SkipObjectResolution)
		if err != nil {
			return nil, fmt.Errorf("read the source of %s: %v", file, err)
		}
		for _, d := range f.Decls {
			fd, ok := d.(*ast.FuncDecl)
			if !ok || fd.Body == nil {
				continue
			}
			s, e := fset.Position(fd.Pos()), fset.Position(fd.End())
			out = append(out, coverFunc{file: file, name: funcName(fd), startL: s.Line, startC: s.Column, endL: e.Line, endC: e.Column})
		}
	}
	return out, nil
}

// funcName is "name", "T.name" or "(*T).name".
func funcName(fd *ast.FuncDecl) string {
	if fd.Recv == nil || len(fd.Recv.List) == 0 {
		return fd.Name.Name
	}
	t := fd.Recv.List[0].Type
	star := false
	if s, ok := t.(*ast.StarExpr); ok {
		t, star = s.X, true
	}
	switch x := t.(type) {
	case *ast.IndexExpr:
		t = x.X
	case *ast.IndexListExpr:
		t = x.X
	}
	name := "?"
	if id, ok := t.(*ast.Ident); ok {
		name = id.Name
	}
	if star {
		return "(*" + name + ")." + fd.Name.Name
	}
	return name + "." + fd.Name.Name
}

// formatUncovered lists, function by function in file order, the blocks
// never run, each function with the share of its statements run.
func formatUncovered(st coverStats, blocks []coverBlock, funcs []coverFunc, aside []*coverAside) string {
	var sb strings.Builder
	fmt.Fprintf(&sb, "# system/ (generated system/relaypb left out): %.1f%% of statements run, %d of %d\n", st.percent(), st.covered, st.stmts)
	if len(aside) > 0 {
		fmt.Fprintf(&sb, "# not set aside (%s, listed at the end): %s, %d of them run\n", coverAsideFile, st.restPart(), st.covered-st.asideRan)
	}
	fmt.Fprintf(&sb, "# the blocks never run (file:line.col,line.col and their statements), by function in file order\n")
	type group struct {
		fn         coverFunc
		stmts, ran int
		never      []coverBlock
	}
	var groups []*group
	byFunc := map[int]*group{}
	outside := &group{fn: coverFunc{name: "(outside any function)"}}
	for _, b := range blocks {
		if matchAside(aside, b) != nil {
			continue
		}
		g := outside
		if i := slices.IndexFunc(funcs, func(f coverFunc) bool { return f.holds(b) }); i >= 0 {
			if g = byFunc[i]; g == nil {
				g = &group{fn: funcs[i]}
				byFunc[i] = g
				groups = append(groups, g)
			}
		}
		g.stmts += b.stmts
		if b.count > 0 {
			g.ran += b.stmts
		} else {
			g.never = append(g.never, b)
		}
	}
	if len(outside.never) > 0 {
		groups = append(groups, outside)
	}
	for _, g := range groups {
		if len(g.never) == 0 {
			continue
		}
		short := func(file string) string { return strings.TrimPrefix(file, "github.com/relaysim/relaysim/") }
		fmt.Fprintf(&sb, "\n%s:%d %s: %.1f%% of %d statements\n", short(g.fn.file), g.fn.startL, g.fn.name, 100*float64(g.ran)/float64(max(g.stmts, 1)), g.stmts)
		for _, b := range g.never {
			fmt.Fprintf(&sb, "  %s:%s (%d)\n", short(b.file), b.pos(), b.stmts)
		}
	}
	if len(aside) > 0 {
		fmt.Fprintf(&sb, "\n# set aside (%s): %d statements, %d of them run\n", coverAsideFile, st.aside, st.asideRan)
		for _, a := range aside {
			fmt.Fprintf(&sb, "%s %s: %d of %d statements run -- %s\n", strings.TrimPrefix(a.file, "github.com/relaysim/relaysim/"), a.what(), a.ran, a.stmts, a.reason)
		}
		if u := unmatchedAside(aside); len(u) > 0 {
			fmt.Fprintf(&sb, "# entries that match no statement (renamed or moved?): %s\n", strings.Join(u, ", "))
		}
	}
	return sb.String()
}
