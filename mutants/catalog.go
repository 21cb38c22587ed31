package mutants

import (
	"embed"
	"fmt"
	"path"
	"slices"
	"strings"

	"golang.org/x/tools/txtar"

	"github.com/relaysim/relaysim/model"
)

// The catalog is embedded so that the command, the tests and CI read the
// same files without caring about the working directory.
//
//go:embed catalog/*.txtar
var catalogFS embed.FS

// Mutant is one catalogued bug: an exact snippet of a file of system/ and
// its replacement, with the property that must catch it. A mutant of the
// suite probes is a bug of the harness instead (a file of sim/): a
// generator that stops drawing some behaviour, which every property
// misses and only the sweep's ledger of code probes catches.
type Mutant struct {
	Name     string
	Story    string // one line: what a developer got wrong
	File     string // relative to the module root
	Property string // what must fail: a property of model/ or a pseudo-property
	Suite    string // sweep, rapid, explore or test:<pkg>:<regexp>
	Modes    []string
	Args     []string // extra flags for the suite's command
	Find     string   // must occur exactly once in File
	Replace  string
	// Note is the header's comment lines ("# ..."), joined: why the
	// property is the one that catches it, when the story alone does not
	// say (mutants -list prints it).
	Note string
}

// Suites a mutant can name.
const (
	SuiteSweep   = "sweep"
	SuiteRapid   = "rapid"
	SuiteExplore = "explore"
	// SuiteProbes runs one sweep (relaysim sweep with the mutant's args,
	// which name -require-probes) and is caught when the sweep fails on
	// required probes no run hit, with no property violated: its
	// property is PropertyProbes.
	SuiteProbes = "probes"
	testPrefix  = "test:"
)

// PropertyProbes is the pseudo-property of the probes suite: required
// code probes went unhit.
const PropertyProbes = "require-probes"

// pseudo are the properties a test suite reports that are not the
// model's: "determinism", a seed that replayed differently
// (sim/determinism_test.go reports it with proc.AddViolation).
var pseudo = map[string]bool{
	"determinism": true,
}

// Catalog loads and validates every embedded mutant, sorted by name.
func Catalog() ([]*Mutant, error) {
	files, err := catalogFS.ReadDir("catalog")
	if err != nil {
		return nil, err
	}
	var out []*Mutant
	seen := map[string]bool{}
	for _, f := range files {
		data, err := catalogFS.ReadFile("catalog/" + f.Name())
		if err != nil {
			return nil, err
		}
		m, err := Parse(f.Name(), data)
		if err != nil {
			return nil, err
		}
		if seen[m.Name] {
			return nil, fmt.Errorf("%s: duplicate mutant name %q", f.Name(), m.Name)
		}
		seen[m.Name] = true
		out = append(out, m)
	}
	slices.SortFunc(out, func(a, b *Mutant) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}

// Parse reads one catalog file. Its name must be the mutant's name plus
// ".txtar", so that a mutant is found by name on disk.
func Parse(filename string, data []byte) (*Mutant, error) {
	ar := txtar.Parse(data)
	m := &Mutant{}
	if err := m.header(string(ar.Comment)); err != nil {
		return nil, fmt.Errorf("%s: %w", filename, err)
	}
	if err := m.sections(ar.Files); err != nil {
		return nil, fmt.Errorf("%s: %w", filename, err)
	}
	if err := m.validate(); err != nil {
		return nil, fmt.Errorf("%s: %w", filename, err)
	}
	if want := m.Name + ".txtar"; path.Base(filename) != want {
		return nil, fmt.Errorf("%s: mutant %q must live in %s", filename, m.Name, want)
	}
	return m, nil
}

// header reads the "key: value" lines before the first section.
func (m *Mutant) header(comment string) error {
	fields := map[string]*string{
		"name": &m.Name, "story": &m.Story, "file": &m.File,
		"property": &m.Property, "suite": &m.Suite,
	}
	for _, line := range strings.Split(comment, "\n") {
		line = strings.TrimSpace(line)
		if c, ok := strings.CutPrefix(line, "#"); ok {
			m.Note = strings.TrimSpace(m.Note + " " + strings.TrimSpace(c))
			continue
		}
		if line == "" {
			continue
		}
		key, val, ok := strings.Cut(line, ":")
		if !ok {
			return fmt.Errorf("header line %q is not key: value", line)
		}
		key, val = strings.TrimSpace(key), strings.TrimSpace(val)
		switch {
		case fields[key] != nil:
			*fields[key] = val
		case key == "modes":
			m.Modes = strings.Fields(val)
		case key == "args":
			m.Args = strings.Fields(val)
		default:
			return fmt.Errorf("unknown header key %q", key)
		}
	}
	if m.Suite == "" {
		m.Suite = SuiteSweep
	}
	return nil
}

// sections reads "-- find --" and "-- replace --". txtar ends every
// section with a newline; the snippet is the text before it, so a snippet
// may stop mid-line.
func (m *Mutant) sections(files []txtar.File) error {
	got := map[string]bool{}
	for _, f := range files {
		text := strings.TrimSuffix(string(f.Data), "\n")
		switch f.Name {
		case "find":
			m.Find = text
		case "replace":
			m.Replace = text
		default:
			return fmt.Errorf("unknown section %q (want find and replace)", f.Name)
		}
		if got[f.Name] {
			return fmt.Errorf("section %q twice", f.Name)
		}
		got[f.Name] = true
	}
	if !got["find"] || !got["replace"] {
		return fmt.Errorf("want sections find and replace")
	}
	return nil
}

// validate checks the fields that do not need the source tree.
func (m *Mutant) validate() error {
	switch {
	case m.Name == "" || m.Story == "" || m.File == "" || m.Property == "":
		return fmt.Errorf("name, story, file and property are required")
	case m.Find == "":
		return fmt.Errorf("empty find snippet")
	case m.Find == m.Replace:
		return fmt.Errorf("replace equals find: not a mutant")
	case m.Suite == SuiteProbes && !strings.HasPrefix(m.File, "sim/"):
		return fmt.Errorf("file %s: a probes mutant changes the harness (sim/), which only the probes ledger watches", m.File)
	case m.Suite != SuiteProbes && !strings.HasPrefix(m.File, "system/"):
		return fmt.Errorf("file %s: mutants change the relay (system/), never the oracle", m.File)
	}
	for _, mode := range m.Modes {
		switch {
		case !slices.Contains(SweepModes, mode):
			return fmt.Errorf("unknown mode %q", mode)
		case m.Suite == SuiteRapid && !slices.Contains(RapidModes, mode):
			return fmt.Errorf("mode %q: the rapid suite runs only %s", mode, strings.Join(RapidModes, " and "))
		}
	}
	return m.validateSuite()
}

func (m *Mutant) validateSuite() error {
	isPseudo := pseudo[m.Property]
	switch {
	case m.Suite == SuiteSweep || m.Suite == SuiteRapid:
		if !slices.Contains(model.Properties, m.Property) {
			return fmt.Errorf("unknown property %q", m.Property)
		}
		return nil
	case m.Suite == SuiteExplore:
		if !slices.Contains(model.Properties, m.Property) {
			return fmt.Errorf("unknown property %q", m.Property)
		}
		return m.validateExploreArgs()
	case m.Suite == SuiteProbes:
		if m.Property != PropertyProbes {
			return fmt.Errorf("suite probes: the property is %s, not %q", PropertyProbes, m.Property)
		}
		if !slices.ContainsFunc(m.Args, func(a string) bool { return strings.HasPrefix(strings.TrimLeft(a, "-"), "require-probes") }) {
			return fmt.Errorf("suite probes: args must name -require-probes")
		}
		return nil
	case strings.HasPrefix(m.Suite, testPrefix):
		if _, _, ok := m.TestTarget(); !ok {
			return fmt.Errorf("suite %q: want test:<pkg>:<regexp>", m.Suite)
		}
		if !isPseudo && !slices.Contains(model.Properties, m.Property) {
			return fmt.Errorf("unknown property %q", m.Property)
		}
		return nil
	}
	return fmt.Errorf("unknown suite %q (want sweep, rapid, explore, probes or test:<pkg>:<regexp>)", m.Suite)
}

// validateExploreArgs: an explore mutant names its story (-story NAME or
// -scenario FILE, exactly one) and leaves to the suite the flags it sets
// itself; modes: runs a search per mode, so it excludes -mode in args.
func (m *Mutant) validateExploreArgs() error {
	stories := 0
	for i, a := range m.Args {
		name, _, hasValue := strings.Cut(strings.TrimLeft(a, "-"), "=")
		if !strings.HasPrefix(a, "-") {
			continue
		}
		switch name {
		case "story", "scenario":
			stories++
			if !hasValue && i+1 == len(m.Args) {
				return fmt.Errorf("args: -%s needs a value", name)
			}
		case "schedule", "out", "first", "junit", "shard":
			return fmt.Errorf("args: -%s is the explore suite's to set, not the mutant's", name)
		case "mode":
			if len(m.Modes) > 0 {
				return fmt.Errorf("args: -mode and modes: give one")
			}
		}
	}
	if stories != 1 {
		return fmt.Errorf("suite explore: args must name one story (-story NAME or -scenario FILE), got %d", stories)
	}
	return nil
}

// ExploreJobs are the explore suite's command lines, one search per mode
// of modes: (or one, with the mode args names or every mode): relaysim
// explore with the mutant's args, stopping at the first violation, its
// schedule files written to dir.
func (m *Mutant) ExploreJobs(dir string) [][]string {
	modes := m.Modes
	if len(modes) == 0 {
		modes = []string{""}
	}
	var jobs [][]string
	for _, mode := range modes {
		job := append([]string{"explore"}, m.Args...)
		if mode != "" {
			job = append(job, "-mode", mode)
		}
		jobs = append(jobs, append(job, "-first", "-out", dir))
	}
	return jobs
}

// TestTarget splits a test:<pkg>:<regexp> suite.
func (m *Mutant) TestTarget() (pkg, run string, ok bool) {
	rest, ok := strings.CutPrefix(m.Suite, testPrefix)
	if !ok {
		return "", "", false
	}
	pkg, run, ok = strings.Cut(rest, ":")
	return pkg, run, ok && pkg != "" && run != ""
}

// SweepModes are the relay modes a sweep suite runs each seed in, in
// order, unless the mutant names its own: the runner's faulted run in each
// (the seed's calm variant runs in all of them anyway: relaysim equiv).
// RapidModes are the modes the rapid state machine has subtests for.
var (
	SweepModes = []string{"single", "bulk", "stream"}
	RapidModes = []string{"single", "bulk", "stream"}
)

// RunModes are the relay modes a sweep or rapid suite alternates.
func (m *Mutant) RunModes() []string {
	switch {
	case len(m.Modes) > 0:
		return m.Modes
	case m.Suite == SuiteRapid:
		return RapidModes
	}
	return SweepModes
}

// Mutate applies the mutant to the clean source of its file.
func (m *Mutant) Mutate(src []byte) ([]byte, error) {
	if n := strings.Count(string(src), m.Find); n != 1 {
		return nil, fmt.Errorf("mutant %s is stale: its find snippet occurs %d times in %s (want exactly 1)", m.Name, n, m.File)
	}
	return []byte(strings.Replace(string(src), m.Find, m.Replace, 1)), nil
}
