package realcluster

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/relaysim/relaysim/model"
)

// historyLine is one line of a history file, the format the simulator's
// -history writes (sim/historyout.go): the record's type and the record.
// A real run adds a "meta" line first; a simulated run's file has none.
type historyLine struct {
	Type   string        `json:"type"`
	Meta   *Meta         `json:"meta,omitempty"`
	Event  *model.Event  `json:"event,omitempty"`
	Fault  *model.Fault  `json:"fault,omitempty"`
	Tasks  *model.Tasks  `json:"tasks,omitempty"`
	Sample *model.Sample `json:"sample,omitempty"`
	Final  *model.Final  `json:"final,omitempty"`
}

// Meta describes a real run's history: what ran, and when it began (times
// in the file are durations since then).
type Meta struct {
	Runner string    `json:"runner"`
	Seed   string    `json:"seed"`
	Mode   string    `json:"mode"`
	Nodes  []string  `json:"nodes"`
	Start  time.Time `json:"start"`
}

// recorder records a real run's history: every event stamped under one
// lock with the time since the run began, so that the file's order is the
// order of the stamps, and streamed to the file as it is recorded. An
// event's TraceLine is its line in the file: violations cite those.
type recorder struct {
	start time.Time

	mu     sync.Mutex
	enc    *json.Encoder
	bw     *bufio.Writer
	lines  int
	events []model.Event
	faults []model.Fault
	err    error
}

func newRecorder(w io.Writer, meta Meta) *recorder {
	bw := bufio.NewWriterSize(w, 1<<16)
	r := &recorder{start: meta.Start, bw: bw, enc: json.NewEncoder(bw)}
	r.write(historyLine{Type: "meta", Meta: &meta})
	return r
}

// now is the time since the run began (monotonic).
func (r *recorder) now() time.Duration { return time.Since(r.start) }

func (r *recorder) write(l historyLine) {
	r.lines++
	if r.err == nil {
		r.err = r.enc.Encode(l)
	}
}

// record stamps ev with its completion time and line, keeps it and writes
// it; it returns the stamped event.
func (r *recorder) record(ev model.Event) model.Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	ev.Time = r.now()
	if ev.Invoked == 0 {
		ev.Invoked = ev.Time
	}
	ev.TraceLine = r.lines + 1
	r.events = append(r.events, ev)
	r.write(historyLine{Type: "event", Event: &ev})
	return ev
}

// fault keeps a fault; faults are written at the end, when each has ended.
func (r *recorder) fault(f model.Fault) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.faults = append(r.faults, f)
	return len(r.faults) - 1
}

// endFault sets fault i's end.
func (r *recorder) endFault(i int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.faults[i].To = r.now()
}

// snapshot copies the events recorded so far.
func (r *recorder) snapshot() []model.Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]model.Event(nil), r.events...)
}

// finish writes the faults and the final state, flushes, and returns the
// whole history.
func (r *recorder) finish(mode string, final model.Final) (*model.History, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for i := range r.faults {
		r.write(historyLine{Type: "fault", Fault: &r.faults[i]})
	}
	r.write(historyLine{Type: "final", Final: &final})
	if err := r.bw.Flush(); err != nil && r.err == nil {
		r.err = err
	}
	h := &model.History{Mode: mode, Events: r.events, Faults: r.faults, Final: final}
	return h, r.err
}

// ReadHistory reads a history file written by a real run or by the
// simulator's -history. Deliveries go to the history's compact delivery
// log, as the simulator keeps them. A bad line is an error naming it.
func ReadHistory(r io.Reader) (*model.History, *Meta, error) {
	br := bufio.NewReaderSize(r, 1<<16)
	h := &model.History{Deliveries: &model.DeliveryLog{}}
	var meta *Meta
	finals := 0
	for n := 1; ; n++ {
		line, err := br.ReadBytes('\n')
		if len(line) == 0 && errors.Is(err, io.EOF) {
			break
		}
		if err != nil && !errors.Is(err, io.EOF) {
			return nil, nil, fmt.Errorf("line %d: %w", n, err)
		}
		var l historyLine
		if err := json.Unmarshal(line, &l); err != nil {
			return nil, nil, fmt.Errorf("line %d: %w", n, err)
		}
		if err := add(h, &meta, &finals, l); err != nil {
			return nil, nil, fmt.Errorf("line %d: %w", n, err)
		}
	}
	if finals == 0 {
		return nil, nil, errors.New("no final record (the room logs): the file is cut short")
	}
	if meta != nil {
		h.Mode = meta.Mode
	}
	return h, meta, nil
}

// add adds one decoded line to h.
func add(h *model.History, meta **Meta, finals *int, l historyLine) error {
	missing := fmt.Errorf("a %q record without its %q field", l.Type, l.Type)
	switch l.Type {
	case "meta":
		if l.Meta == nil {
			return missing
		}
		*meta = l.Meta
	case "event":
		if l.Event == nil {
			return missing
		}
		if l.Event.Kind == model.KindDeliver {
			h.Deliveries.Add(*l.Event)
		} else {
			h.Events = append(h.Events, *l.Event)
		}
	case "fault":
		if l.Fault == nil {
			return missing
		}
		h.Faults = append(h.Faults, *l.Fault)
	case "tasks":
		if l.Tasks == nil {
			return missing
		}
		h.Tasks = append(h.Tasks, *l.Tasks)
	case "sample":
		if l.Sample == nil {
			return missing
		}
		h.Samples = append(h.Samples, *l.Sample)
	case "final":
		if l.Final == nil {
			return missing
		}
		*finals++
		if *finals > 1 {
			return errors.New("a second final record")
		}
		h.Final = *l.Final
	default:
		return fmt.Errorf("unknown record type %q (want meta, event, fault, tasks, sample or final)", l.Type)
	}
	return nil
}
