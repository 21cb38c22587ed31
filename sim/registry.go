package sim

import (
	"strconv"
	"strings"
	"sync"

	"github.com/redis/go-redis/v9"

	"github.com/relaysim/relaysim/model"
)

// registryWatch records, for newest-registration-kept
// (model.CheckRegistry), every command an incarnation ran on its node's
// registry entry while the entry named a newer epoch than its own: the
// entry's epoch read from Redis itself (miniredis) just before and just
// after the command. An incarnation's own epoch is what Redis answered
// its INCR of the node's epoch counter, seen at its gate: nothing is
// taken on the relay's word.
type registryWatch struct {
	mu     sync.Mutex
	writes []model.RegistryWrite
}

// registryKey returns node's registry key if cmds name it.
func registryKey(node string, cmds []redis.Cmder) (string, bool) {
	key := "node:" + node
	for _, cmd := range cmds {
		for _, a := range cmd.Args()[min(1, len(cmd.Args())):] {
			if s, ok := a.(string); ok && s == key {
				return key, true
			}
		}
	}
	return "", false
}

// entryEpoch is the epoch node's registry entry names now (0: none).
func (c *Cluster) entryEpoch(key string) uint64 {
	e, _ := strconv.ParseUint(c.Redis.HGet(key, "epoch"), 10, 64)
	return e
}

// watchRegistry runs the commands through run, watching the incarnation's
// epoch counter and its registry entry.
func (h *nodeHooks) watchRegistry(cmds []redis.Cmder, run func() error) error {
	key, ok := registryKey(h.node, cmds)
	if !ok {
		err := run()
		for _, cmd := range cmds {
			if ic, isInt := cmd.(*redis.IntCmd); isInt && strings.EqualFold(cmd.Name(), "incr") && ic.Err() == nil &&
				len(cmd.Args()) > 1 && cmd.Args()[1] == "node:"+h.node+":epoch" {
				h.epoch.Store(uint64(ic.Val()))
			}
		}
		return err
	}
	before := h.c.entryEpoch(key)
	err := run()
	if mine := h.epoch.Load(); mine > 0 && before > mine {
		after := h.c.entryEpoch(key)
		h.c.registry.mu.Lock()
		h.c.registry.writes = append(h.c.registry.writes, model.RegistryWrite{At: h.c.Now(), Node: h.node, Writer: mine, Before: before, After: after,
			Command: cmds[len(cmds)/2].Name()})
		h.c.registry.mu.Unlock()
	}
	return err
}

// records returns the watched commands, in the order they ran.
func (r *registryWatch) records() []model.RegistryWrite {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]model.RegistryWrite(nil), r.writes...)
}
