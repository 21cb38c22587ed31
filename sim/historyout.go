package sim

import (
	"encoding/json"
	"io"

	"github.com/relaysim/relaysim/model"
)

// historyOut streams a run's history as JSON lines while the run produces
// it (Config.History, the runner's -history FILE): every client event and
// delivery as it is recorded, then at the end the faults, task counts,
// samples and final room logs. Nothing is kept in memory for it, and a run
// without it writes nothing.
type historyOut struct {
	enc *json.Encoder
	err error
}

func newHistoryOut(w io.Writer) *historyOut {
	if w == nil {
		return nil
	}
	return &historyOut{enc: json.NewEncoder(w)}
}

// historyLine is one line of the streamed history: its type, and the
// record of that type.
type historyLine struct {
	Type   string        `json:"type"`
	Event  *model.Event  `json:"event,omitempty"`
	Fault  *model.Fault  `json:"fault,omitempty"`
	Tasks  *model.Tasks  `json:"tasks,omitempty"`
	Sample *model.Sample `json:"sample,omitempty"`
	Final  *model.Final  `json:"final,omitempty"`
}

func (o *historyOut) write(l historyLine) {
	if o == nil || o.err != nil {
		return
	}
	o.err = o.enc.Encode(l)
}

// finish writes what the run keeps to the end (small: per fault, message
// and node) and returns the first write error.
func (o *historyOut) finish(h *model.History) error {
	if o == nil {
		return nil
	}
	for i := range h.Faults {
		o.write(historyLine{Type: "fault", Fault: &h.Faults[i]})
	}
	for i := range h.Tasks {
		o.write(historyLine{Type: "tasks", Tasks: &h.Tasks[i]})
	}
	for i := range h.Samples {
		o.write(historyLine{Type: "sample", Sample: &h.Samples[i]})
	}
	o.write(historyLine{Type: "final", Final: &h.Final})
	return o.err
}
