package scenarios

import (
	"strings"
	"testing"

	"github.com/cockroachdb/datadriven"
	"github.com/stretchr/testify/assert"

	"github.com/relaysim/relaysim/system"
)

// FuzzScenarioLine: a scenario command line goes through datadriven's
// line parser and the commands' argument readers (every reader on every
// argument a command takes) without panicking, and every error names the
// command it is about.
func FuzzScenarioLine(f *testing.F) {
	for _, s := range []string{
		"cluster nodes=2 versions=v1,v9", "send user=u1 room=r1 msg=hi node=n1", "run for=5x",
		"partition a=(n1,n2) b=n3", "drop-responses from=n1 to=n2 for=2s", "connect usr=u1", "heal",
		"restart node=n1 protocol=v2", `send user="u 1" room=r1 msg=(a,b)`, "cluster nodes=-3 seed=x",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, line string) {
		cmd, cargs, err := datadriven.ParseLine(line)
		if err != nil {
			return
		}
		h, ok := handlers[cmd]
		if !ok {
			return
		}
		a, err := newArgs(NewEnv(system.ModeBulk), &datadriven.TestData{Cmd: cmd, CmdArgs: cargs}, h.args...)
		if err != nil {
			assert.True(t, strings.HasPrefix(err.Error(), cmd+": "), "%q: %v", line, err)
			return
		}
		for _, k := range h.args {
			a.list(k)
			a.str(k, false)
			a.integer(k, 0)
			a.duration(k, false)
			a.protocol(k)
			a.versions(k)
		}
		if a.err != nil {
			assert.True(t, strings.HasPrefix(a.err.Error(), cmd+": "), "%q: %v", line, a.err)
		}
	})
}
