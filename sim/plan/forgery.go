// The data of a forge fault's call (Forgery) and of a steal fault's send
// (Steal): sim/forge.go and sim/steal.go plan and make them.

package plan

import (
	"fmt"
	"time"
)

// Forgery is one forged call.
type Forgery struct {
	Call  string // one of sim.ForgeCalls
	Room  string // the room it names (connect: none)
	As    string // the user the request names (a relay's recipient)
	Token string // the credential's shape (a system.CredShape's name)
	MsgID string // a send's client message id, a relay's message id
	Node  int    // the node a relay call is made to, when the named user has no stream
}

func (f Forgery) String() string {
	call := f.Call
	if f.Room != "" {
		call += " " + f.Room
	}
	if f.MsgID != "" {
		call += " " + f.MsgID
	}
	return fmt.Sprintf("%s as %s token=%s", call, f.As, f.Token)
}

// Steal is one steal: User's client sends Victim's MsgID to Room.
type Steal struct {
	Room, Victim, MsgID string
	// Member says whether the workload planned the stealer to be a member
	// of Room at the steal (the oracle judges by the acks, not by this).
	Member bool
	Node   int
}

func (s Steal) String() string {
	m := "non-member"
	if s.Member {
		m = "member"
	}
	return fmt.Sprintf("%s %s of %s (%s)", s.Room, s.MsgID, s.Victim, m)
}

// Action is the client action that makes the steal.
func (s Steal) Action(at time.Duration, by string) Action {
	return Action{At: at, User: by, Kind: ActSteal, Room: s.Room, MsgID: s.MsgID, Node: s.Node}
}
