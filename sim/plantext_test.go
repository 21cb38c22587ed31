package sim

import (
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/relaysim/relaysim/model"
	"github.com/relaysim/relaysim/sim/plan"
)

// planOf is the plan a run of cfg draws (runInBubble's, without running):
// its workload, its timed faults and its fault mix.
func planOf(cfg Config) ([]Action, []Fault, FaultMix) {
	mix := DrawMix(cfg.Seed.Derive("faults"), cfg.Bounds)
	wc := cfg.WorkloadConfig
	wc.Nodes = cfg.Nodes
	wl := Generate(cfg.Seed.Derive("workload"), wc)
	users := usersOf(wl.Actions)
	plan := cfg.Seed.Derive("faults").Derive("plan")
	fs := PlanFaults(plan, mix, cfg.Nodes, users, cfg.Tick*4, cfg.Duration)
	fs = cfg.Upgrade.plan(fs, cfg.Nodes, cfg.Duration)
	MarkOverlaps(cfg.Seed.Derive("overlap"), fs, cfg.Overlap)
	fs = withForgeries(fs, PlanForgeries(plan, mix.Forgeries, users, roomsOf(wl.Actions), cfg.Nodes, cfg.Tick*4, cfg.Duration))
	fs = withForgeries(fs, PlanSteals(plan, mix.Steals, wl.Actions, cfg.Nodes, cfg.Tick*4, cfg.Duration))
	return wl.Actions, fs, mix
}

// planConfigs are the configurations whose plans the round trip covers:
// the default, a rolling upgrade, wide names and every fault bound raised.
func planConfigs() map[string]Config {
	def := DefaultConfig()
	up := def
	up.Upgrade = &Upgrade{From: 1, To: 3}
	wide := def
	wide.Names = NamesWide
	heavy := def
	heavy.Nodes = 4
	heavy.Bounds = FaultBounds{Network: 0.2, RedisErrors: 0.1, Crashes: 3, Partitions: 4, Pauses: 3, RedisOutages: 3, RouteFlushes: 3,
		Vanishes: 5, SlowConsumers: 3, RedisSpikes: 3, Forgeries: 30, Steals: 6, RecvBreaks: 0.5, Blips: 6, RedisRewinds: 2,
		Floods: 1, Supersedes: 1, Stalls: 2}
	// A kind that keeps its count in Counts (a new kind, plan.BudgetOf)
	// is raised too, so that its plan text is met.
	for _, k := range plan.Counted() {
		if p := plan.BudgetOf(k).Bound(&heavy.Bounds); *p == 0 {
			*p = 1
		}
	}
	return map[string]Config{"default": def, "upgrade": up, "wide": wide, "heavy": heavy}
}

// TestPlanTextRoundTrip: every action, fault and mix of the plans of
// seeds 1-200 in each configuration formats to a line that parses back to
// the same value, and every action kind and fault head is met.
func TestPlanTextRoundTrip(t *testing.T) {
	kinds, heads := map[ActionKind]bool{}, map[string]bool{}
	n := 0
	for name, cfg := range planConfigs() {
		for s := 1; s <= 200; s++ {
			cfg.Seed = Seed(s)
			actions, faults, mix := planOf(cfg)
			for _, a := range actions {
				roundTripAction(t, a)
				kinds[a.Kind] = true
				n++
			}
			for _, f := range faults {
				line := roundTripFault(t, f)
				heads[strings.Fields(line)[1]] = true
				if f.Kind == model.FaultForge {
					a := forgedAction(f.Forge, f.At, f.User) // the client's forged call
					roundTripAction(t, a)
					kinds[a.Kind] = true
				}
				if f.Kind == model.FaultSteal {
					roundTripAction(t, f.Steal.Action(f.At, f.User))
					kinds[ActSteal] = true
				}
				n++
			}
			got, err := ParseMix(FormatMix(mix))
			require.NoError(t, err, "%s seed %d: %s", name, s, FormatMix(mix))
			require.Equal(t, mix, got, "%s seed %d", name, s)
		}
	}
	t.Logf("%d actions and faults round-tripped", n)
	for _, k := range plan.ActionKinds() {
		if k == ActDisconnect || k == ActVanish || k == ActSlow || k == ActStall {
			continue // made by the fault injector (chaos.go), not planned
		}
		assert.True(t, kinds[k], "no plan held a %s action", k)
	}
	for _, h := range plan.FaultHeads() {
		assert.True(t, heads[h], "no plan held a %q fault", h)
	}
}

func roundTripAction(t *testing.T, a Action) string {
	t.Helper()
	line := FormatAction(a)
	got, err := ParseAction(line)
	require.NoError(t, err, "%q", line)
	require.Equal(t, a, got, "%q", line)
	return line
}

func roundTripFault(t *testing.T, f Fault) string {
	t.Helper()
	line := FormatFault(f)
	got, err := ParseFault(line)
	require.NoError(t, err, "%q", line)
	require.Equal(t, f, got, "%q", line)
	return line
}

// TestPlanTextLines: what the lines look like, and odd values (names to
// quote, fields no head says) that still round-trip.
func TestPlanTextLines(t *testing.T) {
	ms := time.Millisecond
	actions := []struct {
		a    Action
		want string
	}{
		{Action{At: 1250 * ms, User: "u3", Kind: ActSend, Room: "r1", MsgID: "m17", Size: 40}, "1.25s u3 send r1 m17 size=40"},
		{Action{At: 0, User: "u1", Kind: ActCreate, Room: "r2"}, "0s u1 create r2"},
		{Action{At: 100 * ms, User: "u2", Kind: ActConnect, Node: 1}, "100ms u2 connect n2"},
		{Action{At: 3 * time.Second, User: "u2", Kind: ActDisconnect}, "3s u2 disconnect"},
		{Action{At: 3 * time.Second, User: "u2", Kind: ActSlow, For: 2 * time.Second}, "3s u2 slow 2s"},
		{Action{At: time.Second, User: "u1", Kind: ActForgeRelayBulk, Room: "r1", MsgID: "forged3", As: "u2", Token: "wrong-case", Node: 2},
			"1s u1 forge-relay-bulk room=r1 msg=forged3 node=n3 as=u2 token=wrong-case"},
		{Action{At: time.Second, User: "u1", Kind: ActBadJoinAs, Room: "r1", As: "caf\xe9"}, `1s u1 bad-join-as "r1" as="caf\xe9"`},
		{Action{At: time.Second, User: "u1", Kind: ActBadSend, Room: "a b", MsgID: "bad1", Node: 1}, `1s u1 bad-send "a b" "bad1" node=n2`},
		{Action{At: time.Second, User: "ユーザー", Kind: ActJoin, Room: "部屋"}, "1s ユーザー join 部屋"},
		{Action{At: time.Second, User: "", Kind: ActJoin, Room: "x=y"}, `1s "" join "x=y"`},
		{Action{At: time.Second, User: "u1", Kind: ActJoin, Room: "r1", MsgID: `say "hi"`, For: time.Minute}, `1s u1 join r1 msg="say \"hi\"" for=1m0s`},
	}
	for _, tc := range actions {
		assert.Equal(t, tc.want, roundTripAction(t, tc.a))
	}
	faults := []struct {
		f    Fault
		want string
	}{
		{Fault{At: 3400 * ms, Kind: model.FaultCrash, Node: 1, For: 2500 * ms}, "3.4s crash n2 for 2.5s"},
		{Fault{At: 3400 * ms, Kind: model.FaultCrash, Node: 1, For: 2500 * ms, Overlap: true, Lag: 5 * ms}, "3.4s crash n2 for 2.5s overlap lag=5ms"},
		{Fault{At: time.Second, Kind: model.FaultPause, Node: 0, For: 300 * ms}, "1s pause n1 for 300ms"},
		{Fault{At: time.Second, Kind: model.FaultRestart, Node: 2}, "1s restart n3"},
		{Fault{At: time.Second, Kind: model.FaultUpgrade, Node: 2, Protocol: 3, Overlap: true, Lag: 7 * ms}, "1s upgrade n3 to v3 overlap lag=7ms"},
		{Fault{At: time.Second, Kind: model.FaultPartition, Node: 0, Peer: -1, For: time.Second}, "1s isolate n1 for 1s"},
		{Fault{At: time.Second, Kind: model.FaultPartition, Node: 0, Peer: 1, OneWay: true, For: time.Second}, "1s cut n1->n2 for 1s"},
		{Fault{At: time.Second, Kind: model.FaultPartition, Node: 0, Peer: 1, For: time.Second}, "1s partition n1<->n2 for 1s"},
		{Fault{At: 2 * time.Second, Kind: model.FaultHeal, Node: 0, Peer: -1}, "2s heal isolated n1"},
		{Fault{At: 2 * time.Second, Kind: model.FaultHeal, Node: 0, Peer: 1, OneWay: true}, "2s heal n1->n2"},
		{Fault{At: 2 * time.Second, Kind: model.FaultHeal, Node: 0, Peer: 1}, "2s heal n1<->n2"},
		{Fault{At: time.Second, Kind: model.FaultBlip, Node: 0, Peer: 2, For: 120 * ms}, "1s blip n1<->n3 for 120ms"},
		{Fault{At: 1120 * ms, Kind: model.FaultBlip, Node: 0, Peer: 2, End: true}, "1.12s blip n1<->n3 over"},
		{Fault{At: time.Second, Kind: model.FaultRedisOutage, For: 800 * ms}, "1s redis-outage for 800ms"},
		{Fault{At: time.Second, Kind: model.FaultRedisSpike, For: 2 * time.Second}, "1s redis-spike for 2s"},
		{Fault{At: time.Second, Kind: model.FaultRouteFlush}, "1s route-flush"},
		{Fault{At: time.Second, Kind: model.FaultVanish, User: "u4"}, "1s vanish u4"},
		{Fault{At: time.Second, Kind: model.FaultSlow, User: "u4", For: 3 * time.Second}, "1s slow u4 for 3s"},
		{Fault{At: time.Second, Kind: model.FaultForge, User: "u1", Forge: Forgery{Call: "relay", Room: "r1", As: "u2", Token: "garbage", MsgID: "forged1", Node: 1}},
			"1s forge u1 relay room=r1 msg=forged1 as=u2 token=garbage to=n2"},
		{Fault{At: time.Second, Kind: model.FaultSteal, User: "u3", Steal: Steal{Room: "r1", Victim: "u2", MsgID: "u2-7", Member: true, Node: 2}},
			"1s steal u3 r1 u2-7 of u2 member to=n3"},
		// Fields no head says, and fields of another kind's.
		{Fault{At: time.Second, Kind: model.FaultPartition, Node: 0, Peer: -1, OneWay: true, For: time.Second}, "1s isolate n1 for 1s one-way"},
		{Fault{At: time.Second, Kind: model.FaultRouteFlush, User: "a b", Forge: Forgery{As: "u1"}, Steal: Steal{Member: true}},
			`1s route-flush user="a b" forge.as=u1 steal.member`},
		{Fault{At: time.Second, Kind: model.FaultBlip, Node: 0, Peer: 1, End: true, For: time.Second}, "1s blip n1<->n2 over for=1s"},
	}
	for _, tc := range faults {
		assert.Equal(t, tc.want, roundTripFault(t, tc.f))
	}
}

// TestPlanTextErrors: a bad line is one line naming the bad token.
func TestPlanTextErrors(t *testing.T) {
	for _, tc := range []struct{ line, want string }{
		{"", "empty line"},
		{"1s u1", "want TIME USER KIND"},
		{"soon u1 send r1 m1", `time "soon"`},
		{"1s u1 sned r1 m1", `unknown action kind "sned"`},
		{"1s u1 send r1", "send: want 2 fields after the kind (room msg), got 1"},
		{"1s u1 send r1 m1 size=big", `size=big: "big": want N, N a whole number`},
		{"1s u1 send r1 m1 colour=red", `unknown key "colour"`},
		{"1s u1 connect n0", `connect: node "n0": want a node n1, n2, ...`},
		{"1s u1 send r1 m1 room=r2", `key "room" given twice`},
		{`1s u1 join "r1`, `unterminated or bad quoted string`},
		{"1s u1 join r(1)", `quote a name that is not plain`},
		{"1s u1 send r1 m1 size=1 size=2", `key "size" given twice`},
	} {
		_, err := ParseAction(tc.line)
		require.Error(t, err, "%q", tc.line)
		assert.Contains(t, err.Error(), tc.want, "%q", tc.line)
		assert.NotContains(t, err.Error(), "\n")
	}
	for _, tc := range []struct{ line, want string }{
		{"1s explode n1", `unknown fault kind "explode"`},
		{"1s crash n1", `crash: missing "for"`},
		{"1s crash n1 during 2s", `crash: token "during": want "for"`},
		{"1s crash n1 for 2 s", `crash: "2": want a duration`},
		{"1s cut n1<->n2 for 1s", `cut: token "n1<->n2": want nA->nB`},
		{"1s upgrade n1 to 3", `upgrade: version "3": want vN`},
		{"1s crash n1 for 1s lag=soon", `crash: lag=soon`},
		{"1s isolate n1 for 1s peer=n2", `key "peer" given twice`},
		{"1s crash n1 for 1s overlap=yes", "a flag takes no value"},
		{"1s steal u1 r1 m1 by u2", `steal: token "by": want "of"`},
	} {
		_, err := ParseFault(tc.line)
		require.Error(t, err, "%q", tc.line)
		assert.Contains(t, err.Error(), tc.want, "%q", tc.line)
	}
	for _, tc := range []struct{ text, want string }{
		{"", "empty mix"},
		{"crash", `token "crash": want key=value`},
		{"crash=-1", "crash=-1"},
		{"drop-req=1.5", "want a probability in 0..1"},
		{"quake=1", `unknown knob`},
		{"crash=1 crash=2", `key "crash" given twice`},
	} {
		_, err := ParseMix(tc.text)
		require.Error(t, err, "%q", tc.text)
		assert.Contains(t, err.Error(), tc.want, "%q", tc.text)
	}
}

// FuzzParseAction: parsing never panics, and what parses formats to a
// line that parses to the same action and formats the same again.
func FuzzParseAction(f *testing.F) {
	cfg := DefaultConfig()
	for s := 1; s <= 3; s++ {
		cfg.Seed = Seed(s)
		actions, _, _ := planOf(cfg)
		for _, a := range actions[:min(len(actions), 40)] {
			f.Add(FormatAction(a))
		}
	}
	f.Add(`1s u1 bad-join-as "r1" as="caf\xe9"`)
	f.Add("1s u1 forge-relay-bulk room=r1 msg=forged3 node=n3 as=u2 token=wrong-case")
	f.Fuzz(func(t *testing.T, line string) {
		a, err := ParseAction(line)
		if err != nil {
			return
		}
		out := FormatAction(a)
		b, err := ParseAction(out)
		if err != nil {
			t.Fatalf("%q parsed, its format %q does not: %v", line, out, err)
		}
		if a != b {
			t.Fatalf("%q parsed to %+v, its format %q to %+v", line, a, out, b)
		}
		if again := FormatAction(b); again != out {
			t.Fatalf("format not stable: %q then %q", out, again)
		}
	})
}

// FuzzParseFault: as FuzzParseAction, for fault lines.
func FuzzParseFault(f *testing.F) {
	cfg := planConfigs()["heavy"]
	for s := 1; s <= 3; s++ {
		cfg.Seed = Seed(s)
		_, faults, _ := planOf(cfg)
		for _, fl := range faults {
			f.Add(FormatFault(fl))
		}
	}
	f.Add("1s heal n1->n2")
	f.Add("1s blip n1<->n2 over for=1s")
	f.Add(`1s route-flush user="a b" forge.as=u1 steal.member`)
	f.Fuzz(func(t *testing.T, line string) {
		x, err := ParseFault(line)
		if err != nil {
			return
		}
		out := FormatFault(x)
		y, err := ParseFault(out)
		if err != nil {
			t.Fatalf("%q parsed, its format %q does not: %v", line, out, err)
		}
		if x != y {
			t.Fatalf("%q parsed to %+v, its format %q to %+v", line, x, out, y)
		}
		if again := FormatFault(y); again != out {
			t.Fatalf("format not stable: %q then %q", out, again)
		}
	})
}

// FuzzParseMix: as FuzzParseAction, for a mix.
func FuzzParseMix(f *testing.F) {
	for s := 1; s <= 20; s++ {
		f.Add(FormatMix(DrawMix(Seed(s), DefaultBounds())))
	}
	f.Add("none")
	f.Fuzz(func(t *testing.T, text string) {
		m, err := ParseMix(text)
		if err != nil {
			return
		}
		out := FormatMix(m)
		n, err := ParseMix(out)
		if err != nil || m != n {
			t.Fatalf("%q parsed to %+v, its format %q to %+v (%v)", text, m, out, n, err)
		}
	})
}

// TestPlanTextCoversEveryField: each field of Action, Fault (its Forgery
// and Steal included) and FaultMix, set alone to a non-zero value,
// round-trips, so a field added to one of them and not to its text form
// fails here.
func TestPlanTextCoversEveryField(t *testing.T) {
	each := func(v reflect.Value, skip string, check func()) {
		var walk func(v reflect.Value, path string)
		walk = func(v reflect.Value, path string) {
			for i := range v.NumField() {
				f, name := v.Field(i), path+v.Type().Field(i).Name
				if name == skip {
					continue
				}
				old := reflect.ValueOf(f.Interface())
				switch f.Kind() {
				case reflect.Struct:
					walk(f, name+".")
					continue
				case reflect.String:
					f.SetString("zz")
				case reflect.Int, reflect.Int64:
					f.SetInt(3)
				case reflect.Float64:
					f.SetFloat(0.25)
				case reflect.Bool:
					f.SetBool(true)
				case reflect.Array:
					// Counts: the slots of the kinds that keep their
					// count there (plan.BudgetOf), each alone.
					for _, rank := range slotRanks() {
						e := f.Index(rank)
						e.SetInt(3)
						t.Run(fmt.Sprintf("%s[%d]", name, rank), func(*testing.T) { check() })
						e.SetInt(0)
					}
					continue
				default:
					t.Fatalf("%s: a field of kind %s the test cannot set", name, f.Kind())
				}
				t.Run(name, func(*testing.T) { check() })
				f.Set(old)
			}
		}
		walk(v, "")
	}
	a := Action{At: time.Second, User: "u1", Kind: ActJoin, Room: "r1"}
	each(reflect.ValueOf(&a).Elem(), "Kind", func() { roundTripAction(t, a) })
	f := Fault{At: time.Second, Kind: model.FaultRouteFlush}
	each(reflect.ValueOf(&f).Elem(), "Kind", func() { roundTripFault(t, f) })
	var m FaultMix
	each(reflect.ValueOf(&m).Elem(), "", func() {
		got, err := ParseMix(FormatMix(m))
		require.NoError(t, err)
		require.Equal(t, m, got, FormatMix(m))
	})
	// Every field is a knob but Counts, which holds the slotted kinds'.
	assert.Equal(t, reflect.TypeOf(m).NumField()-1+len(slotRanks()), len(plan.MixKnobs()))
}

// slotRanks are the MixRanks of the counted kinds whose counts live in
// FaultMix.Counts.
func slotRanks() []int {
	var out []int
	for _, k := range plan.Counted() {
		if b := k.Budget(); b.Mix == nil {
			out = append(out, b.MixRank)
		}
	}
	return out
}
