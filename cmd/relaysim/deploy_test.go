package main

import (
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.yaml.in/yaml/v3"
)

// The deploy files cannot run here (no cluster, no CI runner): they are
// parsed, and what relaysim reads from them goes through relaysim's own
// parser, so a renamed flag or a count that disagrees fails here.

func readYAML(t *testing.T, path string) []map[string]any {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("..", "..", path))
	require.NoError(t, err)
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var docs []map[string]any
	for {
		var d map[string]any
		if err := dec.Decode(&d); err != nil {
			break
		}
		docs = append(docs, d)
	}
	require.NotEmpty(t, docs, "%s: no YAML document", path)
	return docs
}

// dig walks a YAML tree by keys (maps) and indexes (lists).
func dig(t *testing.T, v any, path ...any) any {
	t.Helper()
	for _, p := range path {
		switch k := p.(type) {
		case string:
			m, ok := v.(map[string]any)
			require.True(t, ok, "want a map at %v", p)
			v = m[k]
		case int:
			l, ok := v.([]any)
			require.True(t, ok && k < len(l), "want a list of more than %d at %v", k, p)
			v = l[k]
		}
	}
	return v
}

func strs(v any) []string {
	var out []string
	for _, x := range v.([]any) {
		out = append(out, toString(x))
	}
	return out
}

func toString(x any) string {
	switch x := x.(type) {
	case string:
		return x
	case int:
		return strconv.Itoa(x)
	}
	return ""
}

// The Indexed Job: every index maps to its own shard of RELAYSIM_SHARDS =
// completions, and the sweep's arguments parse.
func TestKubernetesIndexedJob(t *testing.T) {
	docs := readYAML(t, "deploy/k8s/sweep-job.yaml")
	var job map[string]any
	for _, d := range docs {
		if d["kind"] == "Job" {
			job = d
		}
	}
	require.NotNil(t, job, "no Job in the manifest")
	spec := dig(t, job, "spec").(map[string]any)
	assert.Equal(t, "Indexed", spec["completionMode"])
	completions := spec["completions"].(int)
	ctr := dig(t, spec, "template", "spec", "containers", 0)
	env := map[string]string{}
	for _, e := range dig(t, ctr, "env").([]any) {
		env[toString(dig(t, e, "name"))] = toString(dig(t, e, "value"))
	}
	assert.Equal(t, strconv.Itoa(completions), env[envShards], "RELAYSIM_SHARDS must equal completions")
	args := strs(dig(t, ctr, "args"))
	require.Equal(t, "sweep", args[0])
	mount := toString(dig(t, ctr, "volumeMounts", 0, "mountPath"))

	seen := map[string]bool{}
	for idx := range completions {
		get := func(k string) string {
			if k == envJobIndex {
				return strconv.Itoa(idx)
			}
			return env[k]
		}
		// Kubernetes expands $(VAR) in args from the container's env.
		expanded := make([]string, len(args)-1)
		for i, a := range args[1:] {
			expanded[i] = strings.ReplaceAll(a, "$(JOB_COMPLETION_INDEX)", strconv.Itoa(idx))
		}
		sp, err := parseSweep(expanded, get, &bytes.Buffer{})
		require.NoError(t, err, "index %d", idx)
		assert.Equal(t, shard{idx + 1, completions}, sp.o.shard)
		assert.True(t, strings.HasPrefix(sp.o.junit, mount+"/"), "the JUnit file %s is on the shared volume %s", sp.o.junit, mount)
		assert.False(t, seen[sp.o.junit], "index %d writes %s, as another index does", idx, sp.o.junit)
		seen[sp.o.junit] = true
	}

	gather := readYAML(t, "deploy/k8s/gather-pod.yaml")[0]
	gargs := strs(dig(t, gather, "spec", "containers", 0, "args"))
	require.Equal(t, "junit-merge", gargs[0])
	for f := range seen {
		ok, err := filepath.Match(gargs[len(gargs)-1], f)
		require.NoError(t, err)
		assert.True(t, ok, "the gather pod's %s does not match %s", gargs[len(gargs)-1], f)
	}
	assert.Equal(t, dig(t, job, "spec", "template", "spec", "volumes", 0, "persistentVolumeClaim", "claimName"),
		dig(t, gather, "spec", "volumes", 0, "persistentVolumeClaim", "claimName"))
}

// The CI matrix: the shard list is 1..n for the n in the command, every
// shard's arguments parse, and the gather job merges what they upload.
func TestCIMatrixWorkflow(t *testing.T) {
	wf := readYAML(t, ".github/workflows/sweep.yml")[0]
	job := dig(t, wf, "jobs", "shard")
	shards := strs(dig(t, job, "strategy", "matrix", "shard"))
	var cmd string
	for _, s := range dig(t, job, "steps").([]any) {
		if r, ok := s.(map[string]any)["run"].(string); ok && strings.Contains(r, " sweep ") {
			cmd = r
		}
	}
	require.NotEmpty(t, cmd, "no sweep step")
	m := regexp.MustCompile(`-shard \$\{\{ matrix.shard \}\}/(\d+)`).FindStringSubmatch(cmd)
	require.NotNil(t, m, "the sweep step does not shard by the matrix: %s", cmd)
	n, _ := strconv.Atoi(m[1])
	require.Len(t, shards, n)
	for i, s := range shards {
		assert.Equal(t, strconv.Itoa(i+1), s, "shards count from 1")
		line := strings.ReplaceAll(cmd, "${{ matrix.shard }}", s)
		fields := strings.Fields(line)
		require.Equal(t, "sweep", fields[1], line)
		sp, err := parseSweep(fields[2:], func(string) string { return "" }, &bytes.Buffer{})
		require.NoError(t, err, line)
		assert.Equal(t, shard{i + 1, n}, sp.o.shard)
		assert.Equal(t, "junit-"+s+".xml", sp.o.junit)
	}
	var merge string
	for _, s := range dig(t, wf, "jobs", "gather", "steps").([]any) {
		if r, ok := s.(map[string]any)["run"].(string); ok && strings.Contains(r, "junit-merge") {
			merge = r
		}
	}
	assert.Contains(t, merge, "junit-merge -o all.xml junit-*.xml")
}

// The image's entry point is the runner.
func TestDockerfile(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("..", "..", "deploy", "Dockerfile"))
	require.NoError(t, err)
	text := string(data)
	assert.Contains(t, text, "FROM golang:1.26 AS build")
	assert.Contains(t, text, "go build -trimpath -o /out/relaysim ./cmd/relaysim")
	assert.Contains(t, text, `ENTRYPOINT ["/usr/local/bin/relaysim"]`)
}
