package dst

import (
	"errors"
	"flag"
	"io"
	"os"
	"reflect"
	"regexp"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

// This file is the one place that drives testing.MainStart. synctest gives
// bubbles only to tests, so a plain binary (cmd/relaysim) runs each
// simulation as the single test of an in-process testing.M. MainStart and
// its testDeps interface are exported for `go test`'s generated main and
// are outside the Go 1 compatibility promise: a new Go release may change
// the interface, and when it does, runnerDeps below is all that has to
// follow (the build fails here, nowhere else).

var bubbleMu sync.Mutex // the testing runner is process-global

// bubbleOutsideTest runs f as the single test of an in-process testing.M.
// The runner prints PASS/FAIL on stdout; that output is discarded so the
// caller's output stays its own.
func bubbleOutsideTest(f func(t *testing.T)) error {
	bubbleMu.Lock()
	defer bubbleMu.Unlock()
	if !flag.Parsed() {
		testing.Init()
		_ = flag.CommandLine.Parse(nil)
	}
	var failed bool
	tests := []testing.InternalTest{{Name: "Bubble", F: func(t *testing.T) {
		synctest.Test(t, f)
		failed = t.Failed()
	}}}
	stdout := os.Stdout
	devnull, err := os.OpenFile(os.DevNull, os.O_WRONLY, 0)
	if err == nil {
		os.Stdout = devnull
		defer func() { os.Stdout = stdout; devnull.Close() }()
	}
	m := testing.MainStart(runnerDeps{}, tests, nil, nil, nil)
	if code := m.Run(); code != 0 || failed {
		return errors.New("simulation bubble failed (see the log above)")
	}
	return nil
}

// runnerDeps is the minimum testing.MainStart needs to run plain tests.
type runnerDeps struct{}

type corpusEntry = struct {
	Parent     string
	Path       string
	Data       []byte
	Values     []any
	Generation int
	IsSeed     bool
}

func (runnerDeps) ImportPath() string { return "relaysim" }
func (runnerDeps) ModulePath() string { return "github.com/relaysim/relaysim" }
func (runnerDeps) MatchString(pat, str string) (bool, error) {
	return regexp.MatchString(pat, str)
}
func (runnerDeps) SetPanicOnExit0(bool)                        {}
func (runnerDeps) StartCPUProfile(io.Writer) error             { return nil }
func (runnerDeps) StopCPUProfile()                             {}
func (runnerDeps) StartTestLog(io.Writer)                      {}
func (runnerDeps) StopTestLog() error                          { return nil }
func (runnerDeps) WriteProfileTo(string, io.Writer, int) error { return nil }
func (runnerDeps) CoordinateFuzzing(time.Duration, int64, time.Duration, int64, int, []corpusEntry, []reflect.Type, string, string) error {
	return errors.New("fuzzing is not supported here")
}
func (runnerDeps) RunFuzzWorker(func(corpusEntry) error) error { return errors.New("no fuzzing") }
func (runnerDeps) ReadCorpus(string, []reflect.Type) ([]corpusEntry, error) {
	return nil, nil
}
func (runnerDeps) CheckCorpus([]any, []reflect.Type) error { return nil }
func (runnerDeps) ResetCoverage()                          {}
func (runnerDeps) SnapshotCoverage()                       {}
func (runnerDeps) InitRuntimeCoverage() (string, func(string, string) (string, error), func() float64) {
	return "", nil, nil
}
