package timeline

import (
	"bytes"
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
}

func TestTimelineNeedsAHistory(t *testing.T) {
	assert.Error(t, Write(&bytes.Buffer{}, Input{}))
}
