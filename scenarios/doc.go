// Package scenarios holds relaysim's stories and properties: the property
// tests (rapid state machines over a simulated cluster, in both relay
// modes), the seed sweep sample, and the scenario files. It drives sim/
// and judges with model/; it never calls system/ code to judge.
//
// # Scenario files
//
// testdata/*.txt are stories told to one cluster, command by command, each
// with its expected output under "----", in the format of
// github.com/cockroachdb/datadriven (as etcd raft's interaction tests):
//
//	# n2 crashes while the relay of "second" is in flight.
//	crash node=n2
//	----
//	n2 crashed epoch=1
//	n2 closed the session of u2
//
// The files are:
//
//   - crash-during-bulk-relay: a node crashes while relays to it are in
//     flight; its users reconnect elsewhere and catch up from the log.
//   - redis-outage-mid-fanout: Redis goes down in the middle of a burst's
//     fan-out and during a send; everything recovers once it is back.
//   - user-moves-node: a user reconnects to another node while relays on
//     the old routing are in flight (stale routing, gap fill).
//   - client-vanishes: a client disappears without closing its stream;
//     the keep-alive reaps it and the node's streams and goroutines are
//     back at the baseline.
//   - partition-and-heal: two nodes cut off from each other, then healed.
//   - duplicate-relays: responses lost for a while, so relays are retried
//     and arrive twice; sessions deliver each message once.
//   - stream-broken-mid-batch: the connection carrying relays is reset
//     while a burst is on it (in stream mode: a stream holding unacked
//     items, resent on a new one).
//   - rolling-upgrade: four nodes upgraded one by one from relay protocol
//     v1 to v3 under traffic; relays move from single to the file's mode.
//   - rolling-upgrade-legacy: unfixed nodes (legacy=all) beside a fixed
//     one, what each does with a non-ASCII room and a stolen message id,
//     and check recording it; then the unfixed nodes restarted fixed.
//
// Each command is one handler (interaction_env_handler_*.go) whose doc
// comment has an example; Env.Handle lists them. Commands and arguments
// are kebab-case and checked: an unknown command, an unknown or repeated
// argument, a value of the wrong type or a node the cluster lacks stops
// the file with an error naming file and line. Outputs are short and
// deterministic (same file, same output, every run): a client's view
// ("u1: r1#3 acked", "u2 <- r1#3 hello (live)", "(log)" when replayed from
// the room log), nodes going down and up, relays that failed or were
// retried, faults that hit single calls, "check" with every property, a
// node's figures ("metrics"), the last trace lines ("trace"). Within one
// command's output, lines are grouped by who they are about (nodes, then
// users; sorted), each one's in the order they happened.
//
// # Every file in every mode
//
// TestScenarios plays each file once per relay mode (single, bulk,
// stream: system.Modes), each in a synctest
// bubble of its own, and merges the outputs command by command: a line
// every mode printed appears bare, a line only some modes printed is led
// by their names ("[single] n1 relay.single -> n2 r1#2 ... err=Unavailable").
// One file per story, rather than one per story and mode, because the
// story is the same and a reader should not compare three files to see
// what a mode changes: the merged output shows exactly that (bulk's one
// relay per node against single's one per recipient, single's pool queueing
// behind retries, stream's broken and resent streams) and is the
// differential check of DESIGN §4 done by eye.
// The expected output is compared only after all modes ran, by datadriven
// itself, so `-rewrite` works as usual:
//
//	go test ./scenarios -run TestScenarios            # play every file in every mode
//	go test ./scenarios -run TestScenarios -rewrite   # rewrite the expected output; review with git diff
//
// The cluster of a file starts with "cluster" (3 nodes by default, a fixed
// seed, the LAN-like cost model, a small pool, no fault but those the file
// applies, versions= for each node's relay protocol, legacy= for each
// node's legacy behaviours); "restart protocol=" or "restart legacy="
// restarts a running node gracefully (sim's upgrade fault); faults go through sim's control panel (sim/control.go), which
// wraps the fault injector so the oracle records them as it records drawn
// ones, and "check" judges the history so far with model.Check.
//
// # Stories
//
// testdata/shrunk/*.txt are stories (story.go, docs/stories.md): one
// pinned sim run each, its knobs, fault mix, actions and faults written
// as data, then a check that expects every property to hold.
// TestShrunkStories plays each in the mode it is pinned to.
package scenarios
