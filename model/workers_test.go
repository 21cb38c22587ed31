package model

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// seedsBulk is the seeds' bulk dispatch on n1: 150 members, 50 local, the
// rest routed to n2 and n3, a few without a route and one stale route naming
// n1 itself.
func seedsBulk(tasks int) Dispatch {
	members := names("u", 150)
	routes := map[string]string{}
	for i, u := range members[50:] {
		routes[u] = []string{"n2", "n3"}[i%2]
	}
	routes["u51"], routes["u52"], routes["u53"] = "", "", "n1"
	return Dispatch{
		Node: "n1", Room: "r1", Seq: 7, Mode: "bulk", Members: members, Local: members[:50],
		Routes: routes, Tasks: tasks, TraceLine: 42,
	}
}

func seedsSingle(tasks int) Dispatch {
	d := seedsBulk(tasks)
	d.Mode = "single"
	return d
}

func TestExpectedTasks(t *testing.T) {
	n, why, ok := ExpectedTasks(seedsBulk(0), "bulk")
	require.True(t, ok)
	assert.Equal(t, 52, n)
	assert.Equal(t, "50 local + 2 remote servers", why)
	n, _, ok = ExpectedTasks(seedsSingle(0), "single")
	require.True(t, ok)
	assert.Equal(t, 150, n)
	_, _, ok = ExpectedTasks(seedsBulk(0), "carrier-pigeon")
	assert.False(t, ok)
}

func TestCheckWorkers(t *testing.T) {
	ok := Sample{Node: "n1", Core: 30, Max: 200, Pool: 120, Peak: 200, Goroutines: 90, Connections: 10}
	idle := ok
	idle.Idle, idle.Pool = true, 30
	over := ok
	over.Pool = 201
	peak := ok
	peak.Peak = 250
	idleHigh := idle
	idleHigh.Pool = 31
	goroutines := ok
	goroutines.Goroutines = 500
	retry := seedsBulk(60)
	retry.Retry = true
	inherit := seedsSingle(150)
	inherit.Mode = ""
	unknown := seedsBulk(52)
	unknown.Mode = "carrier-pigeon"
	tests := []struct {
		name       string
		samples    []Sample
		dispatches []Dispatch
		want       []Violation
	}{
		{"within bounds", []Sample{ok, idle}, []Dispatch{seedsBulk(52), seedsSingle(150), retry}, nil},
		{"dispatch mode defaults to the run's", nil, []Dispatch{inherit}, nil},
		{"pool over max", []Sample{over}, nil, []Violation{{Property: PropWorkers, Node: "n1"}}},
		{"peak over max", []Sample{peak}, nil, []Violation{{Property: PropWorkers, Node: "n1"}}},
		{"idle pool above core", []Sample{idleHigh}, nil, []Violation{{Property: PropWorkers, Node: "n1"}}},
		{"goroutines over bound", []Sample{goroutines}, nil, []Violation{{Property: PropWorkers, Node: "n1"}}},
		{"bulk dispatch with a task per recipient", nil, []Dispatch{seedsBulk(150)},
			[]Violation{{Property: PropWorkers, Room: "r1", Node: "n1", Seq: 7, TraceLines: []int{42}}}},
		{"single dispatch grouped", nil, []Dispatch{seedsSingle(52)},
			[]Violation{{Property: PropWorkers, Room: "r1", Node: "n1", Seq: 7, TraceLines: []int{42}}}},
		{"unknown mode", nil, []Dispatch{unknown},
			[]Violation{{Property: PropWorkers, Room: "r1", Node: "n1", Seq: 7, TraceLines: []int{42}}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := &History{
				Mode: "single", Samples: tt.samples, Dispatches: tt.dispatches,
				GoroutineBound: func(s Sample) int { return 10*s.Connections + s.Max },
			}
			assertViolations(t, tt.want, CheckWorkers(h))
		})
	}
}

func TestCheckWorkersDetails(t *testing.T) {
	s := Sample{Node: "n2", Core: 30, Max: 200, Pool: 40, Peak: 40, Idle: true, Goroutines: 999}
	h := &History{Samples: []Sample{s}, Dispatches: []Dispatch{seedsBulk(53)}}
	got := CheckWorkers(h)
	require.Len(t, got, 2, "without GoroutineBound goroutines are not judged")
	assert.Equal(t, "bounded-worker-growth: node n2: at t=0s: pool size 40 after idle keep-alive, above core 30", got[0].String())
	assert.Equal(t, "bounded-worker-growth: room r1 node n1 seq 7: bulk dispatch submitted 53 tasks, expected 52 (50 local + 2 remote servers) (trace line 42)", got[1].String())
}
