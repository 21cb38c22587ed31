package scenarios

import (
	"github.com/relaysim/relaysim/model"
	"github.com/relaysim/relaysim/sim"
)

// handleJoin makes user a member of room (creating the room first when the
// file names it for the first time) and waits for the ack: the output says
// from which seq the user receives the room. node= is the node asked when
// the user is not connected (default n1).
//
// Example:
//
//	join user=u1 room=r1
func (e *Env) handleJoin(a *args) (string, error) {
	user, room, node := a.str("user", true), a.str("room", true), a.node("node", false)
	if a.err != nil {
		return "", nil
	}
	if !e.rooms[room] {
		e.rooms[room] = true
		if _, err := e.do(sim.Action{User: user, Kind: sim.ActCreate, Room: room, Node: node}, model.KindCreateRoom); err != nil {
			return "", err
		}
	}
	if _, err := e.do(sim.Action{User: user, Kind: sim.ActJoin, Room: room, Node: node}, model.KindJoin); err != nil {
		return "", err
	}
	return e.news(), nil
}

// handleLeave ends user's membership of room and waits for the ack: the
// output says up to which seq the user receives the room.
//
// Example:
//
//	leave user=u1 room=r1
func (e *Env) handleLeave(a *args) (string, error) {
	user, room, node := a.str("user", true), a.str("room", true), a.node("node", false)
	if a.err != nil {
		return "", nil
	}
	if _, err := e.do(sim.Action{User: user, Kind: sim.ActLeave, Room: room, Node: node}, model.KindLeave); err != nil {
		return "", err
	}
	return e.news(), nil
}
