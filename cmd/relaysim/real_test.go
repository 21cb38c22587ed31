package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Bad input to real and check is one clear line and exit 2; nothing is
// built, started or left running.
func TestRealAndCheckUsageErrors(t *testing.T) {
	bad := filepath.Join(t.TempDir(), "bad.jsonl")
	require.NoError(t, os.WriteFile(bad, []byte(`{"type":"bogus"}`+"\n"), 0o644))
	fake := filepath.Join(t.TempDir(), "relayd") // never run: input is refused first
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"bad nemesis", []string{"real", "-nemesis", "kill,meteor"}, `-nemesis: unknown nemesis kind "meteor"`},
		{"bad seed", []string{"real", "-seed", "x"}, `malformed seed "x"`},
		{"bad mode", []string{"real", "-mode", "fast"}, `unknown relay mode "fast"`},
		{"relayd and mutant", []string{"real", "-relayd", fake, "-mutant", "no-dedup"}, "exclude each other"},
		{"unknown mutant", []string{"real", "-mutant", "no-such-bug", "-redis", "127.0.0.1:1"}, `-mutant "no-such-bug": no such mutant`},
		{"no nodes", []string{"real", "-relayd", fake, "-nodes", "0", "-out", t.TempDir()}, "-nodes 0: want 1 to 9"},
		{"remote redis", []string{"real", "-relayd", fake, "-redis", "10.0.0.1:6379", "-nemesis", "kill", "-out", t.TempDir()}, "not a loopback address"},
		{"redis not answering", []string{"real", "-relayd", fake, "-redis", "127.0.0.1:1", "-nemesis", "kill", "-out", t.TempDir()}, "does not answer"},
		{"stray argument", []string{"real", "extra"}, `unexpected argument "extra"`},
		{"check without a file", []string{"check"}, "-history FILE is required"},
		{"check of a missing file", []string{"check", "-history", filepath.Join(t.TempDir(), "none")}, "no such file"},
		{"check of a bad file", []string{"check", "-history", bad}, `line 1: unknown record type "bogus"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := run(tc.args, &stdout, &stderr)
			assert.Equal(t, exitUsage, code, "stderr: %s", stderr.String())
			assert.Contains(t, stderr.String(), tc.want)
			assert.Empty(t, stdout.String())
		})
	}
}

// Without redis-server on PATH (and no -redis), real says what to install.
func TestRealWithoutRedisServer(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	var stdout, stderr bytes.Buffer
	assert.Equal(t, exitUsage, run([]string{"real"}, &stdout, &stderr))
	assert.Contains(t, stderr.String(), "apt-get install redis-server")
	assert.Equal(t, 2, strings.Count(stderr.String(), "\n"), "one line and the usage line: %s", stderr.String())
}
