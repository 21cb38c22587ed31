package sim

import (
	"bufio"
	"crypto/sha256"
	"encoding/hex"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
)

// SourceBuild names the build a run belongs to, for a schedule file: a
// hash of the module's Go sources that decide what a schedule does (the
// non-test .go files under system/, sim/ and model/), read from the module
// root found from the working directory at run time. `go tool relaysim`
// and `go run` builds usually carry no VCS stamp, and a stamp says nothing
// of uncommitted edits, so the sources themselves are hashed:
// "src:<12 hex>", with the VCS revision when there is one
// ("src:<hash> vcs:<rev>[+dirty]"), or "unknown" away from a source tree.
func SourceBuild() string {
	buildOnce.Do(func() { buildID = sourceBuild() })
	return buildID
}

var (
	buildOnce sync.Once
	buildID   string
)

// modulePath is this module's path, as go.mod names it.
const modulePath = "github.com/relaysim/relaysim"

func sourceBuild() string {
	root := moduleRoot()
	if root == "" {
		return "unknown"
	}
	var files []string
	for _, dir := range []string{"system", "sim", "model"} {
		_ = filepath.WalkDir(filepath.Join(root, dir), func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				return nil
			}
			if d.IsDir() && d.Name() == "testdata" {
				return filepath.SkipDir
			}
			if !d.IsDir() && strings.HasSuffix(path, ".go") && !strings.HasSuffix(path, "_test.go") {
				files = append(files, path)
			}
			return nil
		})
	}
	if len(files) == 0 {
		return "unknown"
	}
	sort.Strings(files)
	h := sha256.New()
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			return "unknown"
		}
		rel, _ := filepath.Rel(root, f)
		h.Write([]byte(filepath.ToSlash(rel) + "\x00"))
		h.Write(b)
		h.Write([]byte{0})
	}
	id := "src:" + hex.EncodeToString(h.Sum(nil))[:12]
	if c := BuildCommit(); c != "unknown" {
		id += " vcs:" + c
	}
	return id
}

// moduleRoot is the directory of this module's go.mod, searched from the
// working directory up ("" when there is none).
func moduleRoot() string {
	dir, err := os.Getwd()
	if err != nil {
		return ""
	}
	for {
		if f, err := os.Open(filepath.Join(dir, "go.mod")); err == nil {
			sc := bufio.NewScanner(f)
			ok := sc.Scan() && strings.TrimSpace(sc.Text()) == "module "+modulePath
			f.Close()
			if ok {
				return dir
			}
		}
		up := filepath.Dir(dir)
		if up == dir {
			return ""
		}
		dir = up
	}
}

// SameBuild reports whether a schedule found on build found may be judged
// on this one: the same sources, or either unknown (nothing to tell).
func SameBuild(found, this string) bool {
	if found == "" || found == "unknown" || this == "unknown" {
		return true
	}
	return sourcePart(found) == sourcePart(this)
}

func sourcePart(id string) string {
	if i := strings.IndexByte(id, ' '); i >= 0 {
		return id[:i]
	}
	return id
}
