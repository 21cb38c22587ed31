package relaysim_test

import (
	"bufio"
	"crypto/sha256"
	"encoding/hex"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// The pictures in docs/ are generated, never drawn by hand: each comes from
// a command, and docs/pictures.txt records, per picture, a hash of the code
// that draws it. Changing that code without regenerating the picture fails
// TestDocPicturesAreFresh; make docs-pictures regenerates them all and
// rewrites the record.

var updatePictures = flag.Bool("docs.pictures", false, "regenerate the pictures in docs/ and docs/pictures.txt (make docs-pictures; minutes)")

// docPicture is one generated picture of docs/.
type docPicture struct {
	file    string   // under docs/
	sources []string // globs of the code that draws it (tests excluded)
	// make writes the picture into dir (a temporary directory) and
	// returns the file it wrote.
	make func(t *testing.T, dir string) string
	how  string // the command, for a reader of pictures.txt
}

var docPictures = []docPicture{
	{
		file:    "timeline.png",
		sources: []string{"timeline/*.go"},
		how:     "go test ./timeline -run 'TestTimelineInBrowser$' -timeline.screenshot=FILE (make timeline-picture; needs chromium)",
		make: func(t *testing.T, dir string) string {
			shot := filepath.Join(dir, "timeline.png")
			abs, err := filepath.Abs(shot)
			if err != nil {
				t.Fatal(err)
			}
			cmd := exec.Command("go", "test", "./timeline", "-count=1", "-run", "TestTimelineInBrowser$", "-timeline.screenshot="+abs)
			if out, err := cmd.CombinedOutput(); err != nil || !strings.Contains(string(out), "ok") {
				t.Fatalf("%v: %v\n%s", cmd.Args, err, out)
			}
			if _, err := os.Stat(shot); err != nil {
				t.Fatalf("no screenshot (is chromium installed?): %v", err)
			}
			return shot
		},
	},
	{
		file:    "pool-axis-b.png",
		sources: []string{"experiments/plot.go"},
		how:     "go tool relaysim report axis-b -plot DIR (full length), DIR/pool-axis-b.png",
		make: func(t *testing.T, dir string) string {
			cmd := exec.Command("go", "tool", "relaysim", "report", "axis-b", "-plot", dir)
			cmd.Stderr = os.Stderr
			if out, err := cmd.Output(); err != nil {
				t.Fatalf("%v: %v\n%s", cmd.Args, err, out)
			}
			return filepath.Join(dir, "pool-axis-b.png")
		},
	},
}

// sourceHash is the sha256 of a picture's sources, in sorted order, each
// file's name and bytes.
func sourceHash(t *testing.T, p docPicture) string {
	t.Helper()
	var files []string
	for _, g := range p.sources {
		m, err := filepath.Glob(g)
		if err != nil || len(m) == 0 {
			t.Fatalf("%s: source %q matches nothing", p.file, g)
		}
		for _, f := range m {
			if !strings.HasSuffix(f, "_test.go") {
				files = append(files, f)
			}
		}
	}
	slices.Sort(files)
	h := sha256.New()
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(h, "%s %d\n", filepath.ToSlash(f), len(b))
		h.Write(b)
	}
	return hex.EncodeToString(h.Sum(nil))[:16]
}

// recorded reads docs/pictures.txt: picture -> source hash.
func recorded(t *testing.T) map[string]string {
	t.Helper()
	f, err := os.Open("docs/pictures.txt")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	out := map[string]string{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		fields := strings.Fields(line)
		if len(fields) < 2 {
			t.Fatalf("docs/pictures.txt: bad line %q", line)
		}
		out[fields[0]] = fields[1]
	}
	return out
}

func TestDocPicturesAreFresh(t *testing.T) {
	if *updatePictures {
		var b strings.Builder
		b.WriteString("# Generated pictures of docs/ and a hash of the code that draws each\n")
		b.WriteString("# (pictures_test.go). Regenerate with make docs-pictures.\n")
		for _, p := range docPictures {
			made := p.make(t, t.TempDir())
			data, err := os.ReadFile(made)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join("docs", p.file), data, 0o644); err != nil {
				t.Fatal(err)
			}
			fmt.Fprintf(&b, "%s %s %s\n", p.file, sourceHash(t, p), p.how)
		}
		if err := os.WriteFile("docs/pictures.txt", []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	rec := recorded(t)
	for _, p := range docPictures {
		if _, err := os.Stat(filepath.Join("docs", p.file)); err != nil {
			t.Errorf("docs/%s: %v", p.file, err)
		}
		if got := sourceHash(t, p); rec[p.file] != got {
			t.Errorf("docs/%s was drawn by other code (recorded %q, now %s): make docs-pictures", p.file, rec[p.file], got)
		}
	}
	// Every picture the docs show is one of them.
	pngs, _ := filepath.Glob("docs/*.png")
	for _, f := range pngs {
		if !slices.ContainsFunc(docPictures, func(p docPicture) bool { return p.file == filepath.Base(f) }) {
			t.Errorf("%s is not a generated picture (pictures_test.go docPictures)", f)
		}
	}
}
