package sim

import (
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/relaysim/relaysim/model"
)

// logReadCounter counts each node's reads of room logs at its Redis gate,
// for bounded-replay-memory (model.CheckReplayMemory): the size of every
// LRANGE reply on a room log (entries and bytes), the largest kept. The
// bound is the node's configuration as the harness started it.
type logReadCounter struct {
	mu    sync.Mutex
	pages map[string]int
	nodes map[string]*model.LogReads
}

// configured records node's replay page (at each start of an incarnation).
func (l *logReadCounter) configured(node string, page int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.pages == nil {
		l.pages = map[string]int{}
	}
	l.pages[node] = page
	if r := l.nodes[node]; r != nil {
		r.Page = page
	}
}

// observe counts cmd, a command node ran, if it read a room log.
func (l *logReadCounter) observe(node string, cmd redis.Cmder, now time.Duration) {
	if !strings.EqualFold(cmd.Name(), "lrange") {
		return
	}
	args := cmd.Args()
	if len(args) < 2 {
		return
	}
	key, _ := args[1].(string)
	if !strings.HasPrefix(key, "room:") || !strings.HasSuffix(key, ":log") {
		return
	}
	sc, ok := cmd.(*redis.StringSliceCmd)
	if !ok || sc.Err() != nil {
		return
	}
	vals := sc.Val()
	size := 0
	for _, v := range vals {
		size += len(v)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.nodes == nil {
		l.nodes = map[string]*model.LogReads{}
	}
	r := l.nodes[node]
	if r == nil {
		r = &model.LogReads{Node: node, Page: l.pages[node]}
		l.nodes[node] = r
	}
	r.Reads++
	if len(vals) > r.MaxEntries {
		r.MaxEntries, r.MaxBytes, r.At = len(vals), size, now
		r.Room = strings.TrimSuffix(strings.TrimPrefix(key, "room:"), ":log")
	}
}

// records returns each node's counts, by node.
func (l *logReadCounter) records() []model.LogReads {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := make([]model.LogReads, 0, len(l.nodes))
	for _, r := range l.nodes {
		out = append(out, *r)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Node < out[j].Node })
	return out
}
