package system

import (
	"context"
	"fmt"
	"sort"

	"github.com/relaysim/relaysim/system/relaypb"
)

// dispatch fans one sequenced message out to members, one executor task per
// local recipient plus, in single mode, one per remote recipient (a route
// look-up and a RelayMessage each) or, in bulk and stream mode, one per
// destination server after a single MGET of every remote route. With 150
// members spread 50/50/50 that is 150 tasks per message in single mode and
// 52 in bulk or stream. A destination that speaks an older protocol gets
// its relay in the older mode from the same task.
func (n *Node) dispatch(m *relaypb.RelayedMessage, members []string, retry bool) {
	id := fmt.Sprintf("%s#%d", m.Room, m.Seq)
	if retry {
		id = fmt.Sprintf("%s#%d retry%d", m.Room, m.Seq, n.nextRetry())
	}
	ctx := WithMessage(WithLabel(n.ctx, "dispatch "+id), Message{Room: m.Room, Seq: m.Seq, Retry: retry, Sender: m.Sender, ID: m.MsgId})
	mode := n.Mode()
	ev := DispatchEvent{Node: n.cfg.NodeID, Room: m.Room, Seq: m.Seq, Mode: mode, Retry: retry, Members: members}
	var remote []string
	for _, u := range members {
		if s := n.localSession(u); s != nil {
			ev.Local = append(ev.Local, u)
			n.submit(ctx, fmt.Sprintf("deliver %s %s", id, u), func(ctx context.Context) { _ = s.deliver(ctx, delivery(m)) })
			continue
		}
		remote = append(remote, u)
	}
	if mode == ModeSingle {
		for _, u := range remote {
			n.submit(ctx, fmt.Sprintf("relay %s %s", id, u), func(ctx context.Context) { n.relayOne(ctx, u, m) })
		}
		ev.Tasks = len(ev.Local) + len(remote)
	} else {
		ev.Routes = n.bulkRoutes(ctx, remote)
		groups := groupByServer(ev.Routes, n.cfg.NodeID)
		for _, g := range groups {
			n.submit(ctx, fmt.Sprintf("bulk %s ->%s", id, g.server), func(ctx context.Context) { n.relay(ctx, g.server, g.users, m, mode) })
		}
		ev.Tasks = len(ev.Local) + len(groups)
	}
	n.hooks.Observe(ev)
}

// submit runs task on the executor under a context labelled with the task.
func (n *Node) submit(ctx context.Context, label string, task func(context.Context)) {
	ctx = WithLabel(ctx, label)
	n.exec.SubmitContext(ctx, label, func() { task(ctx) })
}

// relayOne is single mode's per-recipient task: look the route up, relay.
func (n *Node) relayOne(ctx context.Context, user string, m *relaypb.RelayedMessage) {
	server, err := n.dir.Route(ctx, user)
	switch {
	case err != nil:
		return
	case server == "":
		n.probe(ProbeFanoutRouteUnknown)
		return // offline: the user catches up from the log
	case server == n.cfg.NodeID:
		n.probe(ProbeFanoutRouteToSelf)
		return // a stale route to us: the user catches up from the log
	}
	n.relay(ctx, server, []string{user}, m, ModeSingle)
}

// bulkRoutes reads every remote member's route with one MGET. A failed
// look-up leaves them unrouted: they catch up from the log.
func (n *Node) bulkRoutes(ctx context.Context, users []string) map[string]string {
	routes, err := n.dir.Routes(ctx, users)
	if err != nil {
		n.probe(ProbeFanoutRoutesFailed)
		routes = make(map[string]string, len(users))
		for _, u := range users {
			routes[u] = ""
		}
	}
	return routes
}

type serverGroup struct {
	server string
	users  []string
}

// groupByServer groups routed users by destination, sorted by server and
// then user — never in map order, which would make relays nondeterministic.
// Routes to self (a stale entry for a user no longer here) and empty routes
// are skipped.
func groupByServer(routes map[string]string, self string) []serverGroup {
	by := map[string][]string{}
	for u, s := range routes {
		if s != "" && s != self {
			by[s] = append(by[s], u)
		}
	}
	out := make([]serverGroup, 0, len(by))
	for s, us := range by {
		sort.Strings(us)
		out = append(out, serverGroup{server: s, users: us})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].server < out[j].server })
	return out
}

// nextRetry numbers the fan-outs of retried sends, so their operation
// labels stay unique (a per-message map would grow without bound).
func (n *Node) nextRetry() uint64 {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.retries++
	return n.retries
}
