package sim

import (
	"fmt"
	"slices"
	"sort"
	"time"

	"github.com/relaysim/relaysim/model"
	"github.com/relaysim/relaysim/system"
)

// A forge fault is a client call made with a forged user credential: a
// user's client sends to, or joins, a room naming another user, carrying
// its own (valid) credential, garbage, or the other user's credential
// under a guessed secret. The relay must answer Unauthenticated and change
// nothing (model.CheckForgedRejected); the call is recorded as a forged
// event, which no checker of real calls counts.

// Forgery is one forged call.
type Forgery struct {
	Call  string // "send" or "join"
	Room  string
	As    string // the user the request names
	Token string // the credential's form: other-user, garbage or wrong-secret
	MsgID string // a send's client message id
}

func (f Forgery) String() string {
	call := f.Call + " " + f.Room
	if f.MsgID != "" {
		call += " " + f.MsgID
	}
	return fmt.Sprintf("%s as %s token=%s", call, f.As, f.Token)
}

var forgeryForms = []string{"other-user", "garbage", "wrong-secret"}

// PlanForgeries places n forged calls inside [start, end), drawn from a
// sub-seed of their own ("forge"), so that they move no other fault kind's
// plan.
func PlanForgeries(seed Seed, n int, users, rooms []string, start, end time.Duration) []Fault {
	span := end - start
	if span <= 0 || len(users) == 0 || len(rooms) == 0 {
		return nil
	}
	r := seed.Derive(string(model.FaultForge)).Rand()
	var fs []Fault
	for i := range n {
		at := start + time.Duration(r.Int64N(int64(span))).Truncate(time.Millisecond)
		by, as := r.IntN(len(users)), 0
		if len(users) > 1 {
			as = (by + 1 + r.IntN(len(users)-1)) % len(users)
		}
		f := Forgery{Call: []string{"send", "join"}[r.IntN(2)], Room: rooms[r.IntN(len(rooms))], As: users[as],
			Token: forgeryForms[r.IntN(len(forgeryForms))]}
		if as == by && f.Token == "other-user" {
			f.Token = "garbage" // alone in the run: its own credential would be valid
		}
		if f.Call == "send" {
			f.MsgID = fmt.Sprintf("forged%d", i+1)
		}
		fs = append(fs, Fault{At: at, Kind: model.FaultForge, User: users[by], Forge: f})
	}
	return fs
}

// withForgeries adds forged calls to a fault plan, in time order; faults
// at the same instant keep their order, forgeries after the others.
func withForgeries(plan, forged []Fault) []Fault {
	out := append(plan, forged...)
	sort.SliceStable(out, func(i, j int) bool { return out[i].At < out[j].At })
	return out
}

// action is the client action that makes the forged call.
func (f Forgery) action(at time.Duration, by string) Action {
	kind := ActForgeSend
	if f.Call == "join" {
		kind = ActForgeJoin
	}
	return Action{At: at, User: by, Kind: kind, Room: f.Room, MsgID: f.MsgID, As: f.As, Token: f.Token}
}

// credential is the user credential a's call carries: the client's own,
// or a forged one.
func (cl *Client) credential(a Action) string {
	switch a.Token {
	case "":
		return cl.token
	case "other-user":
		return cl.token // valid, but for cl.user, not for a.As
	case "wrong-secret":
		return system.UserToken("guessed-secret", a.As)
	}
	return "not-a-credential"
}

// doNow queues a ahead of its user's actions due later: an injected call
// is made when it is injected, not after the user's whole workload.
func (c *Cluster) doNow(a Action) {
	cl := c.users[a.User]
	if cl == nil {
		cl = c.newClient(a.User)
	}
	cl.mu.Lock()
	i := 0
	for i < len(cl.inbox) && cl.inbox[i].At <= a.At {
		i++
	}
	cl.inbox = slices.Insert(cl.inbox, i, a)
	cl.mu.Unlock()
	select {
	case cl.wake <- struct{}{}:
	default:
	}
}

// roomsOf lists the rooms a workload's actions name, sorted.
func roomsOf(as []Action) []string {
	seen := map[string]bool{}
	var out []string
	for _, a := range as {
		if a.Room != "" && !seen[a.Room] && !a.Kind.bad() {
			seen[a.Room] = true
			out = append(out, a.Room)
		}
	}
	return sortedCopy(out)
}
