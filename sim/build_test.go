package sim

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
)

// In a source tree the build is a hash of the sources; a schedule found
// on other sources is not judged on these, whatever the VCS stamp.
func TestSourceBuild(t *testing.T) {
	b := SourceBuild()
	assert.True(t, strings.HasPrefix(b, "src:"), b)
	assert.Equal(t, b, SourceBuild())
	assert.True(t, SameBuild(b, b))
	assert.True(t, SameBuild("", b), "an older file names no build")
	assert.True(t, SameBuild("unknown", b))
	assert.True(t, SameBuild(strings.Fields(b)[0]+" vcs:other", b), "the sources decide, not the stamp")
	assert.False(t, SameBuild("src:000000000000", b))
}
