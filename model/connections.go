package model

import "time"

// span is one delivery stream of a user as the client saw it: opened on
// node (connect completed) and ended, or still open. It ends when the
// client began to close it (a disconnect's invocation: from then on the
// node may have let the session go), when it vanished, or, for a stream
// the server ended, at its start: the client learns of that only after the
// fact, so nothing in the span is certain.
type span struct {
	node     string
	from, to instant
	open     bool
	end      Event // the disconnect that ended it (zero while open)
}

// streams returns every user's stream spans in history order.
func streams(events []Event) map[string][]span {
	out := map[string][]span{}
	for _, ev := range events {
		switch {
		case ev.Kind == KindConnect && ev.OK:
			out[ev.User] = append(out[ev.User], span{node: ev.Node, from: ev.done(), open: true})
		case ev.Kind == KindDisconnect:
			ss := out[ev.User]
			for i := len(ss) - 1; i >= 0; i-- {
				if ss[i].open && ss[i].node == ev.Node {
					ss[i].open, ss[i].to, ss[i].end = false, ev.inv(), ev
					if ev.Err != "" {
						ss[i].to = ss[i].from
					}
					break
				}
			}
		}
	}
	return out
}

// connectedThrough returns the stream user had open without interruption
// from before a until after b.
func connectedThrough(ss []span, a, b instant) (span, bool) {
	for _, s := range ss {
		if s.from.before(a) && (s.open || b.before(s.to)) {
			return s, true
		}
	}
	return span{}, false
}

// timedFault returns a fault matching pred whose span, extended by its
// kind's recovery time, overlaps [from, to]. A per-operation network fault
// counts too, on its nodes: the relay it hit holds a worker of the sending
// node until its deadline and retries (Recovery[RecoveryOp]), and queued tasks
// of that node wait behind it. A per-operation Redis fault fails one
// command at once and touches only its own message (see opFaults).
func timedFault(h *History, from, to time.Duration, pred func(Fault) bool) (Fault, bool) {
	for _, f := range h.Faults {
		if f.From > to || (f.Op && f.Redis) || !pred(f) {
			continue
		}
		rec := recoveryOf(h, f.Kind)
		if f.Op {
			rec = recoveryOf(h, RecoveryOp)
		}
		if f.To < 0 || f.To+rec >= from {
			return f, true
		}
	}
	return Fault{}, false
}

// opFaults indexes the per-operation faults by the message they hit (a
// Redis fault wins over a network one).
func (j *judge) opFaults() map[string]Fault {
	if j.byMsg == nil {
		j.byMsg = map[string]Fault{}
		for _, f := range j.h.Faults {
			if old, seen := j.byMsg[f.Msg]; f.Op && f.Msg != "" && (!seen || f.Redis && !old.Redis) {
				j.byMsg[f.Msg] = f
			}
		}
	}
	return j.byMsg
}

func recoveryOf(h *History, kind FaultKind) time.Duration {
	if d, ok := h.Recovery[kind]; ok {
		return d
	}
	return h.Recovery[RecoveryDefault]
}

func (f Fault) touchesNode(n string) bool {
	for _, x := range f.Nodes {
		if x == n {
			return true
		}
	}
	return false
}
