package mutants

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
)

// FuzzParse: the catalog's txtar parser never panics; a mutant it accepts
// is named after its file and applies to a source without panicking.
func FuzzParse(f *testing.F) {
	files, _ := filepath.Glob(filepath.Join("catalog", "*.txtar"))
	for _, p := range files[:min(len(files), 6)] {
		b, err := os.ReadFile(p)
		if err == nil {
			f.Add(filepath.Base(p), b)
		}
	}
	f.Add("x.txtar", []byte("name: x\n-- find --\n-- replace --\n"))
	f.Fuzz(func(t *testing.T, name string, data []byte) {
		m, err := Parse(name, data)
		if err != nil {
			return
		}
		assert.Equal(t, m.Name+".txtar", filepath.Base(name))
		_, _ = m.Mutate(data) // the mutant's find text may or may not be there
	})
}
