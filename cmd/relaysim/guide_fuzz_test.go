package main

import (
	"encoding/binary"
	"flag"
	"io"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/relaysim/relaysim/sim"
)

// FuzzSwarm is Go's native fuzzing engine in place of relaysim guide: its
// input bytes choose the seed (the first 8) and the settings (a byte per
// gene, in genes' order: missing means run's default, else the byte picks
// a value of the gene's list; then a byte for the mode), and each input is
// one simulation run, in process. A passing run passes; a failing one
// fails with its replay command. The engine's guidance is the coverage
// counters of everything instrumented (the relay, the harness, gRPC, this
// harness too), not the probes. docs/guided.md compares the two:
//
//	go test ./cmd/relaysim -run '^$' -fuzz '^FuzzSwarm$' -fuzztime 60s -swarm.mode stream -swarm.probes /tmp/probes.txt
var (
	swarmMode   = flag.String("swarm.mode", "stream", "FuzzSwarm: the relay modes its inputs choose from (single, bulk, stream, both or all)")
	swarmProbes = flag.String("swarm.probes", "", "FuzzSwarm: append each run's probes hit to this file, one line per run (for measuring)")
)

// settingsOfBytes reads a fuzz input as settings.
func settingsOfBytes(b []byte, modes []string) settings {
	var seed [8]byte
	copy(seed[:], b)
	s := plainSettings(sim.Seed(binary.LittleEndian.Uint64(seed[:])), modes[0])
	s.vals[geneIndex("alphabet")] = genes[geneIndex("alphabet")].def // only a byte sets it
	rest := b[min(len(b), 8):]
	for i, g := range genes {
		if i < len(rest) {
			s.vals[i] = g.values[int(rest[i])%len(g.values)]
		}
	}
	if len(rest) > len(genes) {
		s.mode = modes[int(rest[len(genes)])%len(modes)]
	}
	s.fix()
	return s
}

func FuzzSwarm(f *testing.F) {
	modes := map[string][]string{"single": {"single"}, "bulk": {"bulk"}, "stream": {"stream"},
		"both": {"single", "bulk"}, "all": {"single", "bulk", "stream"}}[*swarmMode]
	require.NotEmpty(f, modes, "-swarm.mode %q", *swarmMode)
	f.Add([]byte{0x2a})
	f.Fuzz(func(t *testing.T, b []byte) {
		s := settingsOfBytes(b, modes)
		rf := newRunFlags("run", io.Discard)
		require.NoError(t, rf.parse(s.args()[1:]), s.String())
		res := sim.Run(t, rf.cfg)
		if *swarmProbes != "" {
			fh, err := os.OpenFile(*swarmProbes, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
			require.NoError(t, err)
			_, err = fh.WriteString(strings.Join(append([]string{"run"}, sortedKeys(res.Probes)...), " ") + "\n")
			require.NoError(t, err)
			require.NoError(t, fh.Close())
		}
		if res.Failed() {
			t.Fatalf("the run failed: %v %v %v\n  replay: go tool relaysim %s",
				propertiesOf(res.Violations), res.Err, res.BubbleErr, strings.Replace(s.String(), "run ", "replay ", 1))
		}
	})
}
