package timeline

import (
	"bytes"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/net/html"

	"github.com/relaysim/relaysim/model"
)

// story is a small failing history: u1 on n1 sends r1#1 and r1#2, u2 on n2
// gets #2 live but #1 never (a dropped relay), and no-loss names the send.
func story() Input {
	ms := time.Millisecond
	h := &model.History{Mode: "bulk", Deliveries: &model.DeliveryLog{}}
	h.Events = []model.Event{
		{Kind: model.KindConnect, User: "u1", Node: "n1", OK: true, Invoked: 1 * ms, Time: 3 * ms, TraceLine: 3},
		{Kind: model.KindConnect, User: "u2", Node: "n2", OK: true, Invoked: 1 * ms, Time: 4 * ms, TraceLine: 4},
		{Kind: model.KindJoin, User: "u2", Room: "r1", Node: "n2", OK: true, Seq: 1, Invoked: 5 * ms, Time: 9 * ms, TraceLine: 6},
		{Kind: model.KindSend, User: "u1", Room: "r1", Node: "n1", MsgID: "u1-m1", OK: true, Seq: 1, Invoked: 20 * ms, Time: 30 * ms, TraceLine: 8},
		{Kind: model.KindSend, User: "u1", Room: "r1", Node: "n1", MsgID: "u1-m2", OK: true, Seq: 2, Invoked: 40 * ms, Time: 50 * ms, TraceLine: 12},
		{Kind: model.KindJoin, User: "u1", Room: "r2", Node: "n1", OK: false, Err: "Unavailable", Invoked: 60 * ms, Time: 70 * ms, TraceLine: 14},
	}
	h.Deliveries.Add(model.Event{Kind: model.KindDeliver, User: "u2", Room: "r1", Node: "n2", Seq: 2, MsgID: "u1-m2", Time: 55 * ms, TraceLine: 13})
	h.Deliveries.Add(model.Event{Kind: model.KindDeliver, User: "u1", Room: "r1", Node: "n1", Seq: 1, MsgID: "u1-m1", Time: 31 * ms, TraceLine: 9})
	h.Faults = []model.Fault{
		{From: 32 * ms, To: 32 * ms, Kind: "drop-request", Op: true, Nodes: []string{"n1", "n2"}, Msg: "r1#1", TraceLine: 10},
		{From: 35 * ms, To: 80 * ms, Kind: "redis-outage", Redis: true, TraceLine: 11},
	}
	trace := make([]string, 14)
	for i := range trace {
		trace[i] = "t=00:00.0xx line " + string(rune('a'+i))
	}
	trace[9] = "t=00:00.032 n1 fault drop-request relay r1#1 -> n2"
	return Input{
		Title:   "relaysim run seed=0x2a mode=bulk",
		Command: "relaysim replay -seed 0x2a -mode bulk",
		History: h,
		Violations: []model.Violation{{Property: model.PropNoLoss, User: "u2", Room: "r1", Seq: 1,
			Detail: "acked send never delivered", TraceLines: []int{8, 10}}},
		Trace: trace,
	}
}

func render(t *testing.T, in Input) (string, *html.Node) {
	t.Helper()
	var b bytes.Buffer
	require.NoError(t, Write(&b, in))
	doc, err := html.Parse(bytes.NewReader(b.Bytes()))
	require.NoError(t, err)
	return b.String(), doc
}

func find(n *html.Node, match func(*html.Node) bool) []*html.Node {
	var out []*html.Node
	var walk func(*html.Node)
	walk = func(n *html.Node) {
		if match(n) {
			out = append(out, n)
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			walk(c)
		}
	}
	walk(n)
	return out
}

func attr(n *html.Node, key string) string {
	for _, a := range n.Attr {
		if a.Key == key {
			return a.Val
		}
	}
	return ""
}

func hasClass(n *html.Node, c string) bool {
	return n.Type == html.ElementNode && strings.Contains(" "+attr(n, "class")+" ", " "+c+" ")
}

func TestTimelineDrawsLanesMarksAndEvidence(t *testing.T) {
	out, doc := render(t, story())

	var lanes []string
	for _, n := range find(doc, func(n *html.Node) bool { return hasClass(n, "lane-label") }) {
		lanes = append(lanes, n.FirstChild.Data)
	}
	assert.Equal(t, []string{"redis", "n1", "n2", "u1", "u2"}, lanes, "a lane for Redis, each node, each client, in order")

	ev := find(doc, func(n *html.Node) bool { return hasClass(n, "evidence") })
	var evLines []string
	for _, n := range ev {
		evLines = append(evLines, attr(n, "data-l"))
	}
	assert.Contains(t, evLines, "8", "the send the violation names is marked")
	assert.Contains(t, evLines, "10", "the fault the violation names is marked")

	assert.Len(t, find(doc, func(n *html.Node) bool { return hasClass(n, "fromlog") }), 0)
	assert.Len(t, find(doc, func(n *html.Node) bool { return hasClass(n, "live") }), 2, "two deliveries, both live")
	assert.Len(t, find(doc, func(n *html.Node) bool { return hasClass(n, "relay") }), 1, "one relay arrow n1 -> n2")
	assert.Len(t, find(doc, func(n *html.Node) bool { return hasClass(n, "failed") }), 1, "the failed join")
	assert.NotEmpty(t, find(doc, func(n *html.Node) bool { return hasClass(n, "redis-outage") }), "the outage is a span")

	owed := find(doc, func(n *html.Node) bool { return hasClass(n, "owed") })
	require.Len(t, owed, 1, "where u2's r1#1 was owed is marked")
	assert.Contains(t, attr(owed[0], "data-t"), "no-loss: r1#1, sequenced here, as u2 saw it")

	viol := find(doc, func(n *html.Node) bool { return attr(n, "id") == "violations" })
	require.Len(t, viol, 1)
	assert.Less(t, strings.Index(out, `id="violations"`), strings.Index(out, "<svg"), "violations are listed before the drawing")
	assert.Contains(t, out, "no-loss: user u2 room r1 seq 1: acked send never delivered")
	assert.Contains(t, out, "n1 fault drop-request relay r1#1 -\\u003e n2", "the cited trace line travels with the page")
}

func TestTimelineLoadsNothingFromOutside(t *testing.T) {
	_, doc := render(t, story())
	for _, n := range find(doc, func(n *html.Node) bool { return n.Type == html.ElementNode }) {
		for _, a := range n.Attr {
			if a.Key == "src" || (a.Key == "href" && n.Data == "link") {
				t.Errorf("<%s %s=%q> loads something", n.Data, a.Key, a.Val)
			}
		}
	}
}

func TestTimelineWithoutViolationSaysSo(t *testing.T) {
	in := story()
	in.Violations = nil
	out, doc := render(t, in)
	assert.Empty(t, find(doc, func(n *html.Node) bool { return hasClass(n, "evidence") }))
	assert.Contains(t, out, "No violation")

	// Without a violation the page opens where things happen: moved 20 s
	// later, from 00:20.001 to 00:20.070, padded by 100 ms.
	in.History.Faults = nil
	for i := range in.History.Events {
		in.History.Events[i].Invoked += 20 * time.Second
		in.History.Events[i].Time += 20 * time.Second
	}
	in.History.Deliveries = &model.DeliveryLog{}
	_, doc = render(t, in)
	main := find(doc, func(n *html.Node) bool { return attr(n, "id") == "main" })
	require.Len(t, main, 1)
	assert.Equal(t, "19901.0 20170.0", attr(main[0], "data-focus"), "not the 20 s of nothing before")
}

func TestTimelineNeedsAHistory(t *testing.T) {
	assert.Error(t, Write(&bytes.Buffer{}, Input{}))
}

// late is story with one more send, a minute in, that a second violation
// (of another property) and a third (no-loss again) cite; the first
// violation is the late one.
func late() Input {
	in := story()
	h := in.History
	h.Events = append(h.Events, model.Event{Kind: model.KindSend, User: "u1", Room: "r1", Node: "n1", MsgID: "u1-m3",
		OK: true, Seq: 3, Invoked: 60 * time.Second, Time: 60*time.Second + 10*time.Millisecond, TraceLine: 15})
	in.Trace = append(in.Trace, "t=01:00.010 u1 send r1 u1-m3 ok seq=3")
	in.Violations = append([]model.Violation{
		{Property: model.PropOrdering, User: "u2", Room: "r1", Seq: 3, Detail: "out of order", TraceLines: []int{15}},
	}, in.Violations...)
	in.Violations = append(in.Violations, model.Violation{Property: model.PropNoLoss, User: "u2", Room: "r1", Seq: 2,
		Detail: "again", TraceLines: []int{12}})
	return in
}

func TestTimelineOpensOnTheFirstViolation(t *testing.T) {
	_, doc := render(t, late())
	main := find(doc, func(n *html.Node) bool { return attr(n, "id") == "main" })
	require.Len(t, main, 1)
	assert.Equal(t, "59000.0 60510.0", attr(main[0], "data-focus"),
		"the first violation's evidence (the send at 01:00.000-01:00.010), a second either side within the run")
	assert.Equal(t, "60510.0", attr(main[0], "data-end"), "the run, half a second past its last event")
	overview := find(doc, func(n *html.Node) bool { return attr(n, "id") == "overview" })
	require.Len(t, overview, 1, "the whole run above the window")
	assert.NotEmpty(t, find(overview[0], func(n *html.Node) bool { return hasClass(n, "bar") }), "its activity")
	assert.NotEmpty(t, find(overview[0], func(n *html.Node) bool { return hasClass(n, "first") }), "the first evidence")
	assert.Len(t, find(overview[0], func(n *html.Node) bool { return attr(n, "id") == "brush" }), 1, "the window")
	for _, zoom := range []string{"in", "out", "fit", "first"} {
		assert.Len(t, find(doc, func(n *html.Node) bool { return attr(n, "data-zoom") == zoom }), 1, zoom)
	}
}

func TestTimelineGroupsViolationsByProperty(t *testing.T) {
	_, doc := render(t, late())
	var props []string
	for _, g := range find(doc, func(n *html.Node) bool { return hasClass(n, "group") }) {
		var items []string
		for _, a := range find(g, func(n *html.Node) bool { return attr(n, "data-v") != "" }) {
			items = append(items, attr(a, "data-v")+"@"+attr(a, "data-win"))
		}
		props = append(props, attr(g, "data-property")+" "+strings.Join(items, ","))
	}
	assert.Equal(t, []string{
		"per-room-ordering 1@59000.0 60510.0",
		"no-loss 2@0.0 1032.0,3@0.0 1050.0",
	}, props, "by property, in order of first appearance, each violation focusing its own window")
	counts := find(doc, func(n *html.Node) bool { return hasClass(n, "n") })
	require.Len(t, counts, 2)
	assert.Equal(t, "2", counts[1].FirstChild.Data, "no-loss's count")
}

func TestTimelineShortensLongNames(t *testing.T) {
	in := story()
	long := strings.Repeat("ü", 60) + "\xff\xfe" + strings.Repeat("x", 4) // 126 bytes, not UTF-8
	for i := range in.History.Events {
		if in.History.Events[i].User == "u2" {
			in.History.Events[i].User = long
		}
	}
	in.History.Deliveries = &model.DeliveryLog{}
	in.Violations[0].User = long
	_, doc := render(t, in)
	label := find(doc, func(n *html.Node) bool {
		return hasClass(n, "lane-label") && strings.HasSuffix(n.FirstChild.Data, "…")
	})
	require.Len(t, label, 1)
	assert.Equal(t, strings.Repeat("ü", 12)+"…", label[0].FirstChild.Data, "12 runes and an ellipsis")
	title := find(label[0], func(n *html.Node) bool { return n.Data == "title" })
	require.Len(t, title, 1)
	assert.Equal(t, strconv.Quote(long), title[0].FirstChild.Data, "hovering shows every byte")
	assert.Equal(t, "ab", short("ab"))
	assert.Equal(t, "\uFFFDb", short("\xffb"))
}

func TestTimelineHeaderShowsTheRunsCounts(t *testing.T) {
	in := story()
	_, doc := render(t, in)
	assert.Equal(t, map[string]string{"users": "2", "acked": "2", "deliveries": "2", "faults": "2"}, counts(doc),
		"without the run's counts, the history's")
	in.Counts = &model.Counts{Users: 7, Acked: 11, Deliveries: 13, Faults: 17}
	_, doc = render(t, in)
	assert.Equal(t, map[string]string{"users": "7", "acked": "11", "deliveries": "13", "faults": "17"}, counts(doc),
		"the run's counts, as its summary printed them")
}

func counts(doc *html.Node) map[string]string {
	out := map[string]string{}
	for _, n := range find(doc, func(n *html.Node) bool { return attr(n, "data-count") != "" }) {
		out[attr(n, "data-count")] = n.FirstChild.Data
	}
	return out
}

// The same input draws the same bytes: no map order, no clock.
func TestTimelineIsDeterministic(t *testing.T) {
	first, _ := render(t, late())
	for range 5 {
		again, _ := render(t, late())
		require.Equal(t, first, again)
	}
}
