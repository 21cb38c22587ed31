package main

import (
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"sync"
)

// probeFile counts the code probes this node hits (system.Deps.Probes)
// and, at exit, adds them to the JSON object {name: hits} in its file
// (-probes): the incarnations of one node that share the file sum up. A
// process killed with SIGKILL writes nothing.
type probeFile struct {
	path string
	mu   sync.Mutex
	hits map[string]int
}

// Hit implements system.Prober.
func (p *probeFile) Hit(_, name string) {
	p.mu.Lock()
	p.hits[name]++
	p.mu.Unlock()
}

// write adds the hits to the file's.
func (p *probeFile) write() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	all := map[string]int{}
	data, err := os.ReadFile(p.path)
	switch {
	case err == nil:
		if err := json.Unmarshal(data, &all); err != nil {
			return err
		}
	case !errors.Is(err, fs.ErrNotExist):
		return err
	}
	for name, n := range p.hits {
		all[name] += n
	}
	out, err := json.Marshal(all) // sorted keys
	if err != nil {
		return err
	}
	tmp := p.path + ".tmp"
	if err := os.WriteFile(tmp, append(out, '\n'), 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, p.path)
}
