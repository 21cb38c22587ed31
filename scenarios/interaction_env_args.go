package scenarios

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/cockroachdb/datadriven"

	"github.com/relaysim/relaysim/system"
)

// args are one command's arguments, read by name and type. Every key must
// be one the command takes, given once; the first problem met is kept and
// reported (a handler reads on and returns early where it matters).
type args struct {
	e   *Env
	cmd string
	m   map[string][]string
	err error
}

func newArgs(e *Env, d *datadriven.TestData, known ...string) (*args, error) {
	a := &args{e: e, cmd: d.Cmd, m: map[string][]string{}}
	for _, arg := range d.CmdArgs {
		if !contains(known, arg.Key) {
			takes := "no arguments"
			if len(known) > 0 {
				takes = strings.Join(known, ", ")
			}
			return nil, fmt.Errorf("%s: unknown argument %q (it takes %s)", d.Cmd, arg.Key, takes)
		}
		if _, dup := a.m[arg.Key]; dup {
			return nil, fmt.Errorf("%s: argument %q given twice", d.Cmd, arg.Key)
		}
		a.m[arg.Key] = arg.Vals
	}
	if strings.TrimSpace(d.Input) != "" {
		return nil, fmt.Errorf("%s: takes no input lines", d.Cmd)
	}
	return a, nil
}

func (a *args) fail(format string, v ...any) {
	if a.err == nil {
		a.err = fmt.Errorf("%s: "+format, append([]any{a.cmd}, v...)...)
	}
}

func (a *args) has(key string) bool { _, ok := a.m[key]; return ok }

// list returns key's values: "a,b" and "(a,b)" both give [a b]. Each
// may be Go-quoted (unquote).
func (a *args) list(key string) []string {
	var out []string
	for _, v := range a.m[key] {
		for _, s := range strings.Split(v, ",") {
			if s = strings.TrimSpace(s); s != "" {
				out = append(out, a.unquote(key, s))
			}
		}
	}
	return out
}

// unquote reads a value: as it is (any UTF-8 but a space, '=' before the
// value, ',' in a list, or a leading '('), or Go-quoted when it starts
// with '"', for a name no bare word can spell: "caf\xe9" (invalid UTF-8),
// "a\x01b", "a\u3000b", "" (empty).
func (a *args) unquote(key, v string) string {
	if !strings.HasPrefix(v, `"`) {
		return v
	}
	u, err := strconv.Unquote(v)
	if err != nil {
		a.fail("%s=%s is not a Go-quoted string", key, v)
		return ""
	}
	return u
}

// str returns key's single value; required keys must be present.
func (a *args) str(key string, required bool) string {
	vs, ok := a.m[key]
	switch {
	case !ok:
		if required {
			a.fail("missing argument %s=", key)
		}
		return ""
	case len(vs) != 1 || vs[0] == "":
		a.fail("%s= wants one value, got %q", key, strings.Join(vs, ","))
		return ""
	}
	return a.unquote(key, vs[0])
}

func (a *args) integer(key string, def int) int {
	if !a.has(key) {
		return def
	}
	s := a.str(key, true)
	n, err := strconv.Atoi(s)
	if err != nil || n < 0 {
		a.fail("%s=%s is not a count", key, s)
	}
	return n
}

func (a *args) duration(key string, required bool) time.Duration {
	s := a.str(key, required)
	if s == "" {
		return 0
	}
	d, err := time.ParseDuration(s)
	if err != nil || d <= 0 {
		a.fail("%s=%s is not a positive duration (like 2s or 500ms)", key, s)
	}
	return d
}

// node returns the index of the node key names ("n2" -> 1).
func (a *args) node(key string, required bool) int {
	s := a.str(key, required)
	if s == "" {
		return 0
	}
	i, ok := a.e.c.NodeIndex(s)
	if !ok {
		a.fail("%s=%s: no such node (the cluster has %s)", key, s, strings.Join(a.e.c.NodeIDs(), " "))
	}
	return i
}

// protocol returns the relay protocol version key names ("v3" -> 3), 0
// when absent.
func (a *args) protocol(key string) int {
	s := a.str(key, false)
	if s == "" {
		return 0
	}
	v, err := system.ParseProtocol(s)
	if err != nil {
		a.fail("%s=%s: %v", key, s, err)
	}
	return v
}

// versions returns one protocol version per node ("v1,v1,v3").
func (a *args) versions(key string) []int {
	var out []int
	for _, s := range a.list(key) {
		v, err := system.ParseProtocol(s)
		if err != nil {
			a.fail("%s=: %v", key, err)
			return nil
		}
		out = append(out, v)
	}
	return out
}

// legacy returns the legacy behaviours key names for one node (system
// ParseLegacy: "all", "none", or behaviours joined by '+' or ','), and
// whether key was given.
func (a *args) legacy(key string) (system.Legacy, bool) {
	if !a.has(key) {
		return system.Legacy{}, false
	}
	s := strings.Join(a.list(key), ",")
	if s == "" {
		a.fail("%s= wants a value (all, none, or names+idempotency+deregister)", key)
		return system.Legacy{}, false
	}
	l, err := parseLegacy(s)
	if err != nil {
		a.fail("%s=%s: %v", key, s, err)
	}
	return l, true
}

// legacies returns one node's legacy behaviours per node ("all,none":
// n1 unfixed, n2 fixed; a node's behaviours are joined by '+').
func (a *args) legacies(key string) []system.Legacy {
	var out []system.Legacy
	for _, s := range a.list(key) {
		l, err := parseLegacy(s)
		if err != nil {
			a.fail("%s=: %v", key, err)
			return nil
		}
		out = append(out, l)
	}
	return out
}

func parseLegacy(s string) (system.Legacy, error) {
	return system.ParseLegacy(strings.ReplaceAll(s, "+", ","))
}

// legacyShown is l as the commands spell it: "all", "none", or the
// behaviours joined by '+'.
func legacyShown(l system.Legacy) string {
	if l == (system.Legacy{Names: true, Idempotency: true, Deregister: true}) {
		return "all"
	}
	return strings.ReplaceAll(l.String(), ",", "+")
}
