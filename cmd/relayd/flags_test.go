package main

import (
	"bytes"
	"net"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/relaysim/relaysim/system"
)

func env(kv map[string]string) func(string) string {
	return func(k string) string { return kv[k] }
}

func TestParseFlags(t *testing.T) {
	base := options{
		listen: "127.0.0.1:7000", redis: "127.0.0.1:6379", node: "n1", token: "t",
		mode: system.ModeBulk, protocol: 3, core: 30, max: 200, queue: 1000, channels: 1,
	}
	tests := []struct {
		name string
		args []string
		env  map[string]string
		want func(o *options)
	}{
		{"defaults are the seeds' pool in bulk mode", []string{"-node", "n1", "-token", "t"}, nil, func(*options) {}},
		{"every flag", []string{
			"-node", "n2", "-token", "s", "-listen", ":7002", "-advertise", "relay2:7002", "-redis", "redis:6379",
			"-mode", "single", "-protocol", "v1", "-core", "2", "-max", "4", "-queue", "8", "-channels", "3", "-user-secret", "us",
			"-takeover", "-peer-addr", "relay1:7001=127.0.0.1:9001, relay3:7003=127.0.0.1:9003",
		}, nil, func(o *options) {
			*o = options{listen: ":7002", advertise: "relay2:7002", redis: "redis:6379", node: "n2", token: "s",
				mode: system.ModeSingle, protocol: 1, core: 2, max: 4, queue: 8, channels: 3, userSecret: "us",
				takeover: true, peerAddrs: map[string]string{"relay1:7001": "127.0.0.1:9001", "relay3:7003": "127.0.0.1:9003"}}
		}},
		{"environment fallbacks", nil, map[string]string{
			"RELAYD_NODE": "n3", "RELAYD_TOKEN": "e", "RELAYD_LISTEN": ":7003", "RELAYD_ADVERTISE": "a:1",
			"RELAYD_REDIS": "r:1", "RELAYD_MODE": "single", "RELAYD_CORE": "1", "RELAYD_MAX": "2",
			"RELAYD_QUEUE": "0", "RELAYD_CHANNELS": "2", "RELAYD_PROTOCOL": "2", "RELAYD_USER_SECRET": "ue",
		}, func(o *options) {
			*o = options{listen: ":7003", advertise: "a:1", redis: "r:1", node: "n3", token: "e",
				mode: system.ModeSingle, protocol: 2, core: 1, max: 2, queue: 0, channels: 2, userSecret: "ue"}
		}},
		{"a flag wins over the environment", []string{"-mode", "bulk", "-node", "n1"},
			map[string]string{"RELAYD_MODE": "single", "RELAYD_NODE": "nX", "RELAYD_TOKEN": "t"}, func(*options) {}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var stderr bytes.Buffer
			got, err := parseFlags(tt.args, env(tt.env), &stderr)
			require.NoError(t, err, stderr.String())
			want := base
			tt.want(&want)
			assert.Equal(t, want, got)
			assert.Empty(t, stderr.String())
		})
	}
}

// TestBadFlagsExitWithUsage: relayd refuses bad settings with exit code 2,
// the reason and the usage on stderr, before touching the network.
func TestBadFlagsExitWithUsage(t *testing.T) {
	tests := []struct {
		name   string
		args   []string
		env    map[string]string
		reason string
	}{
		{"unknown flag", []string{"-node", "n1", "-token", "t", "-bogus"}, nil, "flag provided but not defined: -bogus"},
		{"missing node", []string{"-token", "t"}, nil, "-node is required"},
		{"missing token", []string{"-node", "n1"}, nil, "-token is required"},
		{"node id with @", []string{"-node", "n@1", "-token", "t"}, nil, `-node: node id "n@1": '@' is not allowed`},
		{"node id with :", []string{"-node", "eu:1", "-token", "t"}, nil, `-node: node id "eu:1": ':' is not allowed`},
		{"node id too long", []string{"-node", strings.Repeat("n", 65), "-token", "t"}, nil, "longer than 64 bytes"},
		{"unknown mode", []string{"-node", "n1", "-token", "t", "-mode", "fast"}, nil, `unknown relay mode "fast"`},
		{"unknown protocol", []string{"-node", "n1", "-token", "t", "-protocol", "v9"}, nil, `unknown relay protocol "v9" (want v1, v2 or v3)`},
		{"core above max", []string{"-node", "n1", "-token", "t", "-core", "5", "-max", "4"}, nil, "bad executor sizes"},
		{"no workers", []string{"-node", "n1", "-token", "t", "-core", "0", "-max", "0"}, nil, "bad executor sizes"},
		{"negative queue", []string{"-node", "n1", "-token", "t", "-queue", "-1"}, nil, "bad executor sizes"},
		{"no channels", []string{"-node", "n1", "-token", "t", "-channels", "0"}, nil, "-channels 0"},
		{"not a number", []string{"-node", "n1", "-token", "t", "-max", "many"}, nil, `invalid value "many"`},
		{"bad number in the environment", []string{"-node", "n1", "-token", "t"}, map[string]string{"RELAYD_CORE": "x"}, `RELAYD_CORE="x"`},
		{"stray argument", []string{"-node", "n1", "-token", "t", "extra"}, nil, "unexpected arguments"},
		{"peer address without VIA", []string{"-node", "n1", "-token", "t", "-peer-addr", "127.0.0.1:1"}, nil, "want ADDR=VIA"},
		{"peer address not host:port", []string{"-node", "n1", "-token", "t", "-peer-addr", "a=b"}, nil, "missing port"},
		{"peer address twice", []string{"-node", "n1", "-token", "t", "-peer-addr", "h:1=h:2,h:1=h:3"}, nil, "h:1 given twice"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var stderr bytes.Buffer
			code := relayd(tt.args, env(tt.env), &stderr)
			assert.Equal(t, 2, code)
			assert.Contains(t, stderr.String(), tt.reason)
			assert.Contains(t, stderr.String(), "usage: relayd")
		})
	}
}

func TestHelpExitsZero(t *testing.T) {
	var stderr bytes.Buffer
	assert.Equal(t, 0, relayd([]string{"-h"}, env(nil), &stderr))
	assert.Contains(t, stderr.String(), "usage: relayd")
}

func TestAdvertiseAddr(t *testing.T) {
	actual := &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 41234}
	tests := []struct {
		listen, advertise, want string
	}{
		{"127.0.0.1:7000", "", "127.0.0.1:7000"},
		{"127.0.0.1:0", "", "127.0.0.1:41234"},
		{"127.0.0.1:0", "relay1:7000", "relay1:7000"},
		{":7000", "", ":7000"},
	}
	for _, tt := range tests {
		assert.Equal(t, tt.want, advertiseAddr(options{listen: tt.listen, advertise: tt.advertise}, actual), "%+v", tt)
	}
}

// TestLegacyFlag: -legacy (or RELAYD_LEGACY) selects the old behaviours a
// rolling upgrade runs side by side with the fixed ones; an unknown name
// is refused with the usage.
func TestLegacyFlag(t *testing.T) {
	var stderr bytes.Buffer
	o, err := parseFlags([]string{"-node", "n1", "-token", "t", "-legacy", "idempotency,deregister"}, env(nil), &stderr)
	require.NoError(t, err, stderr.String())
	assert.Equal(t, system.Legacy{Idempotency: true, Deregister: true}, o.legacy)
	o, err = parseFlags([]string{"-node", "n1", "-token", "t"}, env(map[string]string{"RELAYD_LEGACY": "all"}), &stderr)
	require.NoError(t, err, stderr.String())
	assert.Equal(t, system.Legacy{Names: true, Idempotency: true, Deregister: true}, o.legacy)

	stderr.Reset()
	assert.Equal(t, 2, relayd([]string{"-node", "n1", "-token", "t", "-legacy", "names,colour"}, env(nil), &stderr))
	assert.Contains(t, stderr.String(), `unknown legacy behaviour "colour"`)
	assert.Contains(t, stderr.String(), "usage: relayd")
}
