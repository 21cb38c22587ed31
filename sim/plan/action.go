// Actions: the data type of what a simulated user does (ActionKind,
// Action) and its pure helpers — its trace text, payload and the user a
// call names. The client that performs them is in sim/client.go.

package plan

import (
	"fmt"
	"strconv"
	"time"
)

// ActionKind names a client action.
type ActionKind string

// Client actions.
const (
	ActCreate     ActionKind = "create"     // create Room
	ActJoin       ActionKind = "join"       // join Room
	ActLeave      ActionKind = "leave"      // leave Room
	ActConnect    ActionKind = "connect"    // open the delivery stream on Node (closing any other)
	ActDisconnect ActionKind = "disconnect" // close the stream cleanly
	ActVanish     ActionKind = "vanish"     // stop reading without closing the stream
	ActSend       ActionKind = "send"       // send MsgID to Room
	ActSlow       ActionKind = "slow"       // read deliveries slowly for For
	ActStall      ActionKind = "stall"      // stop reading deliveries (connection up) for For; 0: until the liveness phase
	// Forged calls (sim/forge.go), naming As with a forged credential of shape
	// Token: send MsgID to Room, join or leave Room, create Room, open a
	// delivery stream; relay MsgID of Room to As on Node as a node would,
	// one at a time, in bulk or on a relay stream.
	ActForgeSend        ActionKind = "forge-send"
	ActForgeJoin        ActionKind = "forge-join"
	ActForgeLeave       ActionKind = "forge-leave"
	ActForgeCreate      ActionKind = "forge-create-room"
	ActForgeConnect     ActionKind = "forge-connect"
	ActForgeRelay       ActionKind = "forge-relay"
	ActForgeRelayBulk   ActionKind = "forge-relay-bulk"
	ActForgeRelayStream ActionKind = "forge-relay-stream"
	// ActSteal sends MsgID, another user's message id, to Room with the
	// client's own credential and payload (sim/steal.go).
	ActSteal ActionKind = "steal"
	// Malformed-name calls (sim/names.go): create or join Room, or send MsgID
	// to Room, where Room is malformed; join Room as As, or connect as
	// As, where As is malformed; or send a malformed MsgID to Room.
	ActBadCreate  ActionKind = "bad-create"
	ActBadJoin    ActionKind = "bad-join"
	ActBadJoinAs  ActionKind = "bad-join-as"
	ActBadSend    ActionKind = "bad-send"
	ActBadSendID  ActionKind = "bad-send-id"
	ActBadConnect ActionKind = "bad-connect"
)

// Bad reports whether k is a malformed-name call.
func (k ActionKind) Bad() bool {
	switch k {
	case ActBadCreate, ActBadJoin, ActBadJoinAs, ActBadSend, ActBadSendID, ActBadConnect:
		return true
	}
	return false
}

// Action is one thing a simulated user does at virtual time At.
type Action struct {
	At    time.Duration
	User  string
	Kind  ActionKind
	Room  string
	Node  int
	MsgID string
	For   time.Duration
	// Size pads a send's payload ("m:"+MsgID) to Size bytes (0: unpadded).
	Size int
	// As and Token: a forged call's named user and credential form.
	As, Token string
}

// Payload is a send's payload: "m:"+MsgID, padded with '.' to Size bytes.
func (a Action) Payload() []byte {
	p := []byte("m:" + a.MsgID)
	for len(p) < a.Size {
		p = append(p, '.')
	}
	return p
}

func (a Action) String() string {
	s := fmt.Sprintf("%s %s", a.User, a.Kind)
	switch a.Kind {
	case ActCreate, ActJoin, ActLeave:
		s += " " + a.Room
	case ActConnect:
		s += fmt.Sprintf(" n%d", a.Node+1)
	case ActSend, ActSteal:
		s += " " + a.Room + " " + a.MsgID
		if a.Size > 0 {
			s += fmt.Sprintf(" size=%d", a.Size)
		}
	case ActSlow, ActStall:
		s += " " + a.For.String()
	case ActForgeSend, ActForgeJoin, ActForgeLeave, ActForgeCreate, ActForgeConnect, ActForgeRelay, ActForgeRelayBulk, ActForgeRelayStream:
		if a.Room != "" {
			s += " " + a.Room
		}
		if a.MsgID != "" {
			s += " " + a.MsgID
		}
		s += " as " + a.As + " token=" + a.Token
	case ActBadCreate, ActBadJoin, ActBadJoinAs, ActBadSend, ActBadSendID:
		s += " " + strconv.Quote(a.Room)
		if a.MsgID != "" {
			s += " " + strconv.Quote(a.MsgID)
		}
		if a.As != "" {
			s += " as " + strconv.Quote(a.As)
		}
	case ActBadConnect:
		s += fmt.Sprintf(" n%d as %s", a.Node+1, strconv.Quote(a.As))
	}
	return s
}

// Named is the user a call's request names: a forged call's As (or a
// malformed-name call's, even empty), else the client's own user.
func (a Action) Named(user string) string {
	if a.As != "" || a.Kind == ActBadJoinAs || a.Kind == ActBadConnect {
		return a.As
	}
	return user
}

// RelayForgery reports whether k is a forged call of a Relay method.
func (k ActionKind) RelayForgery() bool {
	return k == ActForgeRelay || k == ActForgeRelayBulk || k == ActForgeRelayStream
}
