package system

import "github.com/redis/go-redis/v9"

// scriptSources are the bodies of the Lua scripts the directory runs, in
// the order they are declared: the simulation checks each one touches
// only the keys it is given (sim/redisfootprint.go), so the model
// checker may trust a script's declared KEYS.
var scriptSources []string

// newScript declares one of the directory's scripts.
func newScript(src string) *redis.Script {
	scriptSources = append(scriptSources, src)
	return redis.NewScript(src)
}

// ScriptSources returns the bodies of every script the relay may run.
func ScriptSources() []string { return append([]string(nil), scriptSources...) }
