// The plan text's vocabulary, shared by action, fault and mix lines
// (text.go): the typed field codecs (how one field is written, read
// and found zero), tokens, names, nodes, times and counts.

package plan

import (
	"fmt"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"
)

// field is one field of a line's value: how it is written, read and
// whether it is zero (then a line leaves it out). A flag is written as
// its bare key when true.
type field[T any] struct {
	format func(v *T, q func(string) string) string
	parse  func(v *T, s string) error
	zero   func(v *T) bool
	flag   bool
}

func strField[T any](get func(*T) *string) field[T] {
	return field[T]{
		format: func(v *T, q func(string) string) string { return q(*get(v)) },
		parse: func(v *T, s string) (err error) {
			*get(v), err = parseName(s)
			return err
		},
		zero: func(v *T) bool { return *get(v) == "" },
	}
}

func nodeField[T any](get func(*T) *int, none bool) field[T] {
	return field[T]{
		format: func(v *T, _ func(string) string) string { return formatNode(*get(v)) },
		parse: func(v *T, s string) (err error) {
			*get(v), err = parseNode(s, none)
			return err
		},
		zero: func(v *T) bool { return *get(v) == 0 },
	}
}

func durField[T any](get func(*T) *time.Duration) field[T] {
	return field[T]{
		format: func(v *T, _ func(string) string) string { return get(v).String() },
		parse: func(v *T, s string) (err error) {
			*get(v), err = parseDuration(s)
			return err
		},
		zero: func(v *T) bool { return *get(v) == 0 },
	}
}

func intField[T any](get func(*T) *int, prefix string) field[T] {
	return field[T]{
		format: func(v *T, _ func(string) string) string { return prefix + strconv.Itoa(*get(v)) },
		parse: func(v *T, s string) error {
			n, err := parseCount(strings.TrimPrefix(s, prefix))
			if err != nil || !strings.HasPrefix(s, prefix) {
				return fmt.Errorf("%q: want %sN, N a whole number >= 0", s, prefix)
			}
			*get(v) = n
			return nil
		},
		zero: func(v *T) bool { return *get(v) == 0 },
	}
}

func flagField[T any](get func(*T) *bool) field[T] {
	return field[T]{
		format: func(*T, func(string) string) string { return "" },
		parse: func(v *T, s string) error {
			if s != "" {
				return fmt.Errorf("a flag takes no value")
			}
			*get(v) = true
			return nil
		},
		zero: func(v *T) bool { return !*get(v) },
		flag: true,
	}
}

// splitTokens splits a line at spaces; a token that starts with a quote,
// or whose value (after key=) does, runs to the quote's end.
func splitTokens(line string) ([]string, error) {
	var out []string
	i := 0
	for {
		for i < len(line) && (line[i] == ' ' || line[i] == '\t') {
			i++
		}
		if i == len(line) {
			break
		}
		start := i
		for i < len(line) && line[i] != ' ' && line[i] != '\t' {
			if line[i] == '"' && (i == start || line[i-1] == '=') {
				q, err := strconv.QuotedPrefix(line[i:])
				if err != nil {
					return nil, fmt.Errorf("token %q: unterminated or bad quoted string", line[start:])
				}
				i += len(q)
				if i < len(line) && line[i] != ' ' && line[i] != '\t' {
					return nil, fmt.Errorf("token %q: text after a quoted string", tokenAt(line, start))
				}
				break
			}
			i++
		}
		out = append(out, line[start:i])
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("empty line")
	}
	return out, nil
}

func tokenAt(line string, i int) string {
	if j := strings.IndexAny(line[i:], " \t"); j >= 0 {
		return line[i : i+j]
	}
	return line[i:]
}

// isKeyValue reports whether a token is key=value (a bare key's '=' is
// before any quote).
func isKeyValue(t string) bool {
	i := strings.IndexByte(t, '=')
	return i > 0 && !strings.ContainsRune(t[:i], '"')
}

// parseKeys reads key=value tokens (or a bare key: a flag) through set,
// refusing a key given twice or already said by the head.
func parseKeys(toks, said []string, set func(k, v string) error) error {
	seen := map[string]bool{}
	for _, t := range toks {
		k, v, _ := strings.Cut(t, "=")
		if strings.HasPrefix(k, `"`) || k == "" {
			return fmt.Errorf("token %q: want key=value", t)
		}
		if seen[k] || has(said, k) {
			return fmt.Errorf("key %q given twice", k)
		}
		seen[k] = true
		if err := set(k, v); err != nil {
			return fmt.Errorf("%s: %w", t, err)
		}
	}
	return nil
}

// plainName reports whether s can be written bare: letters, digits and
// _ . : / @ + -, not starting with a quote, valid UTF-8, non-empty.
func plainName(s string) bool {
	if s == "" || !utf8.ValidString(s) {
		return false
	}
	for _, r := range s {
		if !unicode.IsLetter(r) && !unicode.IsDigit(r) && !strings.ContainsRune("_.:/@+-", r) {
			return false
		}
	}
	return true
}

func quoteName(s string) string {
	if plainName(s) {
		return s
	}
	return strconv.Quote(s)
}

func parseName(t string) (string, error) {
	if strings.HasPrefix(t, `"`) {
		s, err := strconv.Unquote(t)
		if err != nil {
			return "", fmt.Errorf("%s is not a Go-quoted string", t)
		}
		return s, nil
	}
	if t == "" || !plainName(t) {
		return "", fmt.Errorf("%q: quote a name that is not plain (letters, digits, _ . : / @ + -)", t)
	}
	return t, nil
}

// formatNode writes a node index as n1, n2, ... (-1: none).
func formatNode(i int) string {
	if i == -1 {
		return "none"
	}
	return "n" + strconv.Itoa(i+1)
}

func parseNode(t string, none bool) (int, error) {
	if none && t == "none" {
		return -1, nil
	}
	if strings.HasPrefix(t, "n") {
		if n, err := strconv.Atoi(t[1:]); err == nil && n >= 1 && n <= 1<<20 && t[1] != '+' && t[1] != '0' {
			return n - 1, nil
		}
	}
	if none {
		return 0, fmt.Errorf("want a node n1, n2, ... or none")
	}
	return 0, fmt.Errorf("want a node n1, n2, ...")
}

func parseTime(t string) (time.Duration, error) {
	d, err := parseDuration(t)
	if err != nil {
		return 0, fmt.Errorf("time %q: want a virtual time such as 1.25s", t)
	}
	return d, nil
}

// parseDuration reads a duration >= 0 in Duration.String's form.
func parseDuration(t string) (time.Duration, error) {
	d, err := time.ParseDuration(t)
	if err != nil || d < 0 {
		return 0, fmt.Errorf("%q: want a duration >= 0 such as 1.5s or 250ms", t)
	}
	return d, nil
}

func parseCount(t string) (int, error) {
	n, err := strconv.Atoi(t)
	if err != nil || n < 0 || strconv.Itoa(n) != t {
		return 0, fmt.Errorf("%q: want a whole number >= 0", t)
	}
	return n, nil
}

func has(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
