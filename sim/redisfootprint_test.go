package sim

import (
	"context"
	"testing"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/relaysim/relaysim/sim/dst"
	"github.com/relaysim/relaysim/system"
)

func cmd(args ...any) redis.Cmder { return redis.NewCmd(context.Background(), args...) }

// Each class of command: its keys at their positions, read or written;
// whatever the allowlist does not know touches everything (nil), with a
// reason.
func TestRedisTouchClasses(t *testing.T) {
	for _, tc := range []struct {
		cmd  redis.Cmder
		want string // dst.FormatTouch; "*" is everything
	}{
		{cmd("ping"), ""},
		{cmd("get", "a"), "r:redis:a"},
		{cmd("set", "a", "1", "px", 10), "w:redis:a"},
		{cmd("hset", "h", "f", "v"), "w:redis:h"},
		{cmd("pexpire", "a", 10), "w:redis:a"},
		{cmd("mget", "a", "b"), "r:redis:a r:redis:b"},
		{cmd("del", "a", "b"), "w:redis:a w:redis:b"},
		{cmd("mset", "a", "1", "b", "2"), "w:redis:a w:redis:b"},
		{cmd("rename", "a", "b"), "w:redis:a w:redis:b"},
		{cmd("smove", "s", "d", "m"), "w:redis:s w:redis:d"},
		{cmd("lmove", "s", "d", "left", "right"), "w:redis:s w:redis:d"},
		{cmd("sunionstore", "d", "a", "b"), "w:redis:d w:redis:a w:redis:b"},
		{cmd("zunionstore", "d", 2, "a", "b", "weights", 1, 2), "w:redis:d w:redis:a w:redis:b"},
		{cmd("keys", "room:*"), "*"},
		{cmd("scan", 0, "match", "*"), "*"},
		{cmd("flushall"), "*"},
		{cmd("object", "encoding", "a"), "*"}, // not on the allowlist
		{cmd("brandnew", "a", "b"), "*"},      // not on the allowlist
		{cmd("eval", "return 1", 1, "a"), "w:redis:a w:redis-script:" + sha1Hex("return 1") + " r:redis-scripts"}, // EVAL caches the script
		{cmd("eval", "return redis.call('GET', ARGV[1])", 0, "a"), "*"},
		{cmd("evalsha", "0123456789abcdef", 1, "a"), "*"}, // a script we never saw
		{cmd("evalsha", "x", "two", "a"), "*"},
	} {
		got, why := redisTouch(tc.cmd)
		assert.Equal(t, tc.want, dst.FormatTouch(got), "%v", tc.cmd.Args())
		assert.Equal(t, got == nil, why != "", "%v: a reason exactly when it touches everything (%q)", tc.cmd.Args(), why)
	}
}

// The relay's own scripts are shown to touch only their declared KEYS;
// scripts that build key names, call a command the allowlist does not
// know, or name it at run time cannot be, and touch everything.
func TestCheckScript(t *testing.T) {
	srcs := system.ScriptSources()
	require.NotEmpty(t, srcs)
	for _, src := range srcs {
		assert.Empty(t, CheckScript(src), "a relay script:\n%s", src)
		got, why := redisTouch(cmd("evalsha", sha1Hex(src), 1, "k"))
		assert.Equal(t, "w:redis:k r:redis-script:"+sha1Hex(src)+" r:redis-scripts", dst.FormatTouch(got), why) // EVALSHA reads the cache
	}
	for src, want := range map[string]string{
		"return redis.call('GET', KEYS[1])":                           "",
		"for i = 1, #KEYS do redis.call('SET', KEYS[i], ARGV[i]) end": "",
		"return redis.call('GET', 'room:' .. ARGV[1])":                "a script calling get on a key not of its KEYS",
		"local k = KEYS[1]; return redis.call('GET', k)":              "a script calling get on a key not of its KEYS",
		"return redis.call('RENAME', KEYS[1], ARGV[1])":               "a script calling rename on a key not of its KEYS",
		"return redis.call('KEYS', '*')":                              "a script calling keys",
		"return redis.call(ARGV[1], KEYS[1])":                         "a script calling a command it names at run time",
		"return redis.call('OBJECT', 'encoding', KEYS[1])":            "a script calling unknown command object",
		"local f = redis.call; return f('GET', 'x')":                  "a script passing redis.call around",
		"redis.setresp(3); return redis.call('GET', KEYS[1])":         "a script using redis.setresp",
		"return redis.pcall('DEL', KEYS[1], KEYS[2])":                 "",
		"return redis.call('DEL', unpack(KEYS))":                      "a script calling del on a key not of its KEYS",
	} {
		assert.Equal(t, want, CheckScript(src), src)
	}
}
