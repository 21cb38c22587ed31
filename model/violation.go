package model

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
)

// Property names, as printed in failure banners and summaries.
const (
	PropNoLoss          = "no-loss"
	PropExactlyOnce     = "exactly-once"
	PropOrdering        = "per-room-ordering"
	PropNoStray         = "no-stray-delivery"
	PropStreamLeak      = "no-stream-leaks"
	PropGoroutineLeak   = "no-goroutine-leaks"
	PropWorkers         = "bounded-worker-growth"
	PropModeEquivalence = "mode-equivalence"
	PropWindows         = "membership-windows"
	PropTimely          = "timely-live-delivery"
	PropPanics          = "no-task-panics"
	PropForged          = "forged-rejected"
	PropContent         = "content-integrity"
	PropBadNames        = "bad-names-refused"
	PropBadNodeIDs      = "bad-node-ids-refused"
	PropBacklog         = "bounded-backlog"
	PropRelayMode       = "relay-mode"
	PropStreamBackoff   = "stream-backoff"
	PropReplayMemory    = "bounded-replay-memory"
	PropRegistry        = "newest-registration-kept"
	PropIsolation       = "isolation"
	PropUnfairCut       = "no-unfair-cut"
)

// Properties lists every property name.
var Properties = []string{
	PropNoLoss, PropExactlyOnce, PropOrdering, PropNoStray, PropWindows, PropStreamLeak,
	PropGoroutineLeak, PropWorkers, PropTimely, PropPanics, PropForged, PropContent, PropBadNames, PropBadNodeIDs, PropBacklog, PropRelayMode, PropStreamBackoff, PropReplayMemory, PropRegistry, PropIsolation, PropUnfairCut, PropModeEquivalence,
}

// Violation is one broken property with the context a reader needs to find it
// in the trace. Fields that do not apply are zero.
type Violation struct {
	Property         string
	User, Room, Node string
	Seq              uint64
	// Detail is one readable sentence with the numbers.
	Detail string
	// TraceLines are the trace lines of the events that show the violation,
	// sorted, without zeros.
	TraceLines []int
}

// String renders the violation on one line, e.g.
// "exactly-once: user u3 room r1 seq 7: delivered 2 times (trace lines 120, 188)".
func (v Violation) String() string {
	var ctx []string
	if v.User != "" {
		ctx = append(ctx, "user "+v.User)
	}
	if v.Room != "" {
		ctx = append(ctx, "room "+v.Room)
	}
	if v.Node != "" {
		ctx = append(ctx, "node "+v.Node)
	}
	if v.Seq != 0 {
		ctx = append(ctx, "seq "+strconv.FormatUint(v.Seq, 10))
	}
	var b strings.Builder
	b.WriteString(v.Property + ": ")
	if len(ctx) > 0 {
		b.WriteString(strings.Join(ctx, " ") + ": ")
	}
	b.WriteString(v.Detail)
	switch len(v.TraceLines) {
	case 0:
	case 1:
		fmt.Fprintf(&b, " (trace line %d)", v.TraceLines[0])
	default:
		fmt.Fprintf(&b, " (trace lines %s)", joinNums(v.TraceLines))
	}
	return b.String()
}

// Summarize counts violations per property, properties sorted by name, e.g.
// "3 violations: exactly-once 2, no-loss 1".
func Summarize(vs []Violation) string {
	if len(vs) == 0 {
		return "no violations"
	}
	counts := map[string]int{}
	for _, v := range vs {
		counts[v.Property]++
	}
	parts := make([]string, 0, len(counts))
	for _, p := range slices.Sorted(maps.Keys(counts)) {
		parts = append(parts, fmt.Sprintf("%s %d", p, counts[p]))
	}
	noun := "violations"
	if len(vs) == 1 {
		noun = "violation"
	}
	return fmt.Sprintf("%d %s: %s", len(vs), noun, strings.Join(parts, ", "))
}

// lines turns evidence trace lines into the canonical form of
// Violation.TraceLines: unknown lines (0) dropped, sorted, deduplicated, nil
// when nothing is left.
func lines(ls ...int) []int {
	var out []int
	for _, l := range ls {
		if l > 0 {
			out = append(out, l)
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// joinNums renders numbers as "1, 2, 3".
func joinNums[T int | uint64](xs []T) string {
	parts := make([]string, len(xs))
	for i, x := range xs {
		parts[i] = fmt.Sprint(x)
	}
	return strings.Join(parts, ", ")
}

// fewMax bounds how many items a Detail lists, so that a run that lost a
// thousand messages still prints a readable sentence.
const fewMax = 5

// few lists at most fewMax items and says how many were left out.
func few[T any](xs []T) string {
	parts := make([]string, 0, fewMax)
	for i, x := range xs {
		if i == fewMax {
			parts = append(parts, fmt.Sprintf("and %d more", len(xs)-fewMax))
			break
		}
		parts = append(parts, fmt.Sprint(x))
	}
	return strings.Join(parts, ", ")
}

// sortedKeys returns a map's keys in order: map iteration order must never
// reach a checker's output.
func sortedKeys[V any](m map[string]V) []string {
	return slices.Sorted(maps.Keys(m))
}
