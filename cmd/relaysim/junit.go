package main

import (
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// JUnit XML, the format every CI reads: <testsuites> of <testsuite> of
// <testcase>, a failing case holding a <failure> whose text is the run's
// failure banner, replay command included.

type junitReportXML struct {
	XMLName  xml.Name     `xml:"testsuites"`
	Name     string       `xml:"name,attr,omitempty"`
	Tests    int          `xml:"tests,attr"`
	Failures int          `xml:"failures,attr"`
	Time     string       `xml:"time,attr,omitempty"`
	Suites   []junitSuite `xml:"testsuite"`
}

type junitSuite struct {
	XMLName    xml.Name        `xml:"testsuite"`
	Name       string          `xml:"name,attr"`
	Tests      int             `xml:"tests,attr"`
	Failures   int             `xml:"failures,attr"`
	Time       string          `xml:"time,attr,omitempty"`
	Properties []junitProperty `xml:"properties>property,omitempty"`
	Cases      []junitCase     `xml:"testcase"`
}

type junitProperty struct {
	Name  string `xml:"name,attr"`
	Value string `xml:"value,attr"`
}

type junitCase struct {
	Name      string        `xml:"name,attr"`
	Classname string        `xml:"classname,attr"`
	Time      string        `xml:"time,attr,omitempty"`
	Failure   *junitFailure `xml:"failure,omitempty"`
	SystemOut *junitText    `xml:"system-out,omitempty"`
}

// junitText is element text kept readable (CDATA) rather than escaped
// line by line.
type junitText struct {
	Text string `xml:",cdata"`
}

type junitFailure struct {
	Message string `xml:"message,attr"`
	Type    string `xml:"type,attr"`
	Text    string `xml:",cdata"`
}

// junitClass is every sweep case's classname.
const junitClass = "relaysim.sweep"

// junitSuiteOf is one sweep (or shard of a sweep) as a test suite, a case
// per job in the sweep's order.
func junitSuiteOf(all []*sweepJob, extra []string, seeds string, o sweepOpts) junitSuite {
	s := o.shard
	name := "relaysim sweep -seeds " + seeds
	if s.N > 1 {
		name += " -shard " + s.String()
	}
	suite := junitSuite{Name: name}
	for _, p := range []junitProperty{{"seeds", seeds}, {"shard", s.String()}, {"shard-from", o.from}, {"run-flags", strings.Join(extra, " ")}} {
		if p.Value != "" {
			suite.Properties = append(suite.Properties, p)
		}
	}
	var total time.Duration
	for _, j := range all {
		suite.Cases = append(suite.Cases, junitCaseOf(j, extra))
		total += j.wall
	}
	suite.Time = seconds(total)
	suite.count()
	return suite
}

func junitCaseOf(j *sweepJob, extra []string) junitCase {
	c := junitCase{
		Name:      fmt.Sprintf("seed=%s mode=%s", j.seed, j.label()),
		Classname: junitClass,
		Time:      seconds(j.wall),
		SystemOut: &junitText{"trace-hash: " + j.hash + "\nreplay: " + j.replay(extra) + "\n"},
	}
	if !j.ok {
		kind, msg := j.failure()
		c.Failure = &junitFailure{Message: msg, Type: kind, Text: "replay: " + j.replay(extra) + "\n\n" + bannerOf(j.out)}
	}
	return c
}

// failure names a failed job's first violated property, else its error,
// from its typed summary (its evidence lines); a job without one (it hung
// or crashed) is named from the harness' note or the crash it printed
// (failureOf).
func (j *sweepJob) failure() (kind, msg string) {
	s := j.summary
	if s == nil {
		return failureOf(j.out)
	}
	for _, p := range []struct{ prefix, kind string }{
		{"violated: ", "violation"}, {"error:  ", "error"}, {"bubble: ", "error"},
	} {
		for _, l := range s.Evidence {
			if m, ok := strings.CutPrefix(l, p.prefix); ok {
				return p.kind, shorten(strings.TrimSpace(m), 300)
			}
		}
	}
	if len(s.Violations) > 0 {
		return "violation", s.Violations[0]
	}
	if s.Error != "" {
		return "error", shorten(s.Error, 300)
	}
	return "crash", "the run ended without a result"
}

// failureOf names a job that ended without a typed result: a hang (the
// sweep's own "hung: " note) or a crash, quoting the first line that
// shows it. The job's printed text names no property and no error: a
// "violated:" line without a result is still a crash.
func failureOf(out string) (kind, msg string) {
	lines := strings.Split(out, "\n")
	for _, p := range []struct{ prefix, kind string }{
		{"hung: ", "timeout"}, {"panic: ", "crash"}, {"fatal error: ", "crash"},
	} {
		for _, l := range lines {
			if m, ok := strings.CutPrefix(l, p.prefix); ok {
				return p.kind, shorten(strings.TrimSpace(m), 300)
			}
		}
	}
	return "crash", "the run ended without a result"
}

// bannerOf is the part of a failed job's output a reader needs: every
// failure banner (and equiv's verdict), else the output's last 60 lines.
func bannerOf(out string) string {
	const rule = "=============================================================================="
	var b strings.Builder
	in := false
	for l := range strings.Lines(out) {
		t := strings.TrimRight(l, "\n")
		switch {
		case t == rule:
			b.WriteString(l)
			in = !in
		case in, strings.HasPrefix(t, "mode equivalence FAILED"), strings.HasPrefix(t, "violated: "), strings.HasPrefix(t, "replay:  "):
			b.WriteString(l)
		}
	}
	if b.Len() > 0 {
		return b.String()
	}
	lines := strings.Split(strings.TrimRight(out, "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-60):], "\n") + "\n"
}

func shorten(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}

func seconds(d time.Duration) string { return strconv.FormatFloat(d.Seconds(), 'f', 3, 64) }

// count sets the suite's totals from its cases.
func (s *junitSuite) count() {
	s.Tests, s.Failures = len(s.Cases), 0
	for _, c := range s.Cases {
		if c.Failure != nil {
			s.Failures++
		}
	}
}

// junitReport wraps suites in <testsuites> with the totals.
func junitReport(suites []junitSuite) junitReportXML {
	r := junitReportXML{Name: "relaysim", Suites: suites}
	var total float64
	for i := range suites {
		r.Tests += suites[i].Tests
		r.Failures += suites[i].Failures
		t, _ := strconv.ParseFloat(suites[i].Time, 64)
		total += t
	}
	r.Time = strconv.FormatFloat(total, 'f', 3, 64)
	return r
}

func encodeJUnit(w io.Writer, r junitReportXML) error {
	if _, err := io.WriteString(w, xml.Header); err != nil {
		return err
	}
	enc := xml.NewEncoder(w)
	enc.Indent("", "  ")
	if err := enc.Encode(r); err != nil {
		return err
	}
	_, err := io.WriteString(w, "\n")
	return err
}

func writeJUnit(path string, r junitReportXML) error {
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("junit: %w", err)
	}
	if err := encodeJUnit(f, r); err != nil {
		f.Close()
		return fmt.Errorf("junit %s: %w", path, err)
	}
	return f.Close()
}

// readJUnit reads a JUnit file: <testsuites>, or a lone <testsuite>.
func readJUnit(path string) ([]junitSuite, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var r junitReportXML
	if err := xml.Unmarshal(data, &r); err == nil {
		return r.Suites, nil
	}
	var s junitSuite
	if err := xml.Unmarshal(data, &s); err != nil {
		return nil, fmt.Errorf("%s: not JUnit XML (want <testsuites> or <testsuite>): %w", path, err)
	}
	return []junitSuite{s}, nil
}

// cmdJUnitMerge gathers the JUnit files of a sharded sweep into one:
//
//	relaysim junit-merge -o all.xml junit-*.xml
//
// Suites are kept as they are (one per shard), in the order of the
// arguments; the totals are recounted from the cases. An argument with
// glob characters that names no file is expanded here, so the command
// works without a shell (a distroless container); "-o -" writes the XML
// to stdout (kubectl logs) and nothing else there. Otherwise the last line
// says how many cases failed. Exit 0 whatever failed (the shards carry
// their verdicts), 2 when an input cannot be read or the output written
// (checked before anything is read), 1 when writing it fails midway.
func cmdJUnitMerge(args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("junit-merge")
	out := fs.String("o", "", "write the merged report here, - for stdout (required)")
	if err := parseFlags(fs, args, stdout); err != nil {
		if errors.Is(err, errHelp) {
			return exitOK
		}
		return usageError(stderr, "junit-merge", err)
	}
	files, err := expandGlobs(fs.Args())
	if *out == "" || len(files) == 0 || err != nil {
		if err != nil {
			fmt.Fprintf(stderr, "relaysim junit-merge: %v\n", err)
		}
		fmt.Fprintln(stderr, "usage: relaysim junit-merge -o all.xml|- junit-1.xml junit-2.xml ... (or 'junit-*.xml')")
		return exitUsage
	}
	if err := checkOutputs(output{flag: "o", path: *out}); err != nil {
		return usageError(stderr, "junit-merge", err)
	}
	var suites []junitSuite
	for _, path := range files {
		s, err := readJUnit(path)
		if err != nil { // a missing or malformed input is bad input
			fmt.Fprintf(stderr, "relaysim junit-merge: %v\n", err)
			return exitUsage
		}
		for i := range s {
			s[i].count()
		}
		suites = append(suites, s...)
	}
	r := junitReport(suites)
	if *out == "-" {
		err = encodeJUnit(stdout, r)
	} else {
		err = writeJUnit(*out, r)
	}
	if err != nil {
		fmt.Fprintf(stderr, "relaysim junit-merge: %v\n", err)
		return exitFail
	}
	if *out != "-" {
		fmt.Fprintf(stdout, "junit-merge: %d files, %d suites, %d cases, %d failed -> %s\n", len(files), len(suites), r.Tests, r.Failures, *out)
	}
	return exitOK
}

// expandGlobs expands each argument that has glob characters and is not
// itself a file's name; a pattern that matches nothing is an error.
func expandGlobs(args []string) ([]string, error) {
	var out []string
	for _, a := range args {
		if _, err := os.Stat(a); err == nil || !strings.ContainsAny(a, "*?[") {
			out = append(out, a)
			continue
		}
		m, err := filepath.Glob(a)
		if err != nil {
			return nil, fmt.Errorf("%q: %w", a, err)
		}
		if len(m) == 0 {
			return nil, fmt.Errorf("%q matches no file", a)
		}
		out = append(out, m...)
	}
	return out, nil
}
