package sim

import (
	"fmt"
	"time"
)

// CostModel gives work a cost in virtual time, since compute itself takes
// none: the latency of a network hop, a Redis command, a client-stream send,
// an executor task. Each is min + uniform[0, 2*mean), drawn per operation
// from hash(seed, key) so it does not depend on arrival order.
type CostModel struct {
	NetMin, NetMean     time.Duration // one RPC hop
	RedisMin, RedisMean time.Duration // one Redis command
	SendCost            time.Duration // one delivery written to a client stream
	TaskCost            time.Duration // scheduling one executor task
	ClientThink         time.Duration // a client action's own latency
	seed                Seed
}

// DefaultCost is a LAN-like cost model.
func DefaultCost() CostModel {
	return CostModel{
		NetMin: 200 * time.Microsecond, NetMean: 300 * time.Microsecond,
		RedisMin: 100 * time.Microsecond, RedisMean: 150 * time.Microsecond,
		SendCost: 50 * time.Microsecond, TaskCost: 20 * time.Microsecond,
		ClientThink: 0,
	}
}

// DrawCost varies the default per seed (swarm testing of timing): every
// parameter is scaled by a factor in [0.25, 4).
func DrawCost(seed Seed) CostModel {
	c := DefaultCost()
	r := seed.Rand()
	scale := func(d time.Duration) time.Duration {
		f := 0.25 * float64(uint(1)<<r.IntN(4)) * (1 + r.Float64())
		return time.Duration(float64(d) * f).Round(time.Microsecond)
	}
	c.NetMin, c.NetMean = scale(c.NetMin), scale(c.NetMean)
	c.RedisMin, c.RedisMean = scale(c.RedisMin), scale(c.RedisMean)
	c.SendCost, c.TaskCost = scale(c.SendCost), scale(c.TaskCost)
	c.seed = seed
	return c
}

// WithSeed returns c drawing per-operation latencies from seed.
func (c CostModel) WithSeed(seed Seed) CostModel { c.seed = seed; return c }

func (c CostModel) String() string {
	return fmt.Sprintf("net=%v+%v redis=%v+%v send=%v task=%v",
		c.NetMin, c.NetMean, c.RedisMin, c.RedisMean, c.SendCost, c.TaskCost)
}

// Latency is the cost of the op about to park at a gate.
func (c CostModel) Latency(node, kind, id string) time.Duration {
	draw := func(lo, mean time.Duration) time.Duration {
		if mean <= 0 {
			return lo
		}
		u := c.seed.Unit3(node, kind, id) // = c.seed.Unit(node + "|" + kind + "|" + id)
		return lo + time.Duration(u*float64(2*mean)).Round(time.Microsecond)
	}
	switch kind {
	case KindRPCRecv:
		return draw(c.NetMin, c.NetMean)
	case KindRedis:
		return draw(c.RedisMin, c.RedisMean)
	case "session.send":
		return c.SendCost
	case "task", "task.caller":
		return c.TaskCost
	case KindClient:
		return c.ClientThink
	}
	return 0
}

// Gate kinds the simulator adds to the system's own Point kinds.
const (
	KindRPCSend = "rpc.send" // a node is about to call a peer
	KindRPCRecv = "rpc.recv" // a call arrives at a server (after the network hop)
	KindRPCDone = "rpc.done" // a call's response is back at its caller
	KindRedis   = "redis"    // a Redis command is about to be sent
	KindClient  = "client"   // a client action or a client receiving a delivery
	KindChaos   = "chaos"    // a fault being injected
)
