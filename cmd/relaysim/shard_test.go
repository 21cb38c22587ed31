package main

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/relaysim/relaysim/sim"
)

// Every seed of a range lands in exactly one shard, whatever the count,
// and the shards are as even as round robin makes them.
func TestShardsPartitionEverySeed(t *testing.T) {
	for _, r := range []struct{ lo, hi sim.Seed }{{1, 1}, {1, 100}, {0x10, 0x2f}, {0, 999}, {1<<64 - 10, 1<<64 - 1}} {
		for n := 1; n <= 9; n++ {
			seen := map[sim.Seed]int{}
			sizes := map[int]bool{}
			for i := 1; i <= n; i++ {
				part := shardSeeds(r.lo, r.hi, shard{i, n})
				sizes[len(part)] = true
				for _, s := range part {
					seen[s]++
				}
			}
			require.Len(t, seen, int(r.hi-r.lo)+1, "%d-%d in %d shards: a seed is missing", r.lo, r.hi, n)
			for s, k := range seen {
				require.Equal(t, 1, k, "seed %s in %d shards of %d", s, k, n)
			}
			assert.LessOrEqual(t, len(sizes), 2, "%d-%d in %d shards: sizes differ by more than one", r.lo, r.hi, n)
		}
	}
}

func TestSweepSeedsShards(t *testing.T) {
	seeds := func(spec, shardSpec string) []sim.Seed {
		lo, hi, err := seedRange(spec)
		require.NoError(t, err)
		s, err := parseShard(shardSpec)
		require.NoError(t, err)
		return shardSeeds(lo, hi, s)
	}
	assert.Equal(t, []sim.Seed{2, 5, 8}, seeds("1-10", "2/3"))
	assert.Equal(t, []sim.Seed{16, 17, 18}, seeds("0x10-0x12", "1/1"))
}

// Where a sweep's shard comes from: -shard, else RELAYSIM_SHARD (a CI
// matrix), else a Kubernetes Indexed Job's JOB_COMPLETION_INDEX (0-based)
// of -shards or RELAYSIM_SHARDS, else the whole range.
func TestResolveShard(t *testing.T) {
	for _, tc := range []struct {
		name   string
		flag   string
		shards int
		env    map[string]string
		want   shard
		from   string
		err    string
	}{
		{name: "nothing: the whole range", want: shard{1, 1}},
		{name: "flag", flag: "2/4", want: shard{2, 4}, from: "-shard"},
		{name: "CI matrix variable", env: map[string]string{envShard: "3/4"}, want: shard{3, 4}, from: envShard},
		{name: "flag wins over the variables", flag: "1/2", env: map[string]string{envShard: "3/4", envJobIndex: "5", envShards: "8"}, want: shard{1, 2}, from: "-shard"},
		{name: "matrix variable wins over the job index", env: map[string]string{envShard: "3/4", envJobIndex: "5", envShards: "8"}, want: shard{3, 4}, from: envShard},
		{name: "job index 0 is shard 1", env: map[string]string{envJobIndex: "0", envShards: "8"}, want: shard{1, 8}, from: envJobIndex + "+" + envShards},
		{name: "last job index", env: map[string]string{envJobIndex: "7", envShards: "8"}, want: shard{8, 8}, from: envJobIndex + "+" + envShards},
		{name: "-shards wins over RELAYSIM_SHARDS", shards: 4, env: map[string]string{envJobIndex: "3", envShards: "8"}, want: shard{4, 4}, from: envJobIndex + "+-shards"},
		{name: "-shards 1 alone is the whole range", shards: 1, want: shard{1, 1}},

		{name: "malformed flag", flag: "2-4", err: `-shard "2-4": want i/n`},
		{name: "zero-based flag", flag: "0/4", err: "shards count from 1"},
		{name: "index past count", flag: "5/4", err: "want i/n"},
		{name: "flag and -shards disagree", flag: "1/4", shards: 8, err: "disagree"},
		{name: "malformed matrix variable", env: map[string]string{envShard: "x"}, err: envShard + `="x"`},
		{name: "job index without a count", env: map[string]string{envJobIndex: "3"}, err: "pass -shards N or set " + envShards},
		{name: "job index out of range", env: map[string]string{envJobIndex: "8", envShards: "8"}, err: "want 0 <= index < 8"},
		{name: "job index not a number", env: map[string]string{envJobIndex: "two", envShards: "8"}, err: envJobIndex + `="two"`},
		{name: "bad count variable", env: map[string]string{envJobIndex: "1", envShards: "0"}, err: envShards + `="0"`},
		{name: "-shards without a job index", shards: 4, err: "-shards 4 needs " + envJobIndex},
		{name: "negative -shards", shards: -2, env: map[string]string{envJobIndex: "1"}, err: "-shards -2"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, from, err := resolveShard(tc.flag, tc.shards, func(k string) string { return tc.env[k] })
			if tc.err != "" {
				require.Error(t, err)
				assert.Contains(t, err.Error(), tc.err)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.want, got)
			assert.Equal(t, tc.from, from)
		})
	}
}

// The sweep reads its shard from the environment: a bad value is a usage
// error that says which variable is wrong, and nothing runs.
func TestSweepShardFromEnvironment(t *testing.T) {
	t.Setenv(envJobIndex, "2")
	t.Setenv(envShards, "")
	var out, errb bytes.Buffer
	assert.Equal(t, exitUsage, run([]string{"sweep", "-seeds", "1-8"}, &out, &errb))
	assert.Contains(t, errb.String(), envJobIndex+"=2 is set but the shard count is not")
	assert.Empty(t, out.String())

	sp, err := parseSweep([]string{"-seeds", "1-8", "-mode", "both"}, func(k string) string {
		return map[string]string{envJobIndex: "2", envShards: "4"}[k]
	}, &errb)
	require.NoError(t, err)
	var names []string
	for _, j := range sp.jobs {
		names = append(names, j.seed.String()+" "+j.label())
	}
	assert.Equal(t, []string{"0x3 single", "0x3 bulk", "0x3 equiv", "0x3 single churn-only", "0x3 bulk churn-only",
		"0x7 single", "0x7 bulk", "0x7 equiv", "0x7 single churn-only", "0x7 bulk churn-only"}, names)
	assert.Equal(t, shard{3, 4}, sp.o.shard)
}
