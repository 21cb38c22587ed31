package main

import (
	"fmt"
	"io"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"

	"github.com/relaysim/relaysim/sim"
	"github.com/relaysim/relaysim/sim/plan"
)

// A guided search's run is a seed and its settings: a value for each gene,
// each gene one of run's own flags with a short list of values to draw
// from. A run's command line names the seed, the mode and every gene not
// at run's default, so that the line alone replays the run
// (`relaysim run ...`) and reads as what was changed.

// gene is one run flag a guided search draws and mutates.
type gene struct {
	flag   string
	def    string   // run's default, as the flag prints it
	values []string // what a draw picks from (def among them)
}

// genes are the flags a search varies, in the order its lines name them.
var genes = makeGenes()

func makeGenes() []gene {
	fs := newRunFlags("run", io.Discard).fs
	g := func(name string, values ...string) gene {
		def := fs.Lookup(name).DefValue
		if !slices.Contains(values, def) {
			values = append([]string{def}, values...)
		}
		return gene{flag: name, def: def, values: values}
	}
	out := []gene{
		g("churn-only", "false", "true"),
		g("upgrade", "", "v1:v3", "v1:v2", "v2:v3", "v3:v1", "v3:v2", "v2:v1"),
		g("alphabet", "plain", "wide"),
		g("names", "drawn", "ascii", "wide"),
		g("scheduler", "random", "pct"),
		g("nodes", "2", "3", "4", "5"),
		g("users", "4", "8", "12", "16", "24"),
		g("rooms", "1", "2", "3", "5", "8"),
		g("rooms-per-user", "1", "2", "3"),
		g("rate", "5", "10", "20", "40", "80"),
		g("churn", "0", "0.5", "1", "2", "4"),
		g("core", "1", "2"),
		g("max", "2", "4", "8", "12"),
		g("queue", "0", "4", "16", "32"),
		g("channels", "0", "1", "2", "4"),
		g("max-net-fault", "0", "0.02", "0.05", "0.1", "0.2"),
		g("max-recv-break", "0", "0.1", "0.2", "0.4"),
		g("stream-backlog", "0", "2", "4", "8", "32"),
		g("stream-linger", "0s", "50ms", "200ms", "1s", "5s"),
		g("overlap", "0", "0.5", "1"),
		g("mixed", "0", "0.25", "0.5", "1"),
	}
	// Each timed fault kind's count bound: off, run's default, twice and
	// four times it.
	for _, k := range plan.Counted() {
		name := k.Budget().Flag
		d, _ := strconv.Atoi(fs.Lookup(name).DefValue)
		var vs []string
		for _, n := range []int{0, max(d, 1), 2 * max(d, 1), 4 * max(d, 1)} {
			if v := strconv.Itoa(n); !slices.Contains(vs, v) {
				vs = append(vs, v)
			}
		}
		out = append(out, g(name, vs...))
	}
	return out
}

// geneIndex is the index of the gene of flag name, -1 for none.
func geneIndex(name string) int {
	return slices.IndexFunc(genes, func(g gene) bool { return g.flag == name })
}

// settings are one run of a search: its seed, its mode and a value for
// each gene (genes' order).
type settings struct {
	seed sim.Seed
	mode string
	vals []string
}

// plainSettings are a plain sweep's run of seed in mode: every gene at
// run's default, the alphabet the sweep draws for the seed.
func plainSettings(seed sim.Seed, mode string) settings {
	s := settings{seed: seed, mode: mode, vals: make([]string, len(genes))}
	for i, g := range genes {
		s.vals[i] = g.def
	}
	if sim.SweepAlphabet(seed) == sim.AlphabetWide {
		s.vals[geneIndex("alphabet")] = "wide"
	}
	return s
}

// randomSettings draw a swarm of settings: each gene keeps run's default
// or, half the time, takes a value drawn from its list.
func randomSettings(r *rand.Rand, modes []string) settings {
	s := plainSettings(sim.Seed(r.Uint64()), modes[r.IntN(len(modes))])
	for i, g := range genes {
		if r.IntN(2) == 0 {
			s.vals[i] = g.values[r.IntN(len(g.values))]
		}
	}
	s.fix()
	return s
}

// mutate is a copy of s with a fresh seed and one to three genes (or the
// mode, when the search has more than one) changed to another value.
func (s settings) mutate(r *rand.Rand, modes []string) settings {
	m := settings{seed: sim.Seed(r.Uint64()), mode: s.mode, vals: slices.Clone(s.vals)}
	if !slices.Contains(modes, m.mode) {
		m.mode = modes[r.IntN(len(modes))]
	}
	for range 1 + r.IntN(3) {
		i := r.IntN(len(genes) + 1)
		if i == len(genes) {
			if len(modes) > 1 {
				m.mode = other(r, modes, m.mode)
			}
			continue
		}
		m.vals[i] = other(r, genes[i].values, m.vals[i])
	}
	m.fix()
	return m
}

// other draws a value of vs other than cur (cur when there is none).
func other(r *rand.Rand, vs []string, cur string) string {
	var rest []string
	for _, v := range vs {
		if v != cur {
			rest = append(rest, v)
		}
	}
	if len(rest) == 0 {
		return cur
	}
	return rest[r.IntN(len(rest))]
}

// fix settles the flags that exclude each other: a churn-only run takes
// no upgrade.
func (s *settings) fix() {
	if s.vals[geneIndex("churn-only")] == "true" {
		s.vals[geneIndex("upgrade")] = genes[geneIndex("upgrade")].def
	}
}

// args are the run's command line after "relaysim": run, its seed and
// mode, and each gene not at run's default.
func (s settings) args() []string {
	args := []string{"run", "-seed", s.seed.String(), "-mode", s.mode}
	for i, g := range genes {
		if s.vals[i] != g.def {
			args = append(args, "-"+g.flag+"="+s.vals[i])
		}
	}
	return args
}

func (s settings) String() string { return strings.Join(s.args(), " ") }

// parseSettings reads a run command line as args writes it: "run", -seed
// and -mode, then -flag=value for genes only; the line must be one that
// run accepts.
func parseSettings(line string) (settings, error) {
	f := strings.Fields(line)
	if len(f) == 0 || f[0] != "run" {
		return settings{}, fmt.Errorf("want a run command line (run -seed S -mode M -flag=value ...), got %q", line)
	}
	s := plainSettings(0, "")
	for i, g := range genes {
		s.vals[i] = g.def
	}
	var seed string
	for i := 1; i < len(f); i++ {
		name, value, hasValue := strings.Cut(strings.TrimLeft(f[i], "-"), "=")
		if !strings.HasPrefix(f[i], "-") {
			return settings{}, fmt.Errorf("unexpected argument %q", f[i])
		}
		if !hasValue && (name == "seed" || name == "mode") {
			if i+1 >= len(f) {
				return settings{}, fmt.Errorf("-%s needs a value", name)
			}
			i++
			value = f[i]
		}
		switch k := geneIndex(name); {
		case name == "seed":
			seed = value
		case name == "mode":
			s.mode = value
		case k >= 0 && hasValue:
			s.vals[k] = value
		case k >= 0:
			return settings{}, fmt.Errorf("-%s: want -%s=value", name, name)
		default:
			return settings{}, fmt.Errorf("-%s is not a flag a guided search sets (guide varies: %s)", name, geneFlags())
		}
	}
	if seed == "" || s.mode == "" {
		return settings{}, fmt.Errorf("a run command line names -seed and -mode")
	}
	var err error
	if s.seed, err = sim.ParseSeed(seed); err != nil {
		return settings{}, err
	}
	if err := newRunFlags("run", io.Discard).parse(s.args()[1:]); err != nil {
		return settings{}, err
	}
	return s, nil
}

// geneFlags lists the flags a search varies.
func geneFlags() string {
	var names []string
	for _, g := range genes {
		names = append(names, "-"+g.flag)
	}
	return strings.Join(names, " ")
}
