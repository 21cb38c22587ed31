package sim

import (
	"fmt"
	"sort"
	"time"

	"github.com/relaysim/relaysim/model"
)

// A steal fault is an adversarial but authenticated client: a user sends,
// with its own valid credential and its own payload, a client message id
// another user already sent in a room, either in a room it is a member of
// or in one it is not. A client message id is scoped to its sender
// (docs/protocol-rules.md): a member's steal is its own new message,
// sequenced and delivered with the stealer as sender; a non-member's is
// refused FailedPrecondition and changes nothing. It is a real send by
// the stealer (model.Event.Steal marks it), judged by every checker of
// real sends: no-loss, exactly-once, content-integrity.

// stealPayload is the payload a steal sends: the stealer's own (its
// digest of the stealer's name tells it from the victim's and from other
// stealers'). Short, whatever the names: a payload over the answering
// node's MaxPayload (a mixed cluster's are as small as 64 bytes) would be
// refused InvalidArgument for its size, not judged as a steal.
func stealPayload(user, msgID string) []byte {
	return fmt.Appendf(nil, "steal:%08x:%s", uint32(model.PayloadDigest([]byte(user))), msgID)
}

// PlanSteals places n steals inside [start, end), drawn from a sub-seed of
// their own ("steal"), so that they move no other fault kind's plan. Each
// picks a workload send (the victim's message id and room) invoked before
// it, then a stealer other than the victim that the workload has joined
// to the room at that time (a member's steal) or not (a non-member's),
// each half the time when both exist.
func PlanSteals(seed Seed, n int, actions []Action, nodes int, start, end time.Duration) []Fault {
	if end <= start || nodes <= 0 {
		return nil
	}
	var sends []Action
	for _, a := range actions {
		if a.Kind == ActSend && a.At >= start && a.At < end-time.Millisecond {
			sends = append(sends, a)
		}
	}
	users := usersOf(actions)
	if len(sends) == 0 || len(users) < 2 {
		return nil
	}
	r := seed.Derive(string(model.FaultSteal)).Rand()
	var fs []Fault
	for range n {
		v := sends[r.IntN(len(sends))]
		at := v.At + time.Millisecond + time.Duration(r.Int64N(int64(end-v.At-time.Millisecond))).Truncate(time.Millisecond)
		wantMember := r.IntN(2) == 0
		var members, others []string
		for _, u := range users {
			if u == v.User {
				continue
			}
			if plannedMember(actions, u, v.Room, at) {
				members = append(members, u)
			} else {
				others = append(others, u)
			}
		}
		pool := others
		if (wantMember && len(members) > 0) || len(others) == 0 {
			pool = members
		}
		by := pool[r.IntN(len(pool))]
		s := Steal{Room: v.Room, Victim: v.User, MsgID: v.MsgID, Member: plannedMember(actions, by, v.Room, at), Node: r.IntN(nodes)}
		fs = append(fs, Fault{At: at, Kind: model.FaultSteal, User: by, Steal: s})
	}
	sort.SliceStable(fs, func(i, j int) bool { return fs[i].At < fs[j].At })
	return fs
}

// plannedMember reports whether the workload's last join or leave of room
// by user before at (in the order of actions) is a join.
func plannedMember(actions []Action, user, room string, at time.Duration) bool {
	in := false
	for _, a := range actions {
		if a.At < at && a.User == user && a.Room == room {
			switch a.Kind {
			case ActJoin:
				in = true
			case ActLeave:
				in = false
			}
		}
	}
	return in
}

// countSteal adds a steal's outcome to the run's coverage.
func (c *Cluster) countSteal(ev model.Event) {
	c.coverage.stole(ev)
}
