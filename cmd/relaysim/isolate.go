package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/relaysim/relaysim/internal/proc"
	"github.com/relaysim/relaysim/model"
	"github.com/relaysim/relaysim/scenarios"
	"github.com/relaysim/relaysim/sim"
)

// Some failures end the process that runs them: goroutines left after
// teardown make synctest abort the whole process (the run's own report
// comes first, through Config.OnLeftovers). A shrink of such a failure
// cannot run its candidates in-process, so `relaysim shrink -isolate` runs
// each one in a child process of the same binary (the same build, so a
// catalog mutant's overlay stays in): the candidate goes to the child as a
// story (scenarios.FormatStory), the child (`relaysim shrink-run FILE`,
// not for people) plays it once and answers its typed result
// (isolatedRun) in the result file the parent names (proc.Run).
// Candidates run one after another, each from its own story, so an
// isolated shrink is as deterministic as an in-process one: the same seed
// shrinks to the same run either way.

// isolatedRun is one run as a shrink-run child reports it: what the
// shrinker reads of a sim.Result.
type isolatedRun struct {
	Violations []model.Violation `json:"violations"`
	Err        string            `json:"err,omitempty"`
	BubbleErr  string            `json:"bubble_err,omitempty"`
	Steps      int               `json:"steps"`
	TraceLines int               `json:"trace_lines"`
	TraceHash  string            `json:"trace_hash"`
	// Ran is the run made explicit, as a story: the actions, faults and
	// mix it played, its channels and stream backlog (the shrinker's
	// first run makes the seed's run explicit from these).
	Ran string `json:"ran"`
}

// cmdShrinkRun is the child side: it plays the story at args[0] once and
// writes one isolatedRun to its parent's result file (proc.WriteResult;
// also printed on stdout, for a person running it by hand), also when the
// run leaves goroutines behind (then from inside the bubble, before
// synctest ends the process). Exit as replay -story's.
func cmdShrinkRun(args []string, stdout, stderr io.Writer) int {
	if len(args) != 1 {
		fmt.Fprintln(stderr, "usage: relaysim shrink-run STORY (started by relaysim shrink -isolate)")
		return exitUsage
	}
	text, err := os.ReadFile(args[0])
	if err != nil {
		fmt.Fprintf(stderr, "relaysim shrink-run: %v\n", err)
		return exitUsage
	}
	cfg, err := scenarios.ParseStory(args[0], string(text))
	if err != nil {
		fmt.Fprintf(stderr, "relaysim shrink-run: %v\n", err)
		return exitUsage
	}
	report := func(res *sim.Result) int {
		out := isolatedRun{Violations: res.Violations, Steps: res.Steps, TraceHash: res.TraceHash, Ran: ranStory(cfg, res)}
		if res.Err != nil {
			out.Err = res.Err.Error()
		}
		if res.BubbleErr != nil {
			out.BubbleErr = res.BubbleErr.Error()
		}
		if res.Trace != nil {
			out.TraceLines = res.Trace.Lines()
		}
		if err := json.NewEncoder(stdout).Encode(out); err != nil {
			fmt.Fprintf(stderr, "relaysim shrink-run: %v\n", err)
			return exitHarness
		}
		if err := proc.WriteResult(out); err != nil {
			fmt.Fprintf(stderr, "relaysim shrink-run: %v\n", err)
			return exitHarness
		}
		return exitCode(res)
	}
	cfg.OnLeftovers = func(res *sim.Result) { coverExit(report(res)) }
	return report(sim.Run(nil, cfg))
}

// ranStory is the story of cfg as res played it: its workload, faults and
// mix as data.
func ranStory(cfg sim.Config, res *sim.Result) string {
	cfg.Actions, cfg.Faults = res.Actions, res.Faults
	if cfg.Actions == nil {
		cfg.Actions = []sim.Action{}
	}
	if cfg.Faults == nil {
		cfg.Faults = []sim.Fault{}
	}
	mix := res.Mix
	cfg.Mix = &mix
	cfg.ChannelsPerPeer, cfg.StreamBacklog = res.Channels, res.StreamBacklog
	return scenarios.FormatStory(cfg, "")
}

// isolator runs shrink candidates in child processes
// (sim.ShrinkOptions.Runner).
type isolator struct {
	self    string // this binary
	dir     string // where the candidate's story is written
	timeout time.Duration
	runs    int
}

func newIsolator() (*isolator, error) {
	self, err := selfPath()
	if err != nil {
		return nil, fmt.Errorf("-isolate: find this binary: %w", err)
	}
	dir, err := os.MkdirTemp("", "relaysim-shrink-*")
	if err != nil {
		return nil, fmt.Errorf("-isolate: %w", err)
	}
	return &isolator{self: self, dir: dir, timeout: 10 * time.Minute}, nil
}

func (iso *isolator) close() { _ = os.RemoveAll(iso.dir) }

// run plays cfg in a child process and returns what it reported. A child
// that reports nothing (it crashed, hung or could not read the story) is
// a run that could not finish: its Err says why.
func (iso *isolator) run(cfg sim.Config) (*sim.Result, int) {
	iso.runs++
	res := &sim.Result{Config: cfg}
	text := scenarios.FormatStory(cfg, "")
	if strings.Contains(text, "# NOT CARRIED") {
		res.Err = errors.New("-isolate: the run has a setting a story cannot carry")
		return res, 0
	}
	path := filepath.Join(iso.dir, "candidate.txt")
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		res.Err = err
		return res, 0
	}
	var stderr bytes.Buffer
	o := proc.Run(context.Background(), proc.Spec{Path: iso.self, Args: []string{"shrink-run", path}, Timeout: iso.timeout, Stderr: &stderr})
	var out isolatedRun
	if err := o.Decode(&out); err != nil {
		res.Err = fmt.Errorf("child process (run %d): %v, no result: %s", iso.runs, err, tailLine(stderr.String()))
		return res, 0
	}
	ran, perr := scenarios.ParseStory("child result", out.Ran)
	if perr != nil {
		res.Err = fmt.Errorf("child process (run %d): %w", iso.runs, perr)
		return res, 0
	}
	res.Violations, res.Steps, res.TraceHash = out.Violations, out.Steps, out.TraceHash
	res.Actions, res.Faults, res.Mix = ran.Actions, ran.Faults, *ran.Mix
	res.Channels, res.StreamBacklog = ran.ChannelsPerPeer, ran.StreamBacklog
	if out.Err != "" {
		res.Err = errors.New(out.Err)
	}
	if out.BubbleErr != "" {
		res.BubbleErr = errors.New(out.BubbleErr)
	}
	return res, out.TraceLines
}

// tailLine is s's last non-empty line ("no output" for none).
func tailLine(s string) string {
	s = strings.TrimSpace(s)
	if s == "" {
		return "no output"
	}
	return s[strings.LastIndex(s, "\n")+1:]
}

// replayIsolated plays the shrunk run's story in a child process
// (replay -story, with -trace and -timeline when given) and copies what it
// prints, its summary line (the result it wrote, byte for byte) replaced
// by that result saying shrink; it returns the child's exit code. A run
// that leaves goroutines behind cannot be judged in this process, so its
// banner comes from the child. A child that ends without a result, or
// whose result disagrees with its exit code, is a harness error.
func replayIsolated(iso *isolator, story, trace, timeline string, stdout, stderr io.Writer) int {
	args := []string{"replay", "-story", story}
	if trace != "" {
		args = append(args, "-trace", trace)
	}
	if timeline != "" {
		args = append(args, "-timeline", timeline)
	}
	var out bytes.Buffer
	o := proc.Run(context.Background(), proc.Spec{Path: iso.self, Args: args, Stdout: &out, Stderr: stderr})
	var sum runSummary
	err := o.Decode(&sum)
	if err == nil && sum.Exit != o.Exit {
		err = fmt.Errorf("its result says exit %d, the process exited %d", sum.Exit, o.Exit)
	}
	if err != nil {
		fmt.Fprint(stdout, out.String())
		fmt.Fprintf(stderr, "relaysim shrink: replay the shrunk story: %v\n", err)
		return exitHarness
	}
	result := strings.TrimSpace(string(o.Result))
	for _, l := range strings.SplitAfter(out.String(), "\n") {
		if strings.TrimSuffix(l, "\n") == result {
			sum.Command = "shrink"
			writeSummary(stdout, sum)
			continue
		}
		fmt.Fprint(stdout, l)
	}
	return o.Exit
}
