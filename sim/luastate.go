package sim

import lua "github.com/yuin/gopher-lua"

// miniredis runs every EVAL/EVALSHA in a new gopher-lua state made with
// the package defaults: a value stack ("registry") of 5,120 slots and a
// call stack of 256 frames, about 100 KB allocated and zeroed per script
// call, a fifth of everything a default run allocates. The relay's scripts
// (system/directory.go) are a few lines without recursion: `go test
// ./golden` passes, every hash unchanged, with 128 slots and 4 frames. The
// simulated Redis gets 8 and 16 times that: the scripts run the same, and
// one that outgrew the stacks would fail with a Lua error ("registry
// overflow", "stack overflow"), never silently. This is process-wide;
// nothing else in the simulation's processes runs Lua.
const (
	luaRegistrySize  = 1024
	luaCallStackSize = 64
)

func init() {
	lua.RegistrySize = luaRegistrySize
	lua.CallStackSize = luaCallStackSize
}
