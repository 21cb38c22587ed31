// What a run chose, for replay and inspection: the schedule as stable op
// keys, its text form (FormatSchedule, ParseSchedule: the replay file),
// and the levels' views for the commutation check.

package dst

import (
	"fmt"
	"strings"
)

// Schedule is this run's choices, one per level, as stable op keys: the
// replay file's lines.
func (e *Explorer) Schedule() []string {
	out := make([]string, 0, len(e.tree))
	for _, l := range e.tree[:min(e.depth, len(e.tree))] {
		out = append(out, l.chosen)
	}
	return out
}

// FormatSchedule writes a schedule as text: a header line, then a choice
// per line (op keys may hold spaces; a NUL tie is written as \0).
func FormatSchedule(s []string) string {
	var b strings.Builder
	b.WriteString("# relaysim schedule v1: one choice per line (op key, key!fault, or @tick)\n")
	for _, c := range s {
		b.WriteString(strings.ReplaceAll(c, "\x00", `\0`))
		b.WriteByte('\n')
	}
	return b.String()
}

// scheduleBuild starts the line naming the build a schedule was found on.
const scheduleBuild = "# build: "

// FormatScheduleOn is FormatSchedule with the build the schedule was
// found on (sim.SourceBuild) on the line after the header: a replay on a
// build that diverges from it says the schedule no longer applies rather
// than calling it a determinism bug.
func FormatScheduleOn(s []string, build string) string {
	text := FormatSchedule(s)
	i := strings.IndexByte(text, '\n') + 1
	return text[:i] + scheduleBuild + build + "\n" + text[i:]
}

// ScheduleBuild is the build a schedule's text names ("" for a file
// written before schedules carried it).
func ScheduleBuild(text string) string {
	for _, ln := range strings.Split(text, "\n") {
		if strings.HasPrefix(ln, scheduleBuild) {
			return strings.TrimSpace(strings.TrimPrefix(ln, scheduleBuild))
		}
		if ln != "" && !strings.HasPrefix(ln, "#") {
			break
		}
	}
	return ""
}

// ParseSchedule reads FormatSchedule's text (comment lines, the build
// line among them, are skipped).
func ParseSchedule(text string) ([]string, error) {
	lines := strings.Split(strings.TrimRight(text, "\n"), "\n")
	if len(lines) == 0 || !strings.HasPrefix(lines[0], "# relaysim schedule v1") {
		return nil, fmt.Errorf("not a relaysim schedule (want the header line %q)", "# relaysim schedule v1")
	}
	out := []string{}
	for _, ln := range lines[1:] {
		if ln == "" || strings.HasPrefix(ln, "#") {
			continue
		}
		out = append(out, strings.ReplaceAll(ln, `\0`, "\x00"))
	}
	return out, nil
}

// LevelView is one level of the last run, for the commutation check: the
// choice made and the ops parked then, with their footprints.
type LevelView struct {
	Chosen  string
	Keys    []string
	Touches [][]Access
	Lazy    []bool
}

// Levels returns the levels of the run that just ended.
func (e *Explorer) Levels() []LevelView {
	out := make([]LevelView, 0, len(e.tree))
	for _, l := range e.tree[:min(e.depth, len(e.tree))] {
		v := LevelView{Chosen: l.chosen}
		for _, c := range l.enabled {
			v.Keys = append(v.Keys, c.key)
			v.Touches = append(v.Touches, c.touch)
			v.Lazy = append(v.Lazy, c.lazy)
		}
		out = append(out, v)
	}
	return out
}
