package realcluster

import (
	"github.com/relaysim/relaysim/model"

	"bytes"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// FuzzReadHistory: the history reader never panics, and neither do the
// checks on any history it accepts (a saved file is input like any other).
func FuzzReadHistory(f *testing.F) {
	f.Add(story(f, false))
	f.Add(story(f, true))
	f.Add([]byte(`{"type":"final","final":{"Logs":{"r":[{"Seq":1,"MsgID":"m"}]}}}` + "\n"))
	f.Add([]byte(`{"type":"event","event":{"Kind":"deliver","User":"u","Room":"r","Seq":3,"Time":-5}}` + "\n" + `{"type":"final","final":{}}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		h, _, err := ReadHistory(bytes.NewReader(b))
		if err != nil {
			return
		}
		_ = CheckHistory(h)
		_ = measureLatency(h)
	})
}

// FuzzParseNemesis: an accepted spec names known kinds, each once.
func FuzzParseNemesis(f *testing.F) {
	for _, s := range []string{"all", "none", "", "kill,pause", "kill,kill", "kill,,pause", " term "} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		ks, err := ParseNemesis(s)
		if err != nil {
			return
		}
		seen := map[model.FaultKind]bool{}
		for _, k := range ks {
			require.True(t, slices.Contains(Kinds, k), k)
			assert.False(t, seen[k], "%s twice", k)
			seen[k] = true
		}
	})
}
