package sim

import (
	"github.com/redis/go-redis/v9"

	"github.com/relaysim/relaysim/sim/dst"
	"github.com/relaysim/relaysim/system"
	"github.com/relaysim/relaysim/system/relaypb"

	"fmt"
	"strings"
	"time"
)

// CPUModel is the contended half of the virtual cost model (DESIGN §3.2).
// Compute takes no virtual time, so work is given a cost explicitly: each
// node has a virtual CPU of Cores cores and Redis one of RedisCores; an op
// that does work on a node (an RPC encoded and sent, one handled, a
// delivery written to a client stream, an executor task's own work, on a
// worker or run by its submitter under caller-runs) costs
// CPU time there and, when every core is busy, waits for the earliest one
// to free up, first booked first served. Links keep their per-op latency
// (CostModel's draws, applied before an op parks).
//
// The kernel books the work (dst.Resources, deterministically: when the
// driver picks an op, never when it arrives); this model only says what
// each op costs (Cost).
type CPUModel struct {
	Name  string
	Cores int // cores of each node's virtual CPU

	Task         time.Duration // an executor task's own work (gate "task")
	RPCSend      time.Duration // encoding and sending one call (gate "rpc.send")
	RPCRecv      time.Duration // receiving and handling one call (gate "rpc.recv")
	PerRecipient time.Duration // a relay's per-recipient protobuf work, on each side
	StreamWrite  time.Duration // one delivery encoded and written to a client stream ("session.send")

	RedisCores int           // Redis is single-threaded: 1
	RedisCmd   time.Duration // one command on the Redis core
	RedisKey   time.Duration // each key of a multi-key command beyond the first

	// Link latencies (min + uniform[0, 2*mean), per op, from the seed).
	NetMin, NetMean     time.Duration // one RPC hop
	RedisMin, RedisMean time.Duration // node to Redis
}

// Calibrated is the experiments' named default cost model; BENCHMARKS.md
// ("Cost model") says how each figure was calibrated.
func Calibrated() CPUModel {
	return CPUModel{
		Name: "calibrated", Cores: 1,
		Task: 50 * time.Microsecond, RPCSend: 150 * time.Microsecond, RPCRecv: 100 * time.Microsecond,
		PerRecipient: 1 * time.Microsecond, StreamWrite: 20 * time.Microsecond,
		RedisCores: 1, RedisCmd: 60 * time.Microsecond, RedisKey: 1500 * time.Nanosecond,
		NetMin: 80 * time.Microsecond, NetMean: 20 * time.Microsecond,
		RedisMin: 20 * time.Microsecond, RedisMean: 0,
	}
}

// CostModels names the cost models a runner can select.
func CostModels() []string { return []string{"calibrated", "swarm"} }

// Links is the per-link latency half of the model as a CostModel (no
// per-op CPU latencies: those are the CPU's).
func (m CPUModel) Links() CostModel {
	return CostModel{NetMin: m.NetMin, NetMean: m.NetMean, RedisMin: m.RedisMin, RedisMean: m.RedisMean}
}

func (m CPUModel) String() string {
	return fmt.Sprintf("%s cores=%d task=%v rpc.send=%v rpc.recv=%v per-recipient=%v stream-write=%v redis=%dx(%v+%v/key) net=%v+%v redis-link=%v+%v",
		m.Name, m.Cores, m.Task, m.RPCSend, m.RPCRecv, m.PerRecipient, m.StreamWrite,
		m.RedisCores, m.RedisCmd, m.RedisKey, m.NetMin, m.NetMean, m.RedisMin, m.RedisMean)
}

// Cost is the resource an op uses and for how long ("" or 0: none): the
// kernel's dst.CostFunc for this model.
func (m CPUModel) Cost(op *dst.Op) (string, int, time.Duration) {
	units := max(op.Units, 1)
	switch op.Kind {
	case KindRedis:
		return "redis", m.RedisCores, m.RedisCmd + time.Duration(units-1)*m.RedisKey
	case system.PointTask, system.PointTaskCaller: // on a worker or in its submitter (caller-runs)
		return op.Node, m.Cores, m.Task
	case KindRPCSend:
		return op.Node, m.Cores, m.RPCSend + time.Duration(units)*m.PerRecipient
	case KindRPCRecv:
		return op.Node, m.Cores, m.RPCRecv + time.Duration(units)*m.PerRecipient
	case system.PointSessionSend:
		return op.Node, m.Cores, m.StreamWrite
	}
	return "", 0, 0
}

// CostByName returns the cost model a runner flag names: "calibrated" (the
// contended model above) or "swarm" (per-seed latencies only, nil CPU).
func CostByName(name string) (*CPUModel, error) {
	switch strings.ToLower(name) {
	case "", "swarm":
		return nil, nil
	case "calibrated":
		m := Calibrated()
		return &m, nil
	}
	return nil, fmt.Errorf("unknown cost model %q (want %s)", name, strings.Join(CostModels(), " or "))
}

// recipientsOf sizes a relay call for the CPU model.
func recipientsOf(req any) int {
	switch r := req.(type) {
	case *relaypb.RelayBulkMessageRequest:
		return len(r.GetRecipients())
	case *relaypb.RelayMessageRequest:
		return 1
	}
	return 0
}

// redisUnits sizes a Redis command for the CPU model: its keys for MGET.
func redisUnits(cmd redis.Cmder) int {
	if strings.EqualFold(cmd.Name(), "mget") {
		return len(cmd.Args()) - 1
	}
	return 1
}
