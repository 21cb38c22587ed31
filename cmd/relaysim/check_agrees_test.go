package main

import (
	"bytes"
	"fmt"
	"os/exec"
	"path/filepath"
	"regexp"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestCheckHistoryAgreesWithTheRun saves runs' histories and judges them
// again offline: `relaysim check -history` must find exactly the
// violations the run found (none here). Seeds 2 and 3 send names that are
// not valid UTF-8; a history that wrote them as JSON text turned them into
// other names and check reported violations the run never had.
func TestCheckHistoryAgreesWithTheRun(t *testing.T) {
	type tc struct {
		mode string
		seed int
	}
	var cases []tc
	for seed := 1; seed <= 8; seed++ {
		cases = append(cases, tc{"bulk", seed})
	}
	cases = append(cases, tc{"single", 2}, tc{"single", 3}, tc{"stream", 2}, tc{"stream", 3})
	if testing.Short() {
		cases = []tc{{"bulk", 2}, {"bulk", 3}}
	}
	bin := buildRunner(t)
	count := regexp.MustCompile(`violations: (\d+)`)
	for _, c := range cases {
		t.Run(fmt.Sprintf("%s/%d", c.mode, c.seed), func(t *testing.T) {
			h := filepath.Join(t.TempDir(), "h.jsonl")
			ran, err := exec.Command(bin, "run", "-seed", fmt.Sprint(c.seed), "-mode", c.mode, "-history", h).CombinedOutput()
			require.NoError(t, err, "run: %s", ran)
			var out, errb bytes.Buffer
			code := run([]string{"check", "-history", h}, &out, &errb)
			require.Equal(t, exitOK, code, "check: %s%s", out.String(), errb.String())
			m := count.FindStringSubmatch(out.String())
			require.NotNil(t, m, out.String())
			require.Equal(t, "0", m[1], out.String())
		})
	}
}
