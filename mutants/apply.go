package mutants

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
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
	js, err := json.Marshal(map[string]map[string]string{"Replace": {orig: copyPath}})
	if err != nil {
		return "", fmt.Errorf("overlay of %s: %w", m.Name, err)
	}
	overlay := filepath.Join(dir, "overlay.json")
	return overlay, os.WriteFile(overlay, js, 0o644)
}
