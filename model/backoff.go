package model

import (
	"fmt"
	"time"
)

// LinkEvent is something the harness saw happen to a relay stream link
// (stream mode), named by the link's operation label: the writer opened
// a stream ("open"), the harness broke one ("break": a fault it injected
// on a write, an open or an ack), an ack came back ("ack"), or the writer
// started its attempts afresh ("reset": it dropped, fell back, isolated
// or handed over what the link held).
type LinkEvent struct {
	Time      time.Duration
	Link      string
	What      string
	TraceLine int
}

// CheckStreamBackoff is stream-backoff: a relay stream writer backs off
// after each broken stream, k x RelayBackoff after the k-th break in a
// row, before it opens the next one — so that a blip shorter than its
// back-offs costs a delay, not the link's backlog. Judged from outside:
// after the k-th break the harness injected on a link since its last ack
// (or reset), the link's next open must come at least k x h.RelayBackoff
// after that break. The writer may count more failures than the harness
// (failures it did not inject) and wait longer: never less.
func CheckStreamBackoff(h *History) []Violation {
	if h.RelayBackoff <= 0 {
		return nil
	}
	type state struct {
		k    int
		last LinkEvent
	}
	links := map[string]*state{}
	var out []Violation
	for _, e := range h.LinkEvents {
		s := links[e.Link]
		if s == nil {
			s = &state{}
			links[e.Link] = s
		}
		switch e.What {
		case "break":
			s.k++
			s.last = e
		case "ack", "reset":
			s.k = 0
		case "open":
			if wait := time.Duration(s.k) * h.RelayBackoff; s.k > 0 && e.Time-s.last.Time < wait {
				out = append(out, Violation{
					Property: PropStreamBackoff,
					Detail: fmt.Sprintf("%s opened a stream at t=%v, %v after its break %d in a row (t=%v); its back-off is %v",
						e.Link, e.Time, e.Time-s.last.Time, s.k, s.last.Time, wait),
					TraceLines: lines(s.last.TraceLine, e.TraceLine),
				})
				s.k = 0 // one violation per burst of attempts
			}
		}
	}
	return out
}
