package sim

import (
	"crypto/sha1"
	"encoding/hex"
	"fmt"
	"regexp"
	"strings"

	"github.com/redis/go-redis/v9"

	"github.com/relaysim/relaysim/sim/dst"
	"github.com/relaysim/relaysim/system"
)

// The Redis footprint classifier fails closed: what a command touches is
// read off an allowlist of commands with their key positions (those the
// relay uses, and the common multi-key ones), and a command not on it, one
// that spans the keyspace (KEYS, SCAN, FLUSHALL...), a script the
// classifier cannot show to touch only its declared KEYS, or arguments it
// cannot read, touches everything: it is dependent with every Redis op.
// That is always sound (only slower). Each such op is counted by reason
// (Cluster.UnknownFootprints, the explore report's "unknown footprints"
// line), so a new command the relay starts using shows up as a slower,
// flagged search rather than a silently unsound one.

// keyKind is how a command names its keys.
type keyKind int

const (
	keysNone     keyKind = iota // no key (PING, MULTI...)
	keysRange                   // args[first], args[first+step], ... up to last
	keysEval                    // EVAL/EVALSHA: numkeys at 2, keys from 3
	keysNumDest                 // ZUNIONSTORE-like: a destination at 1, numkeys at 2, keys from 3
	keysEveryKey                // the whole keyspace (KEYS, SCAN, FLUSHALL...)
)

// keySpec is a command's key positions (args[0] is the command), as in
// Redis's COMMAND INFO: last < 0 counts from the end (-1: the last arg).
type keySpec struct {
	kind              keyKind
	first, last, step int
	write             bool
}

func one(write bool) keySpec {
	return keySpec{kind: keysRange, first: 1, last: 1, step: 1, write: write}
}
func all(write bool) keySpec {
	return keySpec{kind: keysRange, first: 1, last: -1, step: 1, write: write}
}
func two(write bool) keySpec {
	return keySpec{kind: keysRange, first: 1, last: 2, step: 1, write: write}
}
func pairs(write bool) keySpec {
	return keySpec{kind: keysRange, first: 1, last: -1, step: 2, write: write}
}
func special(k keyKind) keySpec { return keySpec{kind: k, write: true} }
func namesOf(s string) []string { return strings.Fields(s) }

// redisCommands is the allowlist. Writes are conservative: a command that
// reads one key and writes another (SUNIONSTORE, LMOVE, COPY) writes both.
var redisCommands = func() map[string]keySpec {
	m := map[string]keySpec{}
	add := func(names string, s keySpec) {
		for _, n := range namesOf(names) {
			m[n] = s
		}
	}
	add("ping echo time info multi exec discard hello client select readonly", keySpec{kind: keysNone})
	// Single-key reads.
	add("get strlen getrange ttl pttl type hget hgetall hexists hmget hkeys hvals hlen hstrlen "+
		"smembers sismember smismember scard srandmember lrange lindex llen lpos "+
		"zrange zrangebyscore zrevrange zrevrangebyscore zscore zmscore zcard zrank zrevrank zcount "+
		"xlen xrange xrevrange bitcount getbit pfcount dump objectfreq", one(false))
	// Single-key writes.
	add("set setnx setex psetex getset getdel getex incr incrby incrbyfloat decr decrby append setrange "+
		"expire pexpire expireat pexpireat persist hset hsetnx hmset hdel hincrby hincrbyfloat "+
		"sadd srem spop lpush rpush lpushx rpushx lpop rpop lset ltrim lrem linsert "+
		"zadd zrem zincrby zremrangebyscore zremrangebyrank zremrangebylex zpopmin zpopmax "+
		"xadd xtrim xdel setbit pfadd restore", one(true))
	// Every argument a key.
	add("mget exists sunion sinter sdiff", all(false))
	add("del unlink touch watch sunionstore sinterstore sdiffstore pfmerge", all(true))
	add("mset msetnx", pairs(true))
	add("rename renamenx smove lmove rpoplpush copy", two(true))
	add("eval evalsha eval_ro evalsha_ro", special(keysEval))
	add("zunionstore zinterstore zdiffstore", special(keysNumDest))
	add("keys scan randomkey flushall flushdb swapdb move migrate sort sort_ro dbsize", special(keysEveryKey))
	return m
}()

// redisTouch is what a command touches in Redis: its keys, read or
// written; nil (everything) with the reason when it cannot be classified.
func redisTouch(cmd redis.Cmder) ([]dst.Access, string) {
	args := cmd.Args()
	name := strings.ToLower(cmd.Name())
	str := func(i int) (string, bool) {
		if i < 0 || i >= len(args) {
			return "", false
		}
		s, ok := args[i].(string)
		return s, ok
	}
	integer := func(i int) (int, bool) {
		if i < 0 || i >= len(args) {
			return 0, false
		}
		switch v := args[i].(type) {
		case int:
			return v, true
		case int64:
			return int(v), true
		case string:
			var n int
			_, err := fmt.Sscan(v, &n)
			return n, err == nil
		}
		return 0, false
	}
	keys := func(from, n int, write bool) ([]dst.Access, string) {
		out := make([]dst.Access, 0, n)
		for i := from; i < from+n; i++ {
			k, ok := str(i)
			if !ok {
				return nil, name + " with a key that is not a string"
			}
			out = append(out, dst.Access{Obj: "redis:" + k, Write: write})
		}
		return out, ""
	}
	if name == "script" {
		return []dst.Access{dst.W("redis-scripts")}, ""
	}
	spec, ok := redisCommands[name]
	if !ok {
		return nil, "unknown command " + name
	}
	switch spec.kind {
	case keysNone:
		return []dst.Access{}, ""
	case keysEveryKey:
		return nil, name + " spans the keyspace"
	case keysEval:
		n, ok := integer(2)
		if !ok || n < 0 || 3+n > len(args) {
			return nil, name + " with unreadable numkeys"
		}
		src, _ := str(1)
		var why string
		if strings.HasPrefix(name, "evalsha") {
			why = scriptVerdict(src)
		} else {
			why = scriptVerdict(sha1Hex(src)) // a declared script: checked once
			if strings.HasPrefix(why, "a script the relay does not declare") {
				why = CheckScript(src) // a body at hand: checked here
			}
		}
		if why != "" {
			return nil, why
		}
		ks, why := keys(3, n, true)
		if why != "" {
			return nil, why
		}
		// Redis' script cache: EVAL caches the script, EVALSHA misses
		// (NOSCRIPT) until then, and SCRIPT FLUSH empties it.
		if strings.HasPrefix(name, "evalsha") {
			ks = append(ks, dst.R("redis-script:"+strings.ToLower(src)), dst.R("redis-scripts"))
		} else {
			ks = append(ks, dst.W("redis-script:"+sha1Hex(src)), dst.R("redis-scripts"))
		}
		return ks, ""
	case keysNumDest:
		n, ok := integer(2)
		if !ok || n < 0 || 3+n > len(args) {
			return nil, name + " with unreadable numkeys"
		}
		d, why := keys(1, 1, true)
		if why != "" {
			return nil, why
		}
		rest, why := keys(3, n, true)
		if why != "" {
			return nil, why
		}
		return append(d, rest...), ""
	}
	last := spec.last
	if last < 0 {
		last = len(args) + last
	}
	var out []dst.Access
	for i := spec.first; i <= last; i += spec.step {
		a, why := keys(i, 1, spec.write)
		if why != "" {
			return nil, why
		}
		out = append(out, a...)
	}
	if out == nil {
		out = []dst.Access{}
	}
	return out, ""
}

func sha1Hex(s string) string {
	h := sha1.Sum([]byte(s))
	return hex.EncodeToString(h[:])
}

// scripts maps the SHA1 of every script the relay declares
// (system.ScriptSources) to its verdict: "" when it touches only its
// declared KEYS, else why not. It never grows: an EVALSHA of any other
// script touches everything, whatever ran before (the same in every run).
var scripts = func() map[string]string {
	m := map[string]string{}
	for _, src := range system.ScriptSources() {
		m[sha1Hex(src)] = CheckScript(src)
	}
	return m
}()

// scriptVerdict is the verdict of the script of that SHA1.
func scriptVerdict(sha string) string {
	if v, ok := scripts[strings.ToLower(sha)]; ok {
		return v
	}
	return "a script the relay does not declare (sha " + sha[:min(8, len(sha))] + ")"
}

// redisAPI are the names a script may use of the redis table.
var redisAPI = regexp.MustCompile(`\bredis\s*\.\s*([A-Za-z_]+)`)

var declaredKey = regexp.MustCompile(`^KEYS\s*\[[^\[\]]+\]$`)

// CheckScript checks statically that a Lua script touches only its
// declared keys: every redis.call / redis.pcall names a command of the
// allowlist as a literal, and every key position of it is KEYS[...]
// (never a name built from ARGV or a string). It returns "" when it
// does, else why it cannot be shown (the script then touches everything).
func CheckScript(src string) string {
	for _, m := range redisAPI.FindAllStringSubmatchIndex(src, -1) {
		fn := src[m[2]:m[3]]
		switch fn {
		case "call", "pcall":
		case "error_reply", "status_reply", "log", "sha1hex", "LOG_DEBUG", "LOG_VERBOSE", "LOG_NOTICE", "LOG_WARNING":
			continue
		default:
			return "a script using redis." + fn
		}
		rest := strings.TrimLeft(src[m[1]:], " \t")
		if !strings.HasPrefix(rest, "(") {
			return "a script passing redis." + fn + " around"
		}
		args, ok := luaArgs(rest[1:])
		if !ok || len(args) == 0 {
			return "a script with a redis." + fn + " it cannot read"
		}
		cmd, ok := luaString(args[0])
		if !ok {
			return "a script calling a command it names at run time"
		}
		cmd = strings.ToLower(cmd)
		spec, known := redisCommands[cmd]
		if !known {
			return "a script calling unknown command " + cmd
		}
		switch spec.kind {
		case keysNone:
			continue
		case keysRange:
		default:
			return "a script calling " + cmd
		}
		last := spec.last
		if last < 0 {
			last = len(args) + last
		}
		for i := spec.first; i <= last; i += spec.step {
			if i >= len(args) || !declaredKey.MatchString(strings.TrimSpace(args[i])) {
				return fmt.Sprintf("a script calling %s on a key not of its KEYS", cmd)
			}
		}
	}
	return ""
}

// luaArgs splits the arguments of a call whose opening parenthesis was
// just read, at top-level commas; false if the call does not close.
func luaArgs(s string) ([]string, bool) {
	var args []string
	depth, start := 0, 0
	for i := 0; i < len(s); i++ {
		switch c := s[i]; c {
		case '\'', '"':
			j := i + 1
			for ; j < len(s) && s[j] != c; j++ {
				if s[j] == '\\' {
					j++
				}
			}
			if j >= len(s) {
				return nil, false
			}
			i = j
		case '(', '[', '{':
			depth++
		case ')', ']', '}':
			if depth == 0 {
				if c != ')' {
					return nil, false
				}
				if a := strings.TrimSpace(s[start:i]); a != "" || len(args) > 0 {
					args = append(args, a)
				}
				return args, true
			}
			depth--
		case ',':
			if depth == 0 {
				args = append(args, strings.TrimSpace(s[start:i]))
				start = i + 1
			}
		}
	}
	return nil, false
}

// luaString is a plain string literal's value.
func luaString(s string) (string, bool) {
	s = strings.TrimSpace(s)
	if len(s) < 2 || (s[0] != '\'' && s[0] != '"') || s[len(s)-1] != s[0] || strings.ContainsAny(s[1:len(s)-1], "\\'\"") {
		return "", false
	}
	return s[1 : len(s)-1], true
}
