package main

import (
	"bufio"
	"fmt"
	"os"
	"runtime"
	"runtime/pprof"
	"strconv"
	"strings"

	"github.com/relaysim/relaysim/sim"
)

// startProfiles starts a CPU profile (cpu != "") and arranges a heap
// profile (heap != "") to be written when the run ends, before the checks;
// the returned stop ends the CPU profile.
func startProfiles(cpu, heap string, cfg *sim.Config) (stop func(), err error) {
	stop = func() {}
	if heap != "" {
		cfg.OnEnd = func() {
			f, err := os.Create(heap)
			if err != nil {
				fmt.Fprintf(os.Stderr, "relaysim: heap profile: %v\n", err)
				return
			}
			defer f.Close()
			runtime.GC()
			if err := pprof.Lookup("heap").WriteTo(f, 0); err != nil {
				fmt.Fprintf(os.Stderr, "relaysim: heap profile: %v\n", err)
			}
		}
	}
	if cpu == "" {
		return stop, nil
	}
	f, err := os.Create(cpu)
	if err != nil {
		return stop, fmt.Errorf("cpu profile: %w", err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return stop, fmt.Errorf("cpu profile: %w", err)
	}
	return func() { pprof.StopCPUProfile(); f.Close() }, nil
}

// peakRSS is the process's peak resident set (VmHWM) so far, "" where
// /proc is not there. It depends on the machine, like the wall time, and
// is printed beside it, never in the trace.
func peakRSS() string {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		return ""
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "VmHWM:"); ok {
			kb, err := strconv.Atoi(strings.TrimSuffix(strings.TrimSpace(v), " kB"))
			if err != nil {
				return ""
			}
			return fmt.Sprintf("%d MB", kb>>10)
		}
	}
	return ""
}
