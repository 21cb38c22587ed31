package realcluster

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/relaysim/relaysim/model"
)

// fault is one planned nemesis step: at At after the load phase began,
// Kind hits node Node (a link: from Node to Peer) for For.
type fault struct {
	At, For time.Duration
	Kind    model.FaultKind
	Node    int
	Peer    int
	Delay   time.Duration // link-delay: added to every chunk
}

func (f fault) String() string {
	s := fmt.Sprintf("t=%v %s", f.At.Round(time.Millisecond), f.Kind)
	switch f.Kind {
	case KindKill, KindPause, KindTerm:
		s += fmt.Sprintf(" n%d", f.Node+1)
	case KindDelay, KindDrop, KindCut:
		s += fmt.Sprintf(" n%d->n%d", f.Node+1, f.Peer+1)
	}
	if f.Kind == KindDelay {
		s += fmt.Sprintf(" +%v", f.Delay)
	}
	return s + fmt.Sprintf(" for %v", f.For.Round(time.Millisecond))
}

// planNemesis draws the nemesis' faults from the seed: cfg.Faults steps
// (forged calls are the workload's, not here), one at a time, each in a
// slot of its own between 10% and 90% of the load phase, so they never
// overlap and the last ends well before the liveness phase. The first
// steps take every enabled kind once (in a seeded order), the rest are
// drawn.
func planNemesis(cfg Config) []fault {
	kinds := slices.DeleteFunc(slices.Clone(cfg.Nemesis), func(k model.FaultKind) bool { return k == KindForged })
	if len(kinds) == 0 || cfg.Faults == 0 {
		return nil
	}
	r := rand.New(rand.NewPCG(cfg.Seed, hashString("nemesis")))
	order := slices.Clone(kinds)
	r.Shuffle(len(order), func(i, j int) { order[i], order[j] = order[j], order[i] })
	start, slot := cfg.Duration/10, cfg.Duration*8/10/time.Duration(cfg.Faults)
	var out []fault
	for i := range cfg.Faults {
		kind := kinds[r.IntN(len(kinds))]
		if i < len(order) {
			kind = order[i]
		}
		// The fault lasts 30-60% of its slot and starts in its first
		// quarter: the rest of the slot is left for restarts to finish.
		f := fault{Kind: kind, Node: r.IntN(cfg.Nodes),
			At:  start + time.Duration(i)*slot + time.Duration(r.Int64N(int64(slot/4)+1)),
			For: slot*3/10 + time.Duration(r.Int64N(int64(slot*3/10)+1))}
		if cfg.Nodes > 1 {
			f.Peer = (f.Node + 1 + r.IntN(cfg.Nodes-1)) % cfg.Nodes
		}
		if kind == KindDelay {
			f.Delay = time.Duration(50+r.IntN(250)) * time.Millisecond
		}
		out = append(out, f)
	}
	return out
}

// runNemesis injects the plan in real time until ctx ends; a fault under
// way when ctx ends is ended at once. Each fault is recorded in model's
// terms with its real span.
func (c *cluster) runNemesis(ctx context.Context, faults []fault, began time.Time) {
	for _, f := range faults {
		if !sleepCtx(ctx, time.Until(began.Add(f.At))) {
			return
		}
		c.inject(ctx, f)
	}
}

// inject applies one fault, waits its span (cut short when ctx ends) and
// undoes it.
func (c *cluster) inject(ctx context.Context, f fault) {
	mf := model.Fault{Kind: f.Kind, From: c.rec.now(), To: -1}
	switch f.Kind {
	case KindKill, KindPause, KindTerm:
		mf.Nodes = []string{c.nodes[f.Node].id}
	case KindDelay, KindDrop, KindCut:
		mf.Nodes = []string{c.nodes[f.Node].id, c.nodes[f.Peer].id}
	case KindRedis:
		mf.Redis = true
	}
	i := c.rec.fault(mf)
	c.logf("nemesis: %s", f)
	var undo func() error
	var err error
	switch f.Kind {
	case KindKill:
		undo, err = c.killNode(f.Node)
	case KindTerm:
		undo, err = c.termNode(f.Node)
	case KindPause:
		undo, err = c.pauseNode(f.Node)
	case KindRedis:
		undo, err = c.killRedis()
	case KindDelay:
		undo = c.setLink(f.Node, f.Peer, linkDelay, f.Delay)
	case KindDrop:
		undo = c.setLink(f.Node, f.Peer, linkDrop, 0)
	case KindCut:
		undo = c.setLink(f.Node, f.Peer, linkCut, 0)
	}
	if err != nil {
		c.harnessErr(fmt.Errorf("nemesis %s: %w", f, err))
	}
	sleepCtx(ctx, f.For)
	if undo != nil {
		if err := undo(); err != nil {
			c.harnessErr(fmt.Errorf("nemesis %s, undoing it: %w", f, err))
		}
	}
	c.rec.endFault(i)
	c.mu.Lock()
	c.injected[f.Kind]++
	c.mu.Unlock()
	c.logf("nemesis: %s ended", f.Kind)
}
