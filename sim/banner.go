package sim

import (
	"fmt"
	"runtime/debug"
	"slices"
	"strings"
	"testing"

	"github.com/relaysim/relaysim/model"
)

// Report is a failure banner: what failed, the violated properties with
// evidence, the trace lines around the first evidence line, the trace
// hash, how to replay it and which commit it belongs to. Every banner is
// one (a run's: Banner; a property case's: scenarios), so that they read
// alike.
type Report struct {
	Headline string // "relaysim FAILED  seed=0x2a mode=bulk ..."
	// Facts are lines under the headline ("faults: ...", "error:  ...").
	Facts      []string
	Violations []model.Violation
	Notes      []string
	// Trace, when set, gives the excerpt (TraceExcerpt).
	Trace     *Trace
	TraceHash string
	// Replay is the command that replays the failure, then lines that
	// explain it.
	Replay []string
	// Shrink, when set, is the command that shrinks the failure
	// (relaysim shrink).
	Shrink string
	// Commit is the closing note: the commit the failure belongs to.
	Commit string
}

func (r Report) String() string {
	var b strings.Builder
	rule := strings.Repeat("=", 78)
	fmt.Fprintln(&b, rule)
	fmt.Fprintln(&b, r.Headline)
	for _, f := range r.Facts {
		fmt.Fprintln(&b, f)
	}
	shown := BannerViolations(r.Violations, 10)
	for _, v := range shown {
		fmt.Fprintf(&b, "violated: %s\n", v)
	}
	if more := len(r.Violations) - len(shown); more > 0 {
		fmt.Fprintf(&b, "... and %d more violations\n", more)
	}
	for _, n := range r.Notes {
		fmt.Fprintf(&b, "note:    %s\n", n)
	}
	if r.Trace != nil {
		title, lines := TraceExcerpt(r.Trace, r.Violations)
		fmt.Fprintln(&b, title)
		for _, l := range lines {
			fmt.Fprintf(&b, "  %s\n", l)
		}
	}
	fmt.Fprintf(&b, "trace-hash %s\n", r.TraceHash)
	for i, l := range r.Replay {
		prefix := "         "
		if i == 0 {
			prefix = "replay:  "
		}
		fmt.Fprintf(&b, "%s%s\n", prefix, l)
	}
	if r.Shrink != "" {
		fmt.Fprintf(&b, "shrink:  %s\n", r.Shrink)
	}
	fmt.Fprintf(&b, "note:    %s\n", r.Commit)
	fmt.Fprintln(&b, rule)
	return b.String()
}

// Banner renders a failed run for a human (a Report): seed, mode,
// scheduler, fault mix, cost model, the violated properties with evidence,
// the trace lines around the first evidence line (the last lines when
// there is none or the trace was not kept: see WholeTrace), the commit and
// the one command that replays it.
func Banner(r *Result, replay, commit string) string {
	return BannerReport(r, replay, commit).String()
}

// BannerReport is Banner's report, for a caller to add to (the shrink
// command) before rendering it.
func BannerReport(r *Result, replay, commit string) Report {
	c := r.Config
	rep := Report{
		Headline:   fmt.Sprintf("relaysim FAILED  seed=%s mode=%s scheduler=%s channels=%d", c.Seed, c.Mode, c.Scheduler, r.Channels),
		Facts:      []string{fmt.Sprintf("faults: %s", r.Mix), fmt.Sprintf("cost:   %s", r.Cost)},
		Violations: r.Violations, Notes: r.notes, Trace: r.Trace, TraceHash: r.TraceHash,
		Replay: []string{replay},
		Commit: fmt.Sprintf("a seed belongs to its commit (%s); on another commit it may run differently.", commit),
	}
	if r.Err != nil {
		rep.Facts = append(rep.Facts, fmt.Sprintf("error:  %v", r.Err))
	}
	if r.BubbleErr != nil {
		rep.Facts = append(rep.Facts, fmt.Sprintf("bubble: %v", r.BubbleErr))
	}
	return rep
}

// BannerViolations picks the violations a banner prints: the first most,
// plus the first of every property not among them, so that a flood of one
// property never hides that another failed too (the mutant catalog judges
// a run by the properties its banner names).
func BannerViolations(vs []model.Violation, most int) []model.Violation {
	out := slices.Clone(vs[:min(most, len(vs))])
	seen := map[string]bool{}
	for _, v := range out {
		seen[v.Property] = true
	}
	for _, v := range vs[len(out):] {
		if !seen[v.Property] {
			seen[v.Property] = true
			out = append(out, v)
		}
	}
	return out
}

// excerptAround is how many trace lines the banner shows before and after
// the first evidence line.
const excerptAround = 10

// TraceExcerpt is the banner's view of a trace: when the trace was kept
// whole and a violation names trace lines, the lines around the first
// evidence line of the first such violation, numbered, its evidence lines
// marked ">>" (and any of its evidence lines outside that window after
// them); else the last 30 lines. It returns a title line and the lines.
func TraceExcerpt(t *Trace, vs []model.Violation) (string, []string) {
	var evidence []int
	for _, v := range vs {
		if len(v.TraceLines) > 0 {
			evidence = v.TraceLines
			break
		}
	}
	if len(evidence) == 0 || !t.Kept() {
		return "last trace lines:", t.Tail(30)
	}
	first := evidence[0]
	from, to := max(1, first-excerptAround), first+excerptAround
	mark := map[int]bool{}
	for _, n := range evidence {
		mark[n] = true
	}
	all := t.Numbered()
	var out []string
	show := func(n int) {
		if n < 1 || n > len(all) {
			return
		}
		m := "  "
		if mark[n] {
			m = ">>"
		}
		out = append(out, fmt.Sprintf("%s %6d %s", m, n, all[n-1]))
	}
	for n := from; n <= to; n++ {
		show(n)
	}
	gap := to
	for _, n := range evidence {
		if n > to && n <= len(all) {
			if n > gap+1 {
				out = append(out, "   ...")
			}
			show(n)
			gap = n
		}
	}
	return fmt.Sprintf("trace around the first evidence (line %d of %d; >> marks the evidence of %q):",
		first, len(all), firstWith(vs).Property), out
}

func firstWith(vs []model.Violation) model.Violation {
	for _, v := range vs {
		if len(v.TraceLines) > 0 {
			return v
		}
	}
	return model.Violation{}
}

// WholeTrace returns r itself unless r failed with evidence in a trace it
// did not keep whole. Then it runs r's configuration again keeping the
// whole trace — a run is deterministic, so it is the same run, as the trace
// hash checks — and returns r with that whole trace, so that its banner
// can show the lines around the evidence. If the hashes differ it returns
// r with a note saying so (a determinism bug). t may be nil outside tests.
func WholeTrace(t *testing.T, r *Result) *Result {
	if !r.Failed() || r.Trace == nil || r.Trace.Kept() || firstWith(r.Violations).Property == "" {
		return r
	}
	cfg := r.Config
	cfg.KeepTrace = true
	if e := cfg.Exhaustive; e != nil {
		cfg.Exhaustive = e.Replay()
	}
	again := Run(t, cfg)
	if again.TraceHash != r.TraceHash || again.Trace == nil {
		r.notes = append(r.notes, fmt.Sprintf("a re-run keeping the whole trace gave trace-hash %s, not %s: the run is not deterministic", again.TraceHash, r.TraceHash))
		return r
	}
	whole := *r
	whole.Trace = again.Trace
	return &whole
}

// BuildCommit names the commit the running binary was built from, from its
// build info: the short revision, "+dirty" when the tree had changes, or
// "unknown" when the binary carries no VCS information (go run, go test
// and -buildvcs=false stamp none).
func BuildCommit() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "unknown"
	}
	var rev string
	var dirty bool
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			dirty = s.Value == "true"
		}
	}
	if rev == "" {
		return "unknown"
	}
	if len(rev) > 12 {
		rev = rev[:12]
	}
	if dirty {
		rev += "+dirty"
	}
	return rev
}
