package mutants

import (
	"encoding/json"
	"fmt"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strings"
)

// Dir is where a mutant's overlay, mutated file and binary live. The path
// is stable (not a fresh temporary directory) so that the replay command a
// report prints stays pasteable for as long as the machine keeps it.
func Dir(name string) string {
	return filepath.Join(os.TempDir(), "relaysim-mutants", name)
}

// Apply writes the mutated copy of m.File and the overlay file that makes
// `go build -overlay` use it in place of the clean one, and returns the
// overlay's path. The source tree is never touched.
//
// The overlay also adds a file to the mutated package (OverlayEnv): every
// binary built with the mutant knows the overlay it was built with, so the
// replay commands its banners print build the mutant again, whoever runs
// them and with whatever environment.
func Apply(root string, m *Mutant) (string, error) {
	orig := filepath.Join(root, filepath.FromSlash(m.File))
	src, err := os.ReadFile(orig)
	if err != nil {
		return "", err
	}
	mutated, err := m.Mutate(src)
	if err != nil {
		return "", err
	}
	dir := Dir(m.Name)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	copyPath := filepath.Join(dir, filepath.Base(m.File))
	if err := os.WriteFile(copyPath, mutated, 0o644); err != nil {
		return "", err
	}
	overlay := filepath.Join(dir, "overlay.json")
	added, addedSrc, err := overlayNote(orig, src, overlay)
	if err != nil {
		return "", fmt.Errorf("%s: %w", m.Name, err)
	}
	addedCopy := filepath.Join(dir, filepath.Base(added))
	if err := os.WriteFile(addedCopy, addedSrc, 0o644); err != nil {
		return "", err
	}
	js, err := json.Marshal(map[string]map[string]string{"Replace": {orig: copyPath, added: addedCopy}})
	if err != nil {
		return "", fmt.Errorf("overlay of %s: %w", m.Name, err)
	}
	return overlay, os.WriteFile(overlay, js, 0o644)
}

// OverlayEnv is the variable through which a mutant build names its
// overlay. The mutants harness sets it for the suites it runs; the file
// overlayNote adds sets it in every binary built with the mutant.
const OverlayEnv = "RELAYSIM_OVERLAY"

// overlayNote is the file the overlay adds beside the mutated file orig
// (whose source is src): in the same package, it sets OverlayEnv to the
// overlay when the program starts. It returns the added file's path (one
// that does not exist in the tree) and its source.
func overlayNote(orig string, src []byte, overlay string) (string, []byte, error) {
	f, err := parser.ParseFile(token.NewFileSet(), orig, src, parser.PackageClauseOnly)
	if err != nil {
		return "", nil, err
	}
	name := "zz_mutant_overlay.go"
	if strings.HasSuffix(orig, "_test.go") {
		name = "zz_mutant_overlay_test.go"
	}
	code := fmt.Sprintf(`// Added by the mutants harness (mutants.Apply): not in the source tree.

package %s

import "os"

func init() { os.Setenv(%q, %q) }
`, f.Name.Name, OverlayEnv, overlay)
	return filepath.Join(filepath.Dir(orig), name), []byte(code), nil
}
