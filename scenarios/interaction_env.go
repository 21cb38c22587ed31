package scenarios

import (
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/cockroachdb/datadriven"

	"github.com/relaysim/relaysim/model"
	"github.com/relaysim/relaysim/sim"
	"github.com/relaysim/relaysim/sim/dst"
	"github.com/relaysim/relaysim/system"
)

// Env is one scenario file played in one relay mode: the cluster its
// `cluster` command started, inside the bubble the file runs in, and what
// its commands have printed so far. Commands run one at a time on the
// bubble's driver goroutine, always at a quiescent point.
type Env struct {
	Mode system.Mode
	c    *sim.Cluster
	// rooms created so far (a first join creates its room).
	rooms map[string]bool
	// Marks: the history events, deliveries, faults and story events
	// already told.
	events, deliveries, faults, told int
	// allRelays tells every relay call, not only those that failed or were
	// retried (cluster relays=all).
	allRelays bool
	// forged counts the forge commands run (forgedN message ids).
	forged int
	// explorer, when set, runs the cluster under the model checker (an
	// explore block's schedule); setup holds the commands run so far, which
	// every schedule of an explore block replays.
	explorer *dst.Explorer
	setup    []*datadriven.TestData
	// ExploreDefaults are the explore blocks' defaults (the command line's
	// flags; a block's own arguments override them); ExploreReports
	// collects each block's report.
	ExploreDefaults ExploreOptions
	ExploreReports  []*ExploreReport
	// replay is the schedule the next explore block replays (a schedule
	// command in this mode), replayBuild the build it names.
	replay      []string
	replayBuild string
}

// NewEnv returns the environment of one file in mode.
func NewEnv(mode system.Mode) *Env {
	return &Env{Mode: mode, rooms: map[string]bool{}, ExploreDefaults: DefaultExploreOptions()}
}

// Close tears the cluster down (every goroutine it started ends).
func (e *Env) Close() {
	if e.c != nil {
		e.c.Close()
		e.c = nil
	}
}

// errNoCluster is what a command says before `cluster`.
var errNoCluster = errors.New("no cluster yet: start the file with `cluster nodes=N`")

// InputError is a file that cannot be read as written: an unknown command
// or argument, an ill-typed value, a command before `cluster`. The
// command line says it as bad input (exit 2), not as a failed run.
type InputError struct{ Err error }

func (e *InputError) Error() string { return e.Err.Error() }
func (e *InputError) Unwrap() error { return e.Err }

// badInput marks err, if any, as an InputError.
func badInput(err error) error {
	if err == nil {
		return nil
	}
	return &InputError{Err: err}
}

// Handle runs one command and returns its output. The error of an unknown
// command, an unknown argument or an ill-typed value names the command;
// the caller adds the file and line.
func (e *Env) Handle(d *datadriven.TestData) (string, error) {
	switch d.Cmd {
	case "explore":
		return e.handleExplore(d)
	case "schedule":
		return e.handleSchedule(d)
	}
	h, ok := handlers[d.Cmd]
	if !ok {
		return "", badInput(fmt.Errorf("unknown command %q (commands: %s)", d.Cmd, strings.Join(commandNames(), ", ")))
	}
	if d.Cmd != "cluster" && e.c == nil {
		return "", badInput(errNoCluster)
	}
	switch d.Cmd {
	case "check", "metrics", "trace":
	default:
		cp := *d // datadriven reuses its TestData
		cp.CmdArgs = append([]datadriven.CmdArg(nil), d.CmdArgs...)
		e.setup = append(e.setup, &cp)
	}
	a, err := newArgs(e, d, h.args...)
	if err != nil {
		return "", badInput(err)
	}
	out, err := h.run(e, a)
	if err == nil && a.err != nil {
		err = badInput(a.err)
	}
	return out, err
}

// handler is one command: the arguments it takes and what it does.
type handler struct {
	args []string
	run  func(*Env, *args) (string, error)
}

// handlers maps each command to its handler (interaction_env_handler_*.go,
// each with an example in its doc comment). A command that does a fault
// kind is named by the kind (model's name, the registry's: sim/plan).
var handlers = map[string]handler{
	"cluster":                      {[]string{"nodes", "seed", "versions", "legacy", "relays"}, (*Env).handleCluster},
	"connect":                      {[]string{"user", "node"}, (*Env).handleConnect},
	"disconnect":                   {[]string{"user"}, (*Env).handleDisconnect},
	string(model.FaultVanish):      {[]string{"user"}, (*Env).handleVanish},
	"join":                         {[]string{"user", "room", "node"}, (*Env).handleJoin},
	"leave":                        {[]string{"user", "room", "node"}, (*Env).handleLeave},
	"send":                         {[]string{"user", "room", "msg", "node"}, (*Env).handleSend},
	string(model.FaultSteal):       {[]string{"user", "room", "msg", "node"}, (*Env).handleSteal},
	string(model.FaultCrash):       {[]string{"node"}, (*Env).handleCrash},
	string(model.FaultRestart):     {[]string{"node", "protocol", "legacy"}, (*Env).handleRestart},
	string(model.FaultPartition):   {[]string{"a", "b"}, (*Env).handlePartition},
	string(model.FaultHeal):        {nil, (*Env).handleHeal},
	string(model.FaultStreamBreak): {[]string{"from", "to"}, (*Env).handleBreakStream},
	"break-stream":                 {[]string{"from", "to"}, (*Env).handleBreakStream}, // stream-break's older spelling, kept
	"recv-break":                   {nil, (*Env).handleRecvBreak},
	"drop-responses":               {[]string{"from", "to", "for"}, (*Env).handleDropResponses},
	string(model.FaultRedisOutage): {[]string{"for"}, (*Env).handleRedisOutage},
	string(model.FaultForge):       {[]string{"user", "call", "as", "room", "cred", "node"}, (*Env).handleForge},
	"run":                          {[]string{"for"}, (*Env).handleRun},
	"check":                        {nil, (*Env).handleCheck},
	"metrics":                      {[]string{"node"}, (*Env).handleMetrics},
	"trace":                        {[]string{"last"}, (*Env).handleTrace},
}

func commandNames() []string {
	names := make([]string, 0, len(handlers)+2)
	names = append(names, "explore", "schedule")
	for n := range handlers {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// await drives the cluster until an event after the history index from
// matches, or limit of virtual time has passed. It polls in small steps
// (1 ms, then 10 ms after the first 100 ms): the client records its
// outcome on a goroutine of its own and tells nobody.
func (e *Env) await(from int, limit time.Duration, match func(model.Event) bool) (model.Event, bool) {
	start := e.c.Now()
	for {
		evs := e.c.History().Events
		for i := from; i < len(evs); i++ {
			if match(evs[i]) {
				return evs[i], true
			}
		}
		from = len(evs)
		now := e.c.Now()
		if now-start >= limit {
			return model.Event{}, false
		}
		step := time.Millisecond
		if now-start >= 100*time.Millisecond {
			step = 10 * time.Millisecond
		}
		e.c.Sched.RunFor(min(step, start+limit-now))
	}
}

// do queues a client action now and waits for its outcome (an event of
// one of kinds for the action's user, room and message).
func (e *Env) do(a sim.Action, kinds ...model.Kind) (model.Event, error) {
	from := len(e.c.History().Events)
	a.At = e.c.Now()
	e.c.Do(a)
	ev, ok := e.await(from, actionLimit, func(ev model.Event) bool {
		return ev.User == a.User && ev.Room == a.Room && ev.MsgID == a.MsgID && ev.Kind != model.KindDeliver && containsKind(kinds, ev.Kind)
	})
	if !ok {
		return ev, fmt.Errorf("%s: no outcome within %v of virtual time", a, actionLimit)
	}
	return ev, nil
}

// actionLimit bounds the wait for a client call: five tries of 2 s with
// back-off fit well inside it.
const actionLimit = 30 * time.Second

func containsKind(ks []model.Kind, k model.Kind) bool {
	for _, x := range ks {
		if x == k {
			return true
		}
	}
	return false
}

// news renders what happened since the last command told its news: the
// clients' view (acks, deliveries, connections), nodes going down and up,
// relay calls that failed or were retried (from the trace), and faults
// that hit single operations (counted per kind and link). Lines are
// grouped by who they are about — the first word: a node or a user,
// sorted — and each one's lines are in the order they happened. Across
// subjects the order is a race (whose delivery landed first), and one
// that differs between modes: grouping keeps the files readable and the
// modes' outputs aligned. A user's send outcomes come before the rest of
// its lines (its own copy of a message races the ack).
func (e *Env) news() string {
	type item struct {
		subject string
		ack     bool
		line    int
		text    string
	}
	var items []item
	add := func(line int, text string, ack bool) {
		subject, _, _ := strings.Cut(text, " ")
		items = append(items, item{strings.TrimSuffix(subject, ":"), ack, line, text})
	}
	h := e.c.History()
	for _, ev := range h.Events[e.events:] {
		if s := renderEvent(ev); s != "" {
			add(ev.TraceLine, s, ev.Kind == model.KindSend)
		}
	}
	e.events = len(h.Events)
	i := 0
	h.Deliveries.Each(func(ev model.Event) { // the simulator keeps deliveries apart
		if i >= e.deliveries {
			add(ev.TraceLine, renderEvent(ev), false)
		}
		i++
	})
	e.deliveries = i
	for _, f := range aggregateFaults(h.Faults[e.faults:]) {
		add(f.line, f.text, false)
	}
	e.faults = len(h.Faults)
	story := e.c.Story()
	for _, ev := range story[e.told:] {
		if s := renderStory(ev, e.allRelays); s != "" {
			add(ev.Line, s, false)
		}
	}
	e.told = len(story)
	sort.SliceStable(items, func(i, j int) bool {
		if items[i].subject != items[j].subject {
			return items[i].subject < items[j].subject
		}
		if items[i].ack != items[j].ack {
			return items[i].ack
		}
		return items[i].line < items[j].line
	})
	var b strings.Builder
	for _, it := range items {
		b.WriteString(it.text)
		b.WriteByte('\n')
	}
	return b.String()
}

// shown is a name as a story prints it: as it is when every rune is a
// visible letter, digit, mark, punctuation or symbol, else Go-quoted (as
// a command spells it: a control character, a space of any script or
// invalid UTF-8 would be unreadable in the file).
func shown(s string) string {
	for _, r := range s {
		if r == utf8.RuneError || !unicode.IsGraphic(r) || unicode.IsSpace(r) || r == '"' {
			return strconv.Quote(s)
		}
	}
	return s
}

// renderEvent is one client-visible event as a story line ("" to skip).
func renderEvent(ev model.Event) string {
	ev.User, ev.Room, ev.MsgID = shown(ev.User), shown(ev.Room), shown(ev.MsgID)
	failed := func(what string) string { return fmt.Sprintf("%s: %s failed: %s", ev.User, what, ev.Err) }
	switch ev.Kind {
	case model.KindCreateRoom:
		if !ev.OK {
			return failed("create " + ev.Room)
		}
	case model.KindJoin:
		if !ev.OK {
			return failed("join " + ev.Room)
		}
		return fmt.Sprintf("%s joined %s (receives from %s#%d)", ev.User, ev.Room, ev.Room, ev.Seq)
	case model.KindLeave:
		if !ev.OK {
			return failed("leave " + ev.Room)
		}
		return fmt.Sprintf("%s left %s (received up to %s#%d)", ev.User, ev.Room, ev.Room, ev.Seq)
	case model.KindSend:
		if !ev.OK {
			return failed(fmt.Sprintf("send %s %s", ev.Room, ev.MsgID))
		}
		s := fmt.Sprintf("%s: %s#%d acked", ev.User, ev.Room, ev.Seq)
		if ev.Duplicate {
			s += " (duplicate)"
		}
		if ev.Tries > 1 {
			s += fmt.Sprintf(" after %d tries", ev.Tries)
		}
		return s
	case model.KindConnect:
		if !ev.OK {
			return failed("connect " + ev.Node)
		}
		return fmt.Sprintf("%s connected to %s", ev.User, ev.Node)
	case model.KindDisconnect:
		switch {
		case ev.Vanish:
			return fmt.Sprintf("%s vanished from %s (stream left open)", ev.User, ev.Node)
		case ev.Err != "":
			return fmt.Sprintf("%s: stream on %s ended by the server (%s)", ev.User, ev.Node, ev.Err)
		}
		return fmt.Sprintf("%s disconnected from %s", ev.User, ev.Node)
	case model.KindDeliver:
		src := "live"
		if ev.FromLog {
			src = "log"
		}
		return fmt.Sprintf("%s <- %s#%d %s (%s)", ev.User, ev.Room, ev.Seq, ev.MsgID, src)
	case model.KindSessionClosed:
		return fmt.Sprintf("%s closed the session of %s", ev.Node, ev.User)
	case model.KindPanic:
		return fmt.Sprintf("%s task panic: %s", ev.Node, ev.Err)
	}
	if ev.Kind.Forged() {
		s := fmt.Sprintf("%s: forged %s", ev.User, strings.TrimPrefix(string(ev.Kind), "forged-"))
		for _, w := range []string{ev.Room, ev.MsgID} {
			if w != "" {
				s += " " + w
			}
		}
		s += fmt.Sprintf(" (cred %s) to %s", ev.Cred, ev.Node)
		if ev.OK {
			return s + " accepted"
		}
		return s + " refused: " + ev.Err
	}
	return ""
}

type foldedFault struct {
	line int
	text string
}

// aggregateFaults folds the faults that hit single operations into one
// line per kind and link (a Redis outage fails every command it meets).
// Timed faults are told by the command that applied them, and so are the
// calls a partition loses (the relay lines show them).
func aggregateFaults(fs []model.Fault) []foldedFault {
	type group struct {
		first, n int
		msgs     []string
	}
	groups := map[string]*group{}
	var order []string
	for _, f := range fs {
		if !f.Op || f.Kind == model.FaultPartition {
			continue // told by the command that applied it (a partition's lost calls: by the relay lines)
		}
		// "n1 fault drop-response -> n2" (a call), "n1 fault redis-outage".
		key := "?"
		if len(f.Nodes) > 0 {
			key = f.Nodes[0]
		}
		key += " fault " + string(f.Kind)
		if len(f.Nodes) > 1 {
			key += " -> " + strings.Join(f.Nodes[1:], ",")
		}
		g := groups[key]
		if g == nil {
			g = &group{first: f.TraceLine}
			groups[key] = g
			order = append(order, key)
		}
		g.n++
		if f.Msg != "" && !contains(g.msgs, f.Msg) {
			g.msgs = append(g.msgs, f.Msg)
		}
	}
	out := make([]foldedFault, 0, len(order))
	for _, key := range order {
		g := groups[key]
		unit := "call"
		if strings.Contains(key, " fault redis") {
			unit = "command"
		}
		if g.n > 1 {
			unit += "s"
		}
		text := fmt.Sprintf("%s: %d %s", key, g.n, unit)
		if len(g.msgs) > 0 {
			sort.Strings(g.msgs)
			text += " (" + strings.Join(g.msgs, " ") + ")"
		}
		out = append(out, foldedFault{g.first, text})
	}
	return out
}

func contains(xs []string, x string) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
}

// renderStory tells the story events a scenario tells: nodes going down,
// up and upgraded, relay calls that failed or were retried (every relay
// call with allRelays), and relay streams that broke, fell back, dropped
// or handed over (opened and acknowledged too with allRelays). The mode of
// a node that came up is left out (the harness's, not the story's).
func renderStory(ev sim.StoryEvent, allRelays bool) string {
	switch w := ev.What.(type) {
	case sim.NodeUp:
		s := fmt.Sprintf("%s up epoch=%d", ev.Node, w.Epoch)
		if w.Protocol != system.ProtocolLatest {
			s += fmt.Sprintf(" protocol=v%d (relays in %s)", w.Protocol, w.RelaysIn)
		}
		if w.Legacy != (system.Legacy{}) {
			s += " legacy=" + legacyShown(w.Legacy)
		}
		return s
	case sim.NodeLegacy:
		return fmt.Sprintf("%s legacy %s -> %s", ev.Node, legacyShown(w.From), legacyShown(w.To))
	case sim.NodeCrash:
		return fmt.Sprintf("%s crashed epoch=%d", ev.Node, w.Epoch)
	case sim.NodeUpgrade:
		if w.AtRestart {
			return fmt.Sprintf("%s upgrade v%d -> v%d at its restart", ev.Node, w.From, w.To)
		}
		if w.From == w.To && !w.Overlap {
			return fmt.Sprintf("%s graceful restart epoch=%d", ev.Node, w.Epoch)
		}
		return fmt.Sprintf("%s upgrade v%d -> v%d epoch=%d", ev.Node, w.From, w.To, w.Epoch)
	case sim.NodeStartFailed:
		return fmt.Sprintf("%s start failed (try %d): %v", ev.Node, w.Try, w.Err)
	case sim.RelayCall:
		if !allRelays && w.Quiet() {
			return ""
		}
		return ev.Node + " " + w.String()
	case sim.StreamStep:
		if !allRelays && w.Quiet() {
			return ""
		}
		return ev.Node + " " + w.String()
	}
	return ""
}
