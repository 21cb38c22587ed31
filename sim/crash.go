package sim

import (
	"sort"
	"sync"
	"sync/atomic"

	"github.com/relaysim/relaysim/model"
	"github.com/relaysim/relaysim/system"
)

// incarnationLife is what a node incarnation's hooks know of its life:
// whether it crashed, and which users have a session open on it (the
// streams a crash cuts).
type incarnationLife struct {
	dead     atomic.Bool
	mu       sync.Mutex
	sessions map[string]int // user -> sessions open (a replaced one closes after its successor opens)
}

// observable keeps the incarnation's session count and reports whether
// e may be seen: nothing a crashed incarnation does is.
func (h *nodeHooks) observable(e any) bool {
	l := &h.life
	if l.dead.Load() {
		return false
	}
	if e, ok := e.(system.SessionEvent); ok {
		l.mu.Lock()
		if l.sessions == nil {
			l.sessions = map[string]int{}
		}
		if e.Open {
			l.sessions[e.User]++
		} else if l.sessions[e.User]--; l.sessions[e.User] <= 0 {
			delete(l.sessions, e.User)
		}
		l.mu.Unlock()
	}
	return true
}

// openSessions lists, sorted, the users with a session open on the
// incarnation.
func (l *incarnationLife) openSessions() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := make([]string, 0, len(l.sessions))
	for u := range l.sessions {
		out = append(out, u)
	}
	sort.Strings(out)
	return out
}

// cut stops sn's current incarnation as a crash stops a process. Go cannot
// kill goroutines, so the incarnation is cut off at its gates instead:
// every op it has parked and every gate it reaches later is held by the
// scheduler until teardown, so nothing it has not done yet reaches Redis,
// a peer or a client; its observations are dropped; the connections it
// dialled close and it cannot dial again. The streams of its sessions end
// with it (recorded here, at the crash). system.Node.Kill then runs in a
// goroutine of its own: it waits for workers and loops that are held, so
// it returns only after teardown's PassThrough, and Close joins it.
func (c *Cluster) cut(sn *simNode) {
	h := sn.hooks
	h.life.dead.Store(true)
	c.Sched.Hold(h)
	c.Net.CutFrom(sn.tag)
	for _, u := range h.life.openSessions() {
		line := c.Trace.Event(c.Now(), sn.id, "session.closed %s crash", u)
		c.rec.event(model.Event{Time: c.Now(), Kind: model.KindSessionClosed, User: u, Node: sn.id, TraceLine: line})
	}
	done := make(chan struct{})
	c.kills = append(c.kills, done)
	go func(n *system.Node) {
		defer close(done)
		n.Kill()
	}(sn.n)
}

// joinKills waits for the Kill of every crashed incarnation (teardown,
// after PassThrough released their held ops).
func (c *Cluster) joinKills() {
	for _, k := range c.kills {
		<-k
	}
	c.kills = nil
}
