package scenarios

import (
	"flag"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/cockroachdb/datadriven"

	"github.com/relaysim/relaysim/system"
)

// RunFile plays the scenario file at path in mode and returns each
// command's output, in order. Call it inside a synctest bubble (the
// cluster lives there); the cluster is torn down before it returns. The
// first bad command stops the file, and the error names file and line.
//
// The file is parsed by datadriven (RunTestFromStringAny), whose check of
// the expected output this pass satisfies by handing it back: the outputs
// of every mode are compared with the file afterwards, merged (MergeModes).
func RunFile(t testing.TB, path string, mode system.Mode) ([]string, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	e := NewEnv(mode)
	defer e.Close()
	defer quietly()()
	var outs []string
	var ferr error
	datadriven.RunTestFromStringAny(t, string(data), func(t testing.TB, d *datadriven.TestData) string {
		if ferr != nil {
			return d.Expected
		}
		out, err := e.Handle(d)
		if err != nil {
			ferr = fmt.Errorf("%s: %w", filePos(path, d.Pos), err)
			return d.Expected
		}
		outs = append(outs, out)
		return d.Expected
	})
	return outs, ferr
}

// quietly turns datadriven's echo of every command off (under -v it would
// print each file once per mode, with the expected output it was handed
// back) and returns what turns it back.
func quietly() func() {
	fl := flag.Lookup("datadriven-quiet")
	if fl == nil {
		return func() {}
	}
	old := fl.Value.String()
	_ = fl.Value.Set("true")
	return func() { _ = fl.Value.Set(old) }
}

// filePos turns datadriven's "<string>:12" into "path:12".
func filePos(path, pos string) string {
	if i := strings.LastIndexByte(pos, ':'); i >= 0 {
		return path + pos[i:]
	}
	return path
}

// MergeModes folds the outputs of the same file played in several modes
// into one output per command. A line every mode printed is printed bare;
// a line only some modes printed is led by their names, e.g.
// "[single] n1 relay.single -> n2 r1#1 recipients=1 attempt=2 ok". Lines
// are aligned by longest common subsequence, mode after mode, so a line
// keeps its place in the story.
func MergeModes(modes []system.Mode, outs [][]string) []string {
	if len(outs) == 0 {
		return nil
	}
	merged := make([]string, len(outs[0]))
	for cmd := range outs[0] {
		per := make([][]string, len(modes))
		for m := range modes {
			if cmd < len(outs[m]) {
				per[m] = splitLines(outs[m][cmd])
			}
		}
		merged[cmd] = mergeLines(modes, per)
	}
	return merged
}

// tagged is one merged line and the modes that printed it.
type tagged struct {
	text  string
	modes []bool
}

func mergeLines(modes []system.Mode, per [][]string) string {
	var acc []tagged
	for m, lines := range per {
		acc = align(acc, lines, m, len(modes))
	}
	var b strings.Builder
	for _, l := range acc {
		var who []string
		for m, ok := range l.modes {
			if ok {
				who = append(who, string(modes[m]))
			}
		}
		if len(who) < len(modes) {
			fmt.Fprintf(&b, "[%s] ", strings.Join(who, ","))
		}
		b.WriteString(l.text)
		b.WriteByte('\n')
	}
	return b.String()
}

// align merges mode m's lines into acc by their longest common
// subsequence with acc's lines: matched lines gain mode m, the others are
// inserted where they fall (acc's first, at a tie).
func align(acc []tagged, lines []string, m, nModes int) []tagged {
	n, k := len(acc), len(lines)
	lcs := make([][]int, n+1)
	for i := range lcs {
		lcs[i] = make([]int, k+1)
	}
	for i := n - 1; i >= 0; i-- {
		for j := k - 1; j >= 0; j-- {
			if acc[i].text == lines[j] {
				lcs[i][j] = lcs[i+1][j+1] + 1
			} else {
				lcs[i][j] = max(lcs[i+1][j], lcs[i][j+1])
			}
		}
	}
	out := make([]tagged, 0, n+k)
	i, j := 0, 0
	for i < n || j < k {
		switch {
		case i < n && j < k && acc[i].text == lines[j]:
			acc[i].modes[m] = true
			out = append(out, acc[i])
			i, j = i+1, j+1
		case i < n && (j == k || lcs[i+1][j] >= lcs[i][j+1]):
			out = append(out, acc[i])
			i++
		default:
			t := tagged{text: lines[j], modes: make([]bool, nModes)}
			t.modes[m] = true
			out = append(out, t)
			j++
		}
	}
	return out
}

func splitLines(s string) []string {
	s = strings.TrimSuffix(s, "\n")
	if s == "" {
		return nil
	}
	return strings.Split(s, "\n")
}
