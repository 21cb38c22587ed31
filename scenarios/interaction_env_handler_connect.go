package scenarios

import (
	"github.com/relaysim/relaysim/model"
	"github.com/relaysim/relaysim/sim"
)

// handleConnect opens user's delivery stream on a node (closing the one it
// had), sending its cursors, and waits until the stream is open or the
// connect failed. What the node replays from the log follows in the next
// commands' output.
//
// Example:
//
//	connect user=u1 node=n2
func (e *Env) handleConnect(a *args) (string, error) {
	user, node := a.str("user", true), a.node("node", true)
	if a.err != nil {
		return "", nil
	}
	if _, err := e.do(sim.Action{User: user, Kind: sim.ActConnect, Node: node}, model.KindConnect); err != nil {
		return "", err
	}
	return e.news(), nil
}

// handleDisconnect closes user's stream cleanly and waits until it is
// closed.
//
// Example:
//
//	disconnect user=u1
func (e *Env) handleDisconnect(a *args) (string, error) {
	user := a.str("user", true)
	if a.err != nil {
		return "", nil
	}
	if _, err := e.do(sim.Action{User: user, Kind: sim.ActDisconnect}, model.KindDisconnect); err != nil {
		return "", err
	}
	return e.news(), nil
}

// handleVanish makes user's client disappear without closing its stream:
// its connection swallows writes and never answers, so only the node's
// keep-alive can notice (DESIGN §3.3, seed grpc-stream-leaks-and-pools).
//
// Example:
//
//	vanish user=u2
func (e *Env) handleVanish(a *args) (string, error) {
	user := a.str("user", true)
	if a.err != nil {
		return "", nil
	}
	from := len(e.c.History().Events)
	if err := e.c.Vanish(user); err != nil {
		return "", err
	}
	e.await(from, actionLimit, func(ev model.Event) bool { return ev.User == user && ev.Kind == model.KindDisconnect })
	return e.news(), nil
}
