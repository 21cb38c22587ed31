package system

import (
	"context"
	"slices"
	"sort"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/relaysim/relaysim/system/relaypb"
)

// probeRecorder is a Prober that counts the probes every node hit.
type probeRecorder struct {
	mu   sync.Mutex
	hits map[string]int
}

func (p *probeRecorder) Hit(_, name string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.hits == nil {
		p.hits = map[string]int{}
	}
	p.hits[name]++
}

// names are the probes hit, sorted.
func (p *probeRecorder) names() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []string
	for n := range p.hits {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// expect asserts that every one of names was hit.
func (p *probeRecorder) expect(t testing.TB, names ...string) {
	t.Helper()
	got := p.names()
	for _, n := range names {
		assert.Contains(t, got, n, "probe %s not hit", n)
	}
}

// probesOfTest are the code probes a test's cluster must hit (checked
// when the test ends, cluster_test.go): the tests that build the rare
// conditions show that their probes fire where they are established.
var probesOfTest = map[string][]string{
	"TestConnectReplacesAnOlderSession":              {ProbeChatSessionReplaced},
	"TestIdempotencyAcrossARollingUpgrade":           {ProbeChatDuplicateSend},
	"TestLiveGapFillWaitsForOutboxRoom":              {ProbeSessionGap, ProbeSessionGapWaitedFull},
	"TestLivePushAfterReplayWaitsForReader":          {ProbeSessionGapWaitedFull},
	"TestStalledClientCostsOthersNothing":            {ProbeSessionReplayWaitedFull, ProbeSessionLockHeldByWait, ProbeSessionSlowConsumer},
	"TestOlderProtocolsAnswerUnimplemented":          {ProbeRelayRecvUnsupported},
	"TestRelayGivesUpAtOnceAfterLastAttempt":         {ProbeRelayRetried, ProbeRelayGaveUp},
	"TestReplayLongerThanTheOutbox":                  {ProbeSessionReplayWaitedFull},
	"TestStaleEpochFailureKeepsNewerConnections":     {ProbePeerForgetSpared, ProbePeerReplaced, ProbeRelayRecvStaleEpoch, ProbeRelayStaleEpoch},
	"TestStreamBackOffHoldsUnderTraffic":             {ProbeStreamBroken, ProbeStreamResent},
	"TestStreamItemCancelledBeforeDeliveryIsNotLost": {ProbeStreamRecvDuplicate},
	"TestStreamLinkBacklogIsBounded":                 {ProbeStreamBacklogFull},
	"TestStreamLinkGivesUpWhenAcksKeepFailing":       {ProbeStreamBroken, ProbeStreamGaveUp, ProbeStreamResent},
	"TestStreamRefusalCostsOneItem":                  {ProbeRelayRecvOverLimit, ProbeStreamIsolated},
	"TestStreamResendIsDeduplicated":                 {ProbeStreamRecvDuplicate},
	"TestStreamLinkAfterEpochRewind":                 {ProbeStreamEpochRewound},
	"TestStreamLinkReusedByANewIncarnation":          {ProbeStreamRecvReusedLink},
	"TestPeerAtAReusedEpochIsTheNewProcess":          {ProbePeerNewerAtRewoundEpoch, ProbePeerReplaced},
	"TestStaleLinkIsRefused":                         {ProbeStreamRecvOlderLink, ProbeStreamStaleRefused, ProbeStreamIsolated},
	"TestTaskGatesTellCallerRunsFromWorkers":         {ProbeExecCallerRuns, ProbeExecPoolAtMax},
	"TestTaskPanicIsLoggedAndObserved":               {ProbeExecPanic},
	"TestUnimplementedFallsBackAndIsRemembered":      {ProbePeerDowngraded, ProbeRelayFallback, ProbeStreamFallback},
	"TestCrashAndRestart/stream":                     {ProbePeerReplaced, ProbeStreamHandover},
	"TestDeregisterSparesANewerIncarnation/fixed":    {ProbeDirDeregisterSpared},
	"TestHeartbeatOfASupersededIncarnation":          {ProbeNodeHeartbeatSuperseded, ProbeDirDeregisterSpared},
	"TestMembershipWindows/bulk":                     {ProbeSessionOutsideWindow, ProbeChatDuplicateSend},
	"TestProbeChatRefusals":                          {ProbeChatEmptyPayload, ProbeChatBadName, ProbeChatPayloadOverLimit, ProbeChatUnknownRoom, ProbeChatNotMember},
}

// TestProbesAreRegistered: every probe has a unique name of the form
// area.condition, a description and a file of system/.
func TestProbesAreRegistered(t *testing.T) {
	seen := map[string]bool{}
	for _, p := range Probes() {
		assert.Regexp(t, `^[a-z]+\.[a-z0-9-]+$`, p.Name)
		assert.False(t, seen[p.Name], "duplicate probe %s", p.Name)
		seen[p.Name] = true
		assert.NotEmpty(t, p.Desc, p.Name)
		assert.FileExists(t, p.Where, p.Name)
	}
	assert.GreaterOrEqual(t, len(seen), 30)
}

// TestNilProberCostsNothing: a node without a prober pays a nil check per
// probe, and allocates nothing.
func TestNilProberCostsNothing(t *testing.T) {
	n := &Node{cfg: Config{NodeID: "n1"}}
	allocs := testing.AllocsPerRun(1000, func() { n.probe(ProbeSessionSlowConsumer) })
	assert.Zero(t, allocs)
	d := &Directory{}
	assert.Zero(t, testing.AllocsPerRun(1000, func() { d.hit(ProbeDirDeregisterSpared) }))
	e := NewExecutor(ExecutorConfig{Core: 1, Max: 1})
	assert.Zero(t, testing.AllocsPerRun(1000, func() { e.probe(ProbeExecQueued) }))
}

// TestExecutorProbes: the pool's rules hit their probes where Java's
// ThreadPoolExecutor makes its choices.
func TestExecutorProbes(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rec := &probeRecorder{}
		e := NewExecutor(ExecutorConfig{Core: 1, Max: 2, Queue: 1, KeepAlive: time.Second, Probe: func(name string) { rec.Hit("", name) }})
		block := make(chan struct{})
		var ran sync.WaitGroup
		task := func() { defer ran.Done(); <-block }
		ran.Add(3)
		e.Submit("core", task)   // a worker (core)
		e.Submit("queued", task) // the queue
		e.Submit("grown", task)  // the queue is full: a second worker, the pool at max
		synctest.Wait()
		ran.Add(1)
		e.Submit("caller", func() { ran.Done() }) // saturated: caller-runs
		close(block)
		ran.Wait()
		time.Sleep(2 * time.Second) // the worker above core retires
		synctest.Wait()
		e.Submit("after", func() {}) // its expiry is applied here at the latest
		e.Shutdown()
		e.Submit("rejected", func() {})
		rec.expect(t, ProbeExecQueued, ProbeExecGrewPastCore, ProbeExecPoolAtMax, ProbeExecCallerRuns, ProbeExecWorkerRetired, ProbeExecRejected)
	})
}

// TestProbeChatRefusals: refused calls hit the probes of their refusal.
func TestProbeChatRefusals(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := newCluster(t, ModeBulk, 1)
		c.createRoom("r")
		alice := c.connect("alice", "n1")
		alice.join("r")
		ctx := context.Background()
		chat := alice.chat()
		_, _ = chat.Send(ctx, sendReq("r", "alice", "m1", ""))
		_, _ = chat.Send(ctx, sendReq("r", "alice", "m 2", "x"))
		_, _ = chat.Send(ctx, sendReq("r", "alice", "m3", string(make([]byte, DefaultConfig().MaxPayload+1))))
		_, _ = chat.Send(ctx, sendReq("nowhere", "alice", "m4", "x"))
		_, _ = chat.Send(ctx, sendReq("r", "bob", "m5", "x"))
		assert.False(t, slices.Contains(c.probes.names(), ProbeSessionSlowConsumer))
	})
}

func sendReq(room, user, id, payload string) *relaypb.SendRequest {
	return &relaypb.SendRequest{Room: room, User: user, ClientMsgId: id, Payload: []byte(payload)}
}
