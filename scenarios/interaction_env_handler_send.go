package scenarios

import (
	"fmt"

	"github.com/relaysim/relaysim/model"
	"github.com/relaysim/relaysim/sim"
)

// handleSend sends one message (msg=hello) or a burst of them, all at the
// same instant (msg=(a,b,c)), from user to room, and waits for every
// outcome: an ack with the message's seq, or the error after the client's
// retries. The message id is the text, so sending the same text again is a
// retry the relay must recognise ("(duplicate)"). The fan-out is still
// under way when the acks are in: deliveries follow in the next commands'
// output. node= is the node asked when the user is not connected (default
// n1).
//
// Example:
//
//	send user=u1 room=r1 msg=hello
func (e *Env) handleSend(a *args) (string, error) {
	user, room, node := a.str("user", true), a.str("room", true), a.node("node", false)
	msgs := a.list("msg")
	if len(msgs) == 0 {
		a.fail("missing argument msg=")
	}
	if a.err != nil {
		return "", nil
	}
	from := len(e.c.History().Events)
	for _, m := range msgs {
		e.c.Do(sim.Action{At: e.c.Now(), User: user, Kind: sim.ActSend, Room: room, Node: node, MsgID: m})
	}
	pending := map[string]bool{}
	for _, m := range msgs {
		pending[m] = true
	}
	e.await(from, actionLimit, func(ev model.Event) bool {
		if ev.Kind == model.KindSend && ev.User == user && ev.Room == room {
			delete(pending, ev.MsgID)
		}
		return len(pending) == 0
	})
	if len(pending) > 0 {
		return "", fmt.Errorf("send: %d of %d messages had no outcome within %v of virtual time", len(pending), len(msgs), actionLimit)
	}
	return e.news(), nil
}

// handleSteal makes user send msg, a message id another user already sent
// to room, with user's own credential and payload, as an adversarial but
// authenticated client would (sim.ActSteal), and waits for the outcome. A
// client message id is scoped to its sender (docs/protocol-rules.md): a
// member's steal is its own new message, a non-member's is refused
// FailedPrecondition; a node running legacy=idempotency takes either as
// a duplicate of the first message. node= is the node asked when user is
// not connected (default n1). check judges it (content-integrity).
//
// Example:
//
//	steal user=mallory room=r1 msg=hello node=n2
func (e *Env) handleSteal(a *args) (string, error) {
	user, room, msg, node := a.str("user", true), a.str("room", true), a.str("msg", true), a.node("node", false)
	if a.err != nil {
		return "", nil
	}
	if _, err := e.do(sim.Action{User: user, Kind: sim.ActSteal, Room: room, Node: node, MsgID: msg}, model.KindSend); err != nil {
		return "", fmt.Errorf("steal: %w", err)
	}
	return e.news(), nil
}
