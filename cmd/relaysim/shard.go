package main

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/relaysim/relaysim/sim"
)

// shard is part I of N of a sweep (1 <= I <= N): the seeds at positions
// I-1, I-1+N, I-1+2N, ... of the range. Round robin rather than blocks, so
// every shard gets a similar mix of seeds whatever the range.
type shard struct{ I, N int }

func (s shard) String() string { return fmt.Sprintf("%d/%d", s.I, s.N) }

// holds reports whether the seed at position k (0-based) of the range
// belongs to s. For every k exactly one of the shards 1/N..N/N holds it.
func (s shard) holds(k uint64) bool { return k%uint64(s.N) == uint64(s.I-1) }

// The environment variables a sharded sweep reads when -shard is not given.
const (
	// envShard is "i/n", as -shard: a CI matrix sets it per job.
	envShard = "RELAYSIM_SHARD"
	// envShards is the shard count that goes with envJobIndex (as -shards).
	envShards = "RELAYSIM_SHARDS"
	// envJobIndex is set by Kubernetes in each pod of an Indexed Job,
	// 0-based: index 0 runs shard 1/N.
	envJobIndex = "JOB_COMPLETION_INDEX"
)

// parseShard reads "i/n" with 1 <= i <= n.
func parseShard(v string) (shard, error) {
	is, ns, ok := strings.Cut(strings.TrimSpace(v), "/")
	i, err1 := strconv.Atoi(is)
	n, err2 := strconv.Atoi(ns)
	if !ok || err1 != nil || err2 != nil || n < 1 || i < 1 || i > n {
		return shard{}, fmt.Errorf("%q: want i/n with 1 <= i <= n (shards count from 1)", v)
	}
	return shard{i, n}, nil
}

// resolveShard picks the sweep's shard. In order: the -shard flag
// (flagShard, "" when not given); RELAYSIM_SHARD=i/n (a CI matrix);
// JOB_COMPLETION_INDEX (a Kubernetes Indexed Job, 0-based) with the count
// from -shards (flagShards, 0 when not given) or RELAYSIM_SHARDS; else the
// whole range (1/1). It also returns where the shard came from, for the
// progress line and the JUnit suite name. A malformed or inconsistent
// value is an error, never a silent whole-range sweep.
func resolveShard(flagShard string, flagShards int, getenv func(string) string) (shard, string, error) {
	if flagShard != "" {
		s, err := parseShard(flagShard)
		if err != nil {
			return shard{}, "", fmt.Errorf("-shard %w", err)
		}
		if flagShards != 0 && flagShards != s.N {
			return shard{}, "", fmt.Errorf("-shard %s and -shards %d disagree on the shard count", s, flagShards)
		}
		return s, "-shard", nil
	}
	if v := getenv(envShard); v != "" {
		s, err := parseShard(v)
		if err != nil {
			return shard{}, "", fmt.Errorf("%s=%w", envShard, err)
		}
		return s, envShard, nil
	}
	idx := getenv(envJobIndex)
	if idx == "" {
		if flagShards > 1 {
			return shard{}, "", fmt.Errorf("-shards %d needs %s (a Kubernetes Indexed Job sets it) or -shard i/n", flagShards, envJobIndex)
		}
		return shard{1, 1}, "", nil
	}
	return jobIndexShard(idx, flagShards, getenv(envShards))
}

// jobIndexShard is shard index+1 of the count from -shards or
// RELAYSIM_SHARDS.
func jobIndexShard(idx string, flagShards int, envN string) (shard, string, error) {
	n, from := flagShards, "-shards"
	if n == 0 {
		if envN == "" {
			return shard{}, "", fmt.Errorf("%s=%s is set but the shard count is not: pass -shards N or set %s (the Job's completions)", envJobIndex, idx, envShards)
		}
		var err error
		if n, err = strconv.Atoi(envN); err != nil || n < 1 {
			return shard{}, "", fmt.Errorf("%s=%q: want a count >= 1", envShards, envN)
		}
		from = envShards
	}
	if n < 1 {
		return shard{}, "", fmt.Errorf("-shards %d: want a count >= 1", n)
	}
	i, err := strconv.Atoi(idx)
	if err != nil || i < 0 || i >= n {
		return shard{}, "", fmt.Errorf("%s=%q: want 0 <= index < %d (%s)", envJobIndex, idx, n, from)
	}
	return shard{i + 1, n}, envJobIndex + "+" + from, nil
}

// seedRange parses "A-B" (or one seed "A"), inclusive, hex or decimal.
func seedRange(spec string) (lo, hi sim.Seed, err error) {
	a, b, ok := strings.Cut(spec, "-")
	if !ok {
		b = a
	}
	if lo, err = sim.ParseSeed(a); err != nil {
		return 0, 0, fmt.Errorf("-seeds %q: %w", spec, err)
	}
	if hi, err = sim.ParseSeed(b); err != nil {
		return 0, 0, fmt.Errorf("-seeds %q: %w", spec, err)
	}
	if hi < lo || hi-lo > 1_000_000 {
		return 0, 0, fmt.Errorf("-seeds %q: want A-B with A <= B and at most a million seeds", spec)
	}
	return lo, hi, nil
}

// shardSeeds lists the seeds of lo..hi (inclusive) that s holds.
func shardSeeds(lo, hi sim.Seed, s shard) []sim.Seed {
	var out []sim.Seed
	for k := uint64(0); k <= uint64(hi-lo); k++ {
		if s.holds(k) {
			out = append(out, lo+sim.Seed(k))
		}
	}
	return out
}
