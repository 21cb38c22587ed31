package model

import "fmt"

// CheckWorkers checks executor growth at every sample (pool and peak never
// above max; back at core once idle; cluster goroutines within
// h.GoroutineBound) and the task count of every first dispatch against the
// formula of DESIGN 2.2. Retried dispatches are counted apart, not judged.
func CheckWorkers(h *History) []Violation {
	var out []Violation
	for _, s := range h.Samples {
		out = append(out, samplePool(s, h.GoroutineBound)...)
	}
	for _, d := range h.Dispatches {
		if d.Retry {
			continue
		}
		if v, bad := judgeDispatch(d, h.Mode); bad {
			out = append(out, v)
		}
	}
	return out
}

func samplePool(s Sample, bound func(Sample) int) []Violation {
	var out []Violation
	add := func(format string, args ...any) {
		out = append(out, Violation{
			Property: PropWorkers, Node: s.Node,
			Detail: fmt.Sprintf("at t=%v: ", s.Time) + fmt.Sprintf(format, args...),
		})
	}
	if s.Pool > s.Max {
		add("pool size %d exceeds max %d", s.Pool, s.Max)
	}
	if s.Peak > s.Max {
		add("peak pool size %d exceeds max %d", s.Peak, s.Max)
	}
	if s.Idle && s.Pool > s.Core {
		add("pool size %d after idle keep-alive, above core %d", s.Pool, s.Core)
	}
	if bound != nil && s.Goroutines > 0 {
		if b := bound(s); s.Goroutines > b {
			add("%d goroutines exceed the bound %d (%d connections, pool max %d)",
				s.Goroutines, b, s.Connections, s.Max)
		}
	}
	return out
}

// ExpectedTasks returns the executor tasks a first dispatch must submit
// (DESIGN 2.2) and how they break down: single mode, one per member; bulk
// mode, one per local member plus one per distinct remote server. Routes
// holds only non-local members, so an empty route (no entry: the member
// catches up from the log) and a stale route naming the dispatching node
// itself add no task. ok is false for an unknown mode.
func ExpectedTasks(d Dispatch, mode string) (n int, why string, ok bool) {
	switch mode {
	case "single":
		return len(d.Members), fmt.Sprintf("%d members", len(d.Members)), true
	case "bulk":
		servers := map[string]bool{}
		for _, srv := range d.Routes {
			if srv != "" && srv != d.Node {
				servers[srv] = true
			}
		}
		n := len(d.Local) + len(servers)
		return n, fmt.Sprintf("%d local + %d remote servers", len(d.Local), len(servers)), true
	}
	return 0, "", false
}

// judgeDispatch compares a first dispatch's tasks with ExpectedTasks. The
// dispatch's own mode wins over the run's, so that mixed clusters (rolling
// upgrade) are judged node by node.
func judgeDispatch(d Dispatch, runMode string) (Violation, bool) {
	mode := d.Mode
	if mode == "" {
		mode = runMode
	}
	v := Violation{Property: PropWorkers, Room: d.Room, Node: d.Node, Seq: d.Seq, TraceLines: lines(d.TraceLine)}
	want, why, ok := ExpectedTasks(d, mode)
	switch {
	case !ok:
		v.Detail = fmt.Sprintf("dispatch has unknown mode %q", mode)
	case d.Tasks != want:
		v.Detail = fmt.Sprintf("%s dispatch submitted %d tasks, expected %d (%s)", mode, d.Tasks, want, why)
	default:
		return Violation{}, false
	}
	return v, true
}
