package dst

import "strings"

// Access is one thing an operation touches: an object's name (a Redis key,
// a node's memory, a client, a link) and whether it writes it. The harness
// says what an op touches (GateSpec.Touch); the explorer only compares
// names. An op's footprint covers everything that runs from its release
// until the bubble is quiet again: its own goroutine up to its next gate
// and every goroutine that wakes because of it.
type Access struct {
	Obj   string
	Write bool
}

// R and W build accesses.
func R(obj string) Access { return Access{Obj: obj} }
func W(obj string) Access { return Access{Obj: obj, Write: true} }

// Dependent reports whether two footprints may not commute: they touch a
// common object and one of them writes it. A nil footprint is unknown and
// touches everything (dependent with all: always sound, only slower).
func Dependent(a, b []Access) bool {
	if a == nil || b == nil {
		return true
	}
	for _, x := range a {
		for _, y := range b {
			if x.Obj == y.Obj && (x.Write || y.Write) {
				return true
			}
		}
	}
	return false
}

// FormatTouch renders a footprint for reports and tests: "w:node:n1 r:redis:k".
func FormatTouch(t []Access) string {
	if t == nil {
		return "*"
	}
	var b strings.Builder
	for i, a := range t {
		if i > 0 {
			b.WriteByte(' ')
		}
		if a.Write {
			b.WriteString("w:")
		} else {
			b.WriteString("r:")
		}
		b.WriteString(a.Obj)
	}
	return b.String()
}
