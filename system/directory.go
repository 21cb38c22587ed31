package system

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
	"google.golang.org/protobuf/proto"

	"github.com/relaysim/relaysim/system/relaypb"
)

// Directory is the relay's shared state in Redis: user routing, node
// registry, room sequences, room logs, membership windows and send
// idempotency keys. Sequencing and membership changes are Lua scripts, so a
// message's seq and the membership it is delivered to are read atomically.
type Directory struct {
	rdb *redis.Client
	// IdemTTL is how long a send's idempotency key is kept.
	IdemTTL time.Duration
	// Legacy selects the old idempotency and deregistration rules
	// (Config.Legacy).
	Legacy Legacy
	// probe, when set, is told the code probes the directory hits (the
	// node's prober).
	probe func(name string)
}

// Directory errors the node maps to gRPC status codes.
var (
	ErrUnknownRoom = errors.New("unknown room")
	ErrNotMember   = errors.New("user is not a member of the room")
)

// Keys. A room's seq key doubles as its existence marker.
func keySeq(room string) string     { return "room:" + room + ":seq" }
func keyLog(room string) string     { return "room:" + room + ":log" }
func keyMembers(room string) string { return "room:" + room + ":members" }
func keyWindows(room string) string { return "room:" + room + ":win" }

// keyIdem is a send's idempotency key: a client message id is scoped to
// its sender. Names hold no ':', so it never equals a keyIdemRoom.
func keyIdem(room, sender, id string) string {
	return "idem:" + room + ":" + sender + ":" + id
}

// keyIdemRoom is the key of builds before the sender scope
// (Legacy.Idempotency): the room and the id only.
func keyIdemRoom(room, id string) string {
	return "idem:" + room + ":" + id
}
func keyUserRooms(user string) string { return "user:" + user + ":rooms" }
func keyRoute(user string) string     { return "route:" + user }
func keyNode(node string) string      { return "node:" + node }
func keyEpoch(node string) string     { return "node:" + node + ":epoch" }

// NewDirectory wraps a go-redis client.
func NewDirectory(rdb *redis.Client) *Directory { return &Directory{rdb: rdb, IdemTTL: 24 * time.Hour} }

// CreateRoom creates room; created is false when it already existed.
func (d *Directory) CreateRoom(ctx context.Context, room string) (created bool, err error) {
	created, err = d.rdb.SetNX(ctx, keySeq(room), 0, 0).Result()
	if err != nil {
		return false, fmt.Errorf("create room %s: %w", room, err)
	}
	return created, nil
}

// sendScript sequences a message. KEYS[4] is the idempotency key this
// node reads (the sender's, keyIdem; Legacy.Idempotency: the room's,
// keyIdemRoom) and KEYS[5] the other one; ARGV is the entry, the sender,
// the key TTL and "1" for Legacy.Idempotency. A non-member's send is
// refused whatever its id ({-2}; legacy: only a new message is checked);
// unless the key names an earlier seq, it increments the room seq, appends
// the entry and records both keys, the other one only if it is free, so
// that a retry landing on a node of the other kind during a rolling
// upgrade is still recognised. It returns {seq, duplicate, original,
// members...}: original is the log entry a duplicate names ("" for a new
// message), or {-1} for an unknown room.
var sendScript = newScript(`
if redis.call('EXISTS', KEYS[1]) == 0 then return {-1} end
local res = {}
local prev = redis.call('GET', KEYS[4])
-- A retry of a message already sequenced is answered with its seq even
-- when its sender has left since: refusing it would tell the sender it was
-- never sent. (KEYS[4] is the sender's own key, or, in the legacy scheme,
-- the room's.) A new message needs a member.
if not prev and redis.call('HEXISTS', KEYS[3], ARGV[2]) == 0 then return {-2} end
if prev then
  res[1] = tonumber(prev); res[2] = 1
  res[3] = redis.call('LINDEX', KEYS[2], res[1] - 1) or ''
else
  local seq = redis.call('INCR', KEYS[1])
  redis.call('RPUSH', KEYS[2], ARGV[1])
  redis.call('SET', KEYS[4], seq, 'EX', ARGV[3])
  redis.call('SET', KEYS[5], seq, 'EX', ARGV[3], 'NX')
  res[1] = seq; res[2] = 0; res[3] = ''
end
-- A retry fans out again, but only to members whose current window
-- already held the seq: someone who joined after it must not receive it.
local members = redis.call('HGETALL', KEYS[3])
local n = 3
for i = 1, #members, 2 do
  if res[2] == 0 or tonumber(members[i + 1]) <= res[1] then
    n = n + 1; res[n] = members[i]
  end
end
return res
`)

// Sequenced is the outcome of Append.
type Sequenced struct {
	Seq       uint64
	Duplicate bool
	// Original is, for a duplicate, the log entry its seq holds: what the
	// first send wrote, which the duplicate is fanned out with (nil if the
	// log has lost it).
	Original *Entry
	// Members is the room's membership at the moment the seq was assigned
	// (for a duplicate: the current members whose window holds the seq),
	// sorted.
	Members []string
}

// Append sequences one message idempotently by (room, sender, msgID).
func (d *Directory) Append(ctx context.Context, room, msgID, sender string, payload []byte) (Sequenced, error) {
	entry, err := proto.Marshal(&relaypb.LogEntry{MsgId: msgID, Sender: sender, Payload: payload})
	if err != nil {
		return Sequenced{}, fmt.Errorf("encode log entry: %w", err)
	}
	keys := []string{keySeq(room), keyLog(room), keyMembers(room), keyIdem(room, sender, msgID), keyIdemRoom(room, msgID)}
	if d.Legacy.Idempotency {
		keys[3], keys[4] = keys[4], keys[3]
	}
	ttl := strconv.Itoa(int(d.idemTTL() / time.Second))
	res, err := sendScript.Run(ctx, d.rdb, keys, entry, sender, ttl).Slice()
	if err != nil {
		return Sequenced{}, fmt.Errorf("append to room %s: %w", room, err)
	}
	switch code, _ := res[0].(int64); code {
	case -1:
		return Sequenced{}, ErrUnknownRoom
	case -2:
		return Sequenced{}, ErrNotMember
	}
	out := Sequenced{Seq: uint64(res[0].(int64)), Duplicate: res[1].(int64) == 1}
	if raw, _ := res[2].(string); raw != "" {
		var e relaypb.LogEntry
		if err := proto.Unmarshal([]byte(raw), &e); err != nil {
			return Sequenced{}, fmt.Errorf("log of %s seq %d: %w", room, out.Seq, err)
		}
		out.Original = &Entry{Seq: out.Seq, MsgID: e.MsgId, Sender: e.Sender, Payload: e.Payload}
	}
	for _, m := range res[3:] {
		out.Members = append(out.Members, m.(string))
	}
	sort.Strings(out.Members)
	return out, nil
}

func (d *Directory) idemTTL() time.Duration {
	if d.IdemTTL < time.Second {
		return time.Second
	}
	return d.IdemTTL
}

// joinScript opens a membership window starting after the current seq, or
// returns the open window's start when the user is already a member.
var joinScript = newScript(`
if redis.call('EXISTS', KEYS[1]) == 0 then return -1 end
local from = redis.call('HGET', KEYS[2], ARGV[1])
if from then return tonumber(from) end
local s = tonumber(redis.call('GET', KEYS[1])) + 1
redis.call('HSET', KEYS[2], ARGV[1], s)
local w = redis.call('HGET', KEYS[3], ARGV[1])
if w then w = w .. ',' else w = '' end
redis.call('HSET', KEYS[3], ARGV[1], w .. s .. '-')
redis.call('SADD', KEYS[4], ARGV[2])
return s
`)

// Join makes user a member of room and returns the first seq of its window.
func (d *Directory) Join(ctx context.Context, room, user string) (uint64, error) {
	keys := []string{keySeq(room), keyMembers(room), keyWindows(room), keyUserRooms(user)}
	n, err := joinScript.Run(ctx, d.rdb, keys, user, room).Int64()
	if err != nil {
		return 0, fmt.Errorf("join %s to %s: %w", user, room, err)
	}
	if n == -1 {
		return 0, ErrUnknownRoom
	}
	return uint64(n), nil
}

// leaveScript closes the user's open window at the current seq (dropping it
// when it holds no message). For a user who already left it returns the end
// of the last window, so a retried leave is harmless; -2: never a member.
var leaveScript = newScript(`
if redis.call('EXISTS', KEYS[1]) == 0 then return -1 end
local w = redis.call('HGET', KEYS[3], ARGV[1])
local from = redis.call('HGET', KEYS[2], ARGV[1])
if not from then
  if not w then return -2 end
  local last = string.match(w, '(%d+)$')
  if last then return tonumber(last) end
  return 0
end
local cur = tonumber(redis.call('GET', KEYS[1]))
redis.call('HDEL', KEYS[2], ARGV[1])
local head = string.sub(w, 1, #w - #(from .. '-'))
if cur >= tonumber(from) then
  redis.call('HSET', KEYS[3], ARGV[1], head .. from .. '-' .. cur)
elseif #head > 0 then
  redis.call('HSET', KEYS[3], ARGV[1], string.sub(head, 1, #head - 1))
else
  redis.call('HDEL', KEYS[3], ARGV[1])
end
return cur
`)

// Leave ends user's membership of room and returns the last seq of the
// window that ended.
func (d *Directory) Leave(ctx context.Context, room, user string) (uint64, error) {
	keys := []string{keySeq(room), keyMembers(room), keyWindows(room)}
	n, err := leaveScript.Run(ctx, d.rdb, keys, user).Int64()
	if err != nil {
		return 0, fmt.Errorf("leave %s from %s: %w", user, room, err)
	}
	switch n {
	case -1:
		return 0, ErrUnknownRoom
	case -2:
		return 0, ErrNotMember
	}
	return uint64(n), nil
}

// Window is a membership window, From..To inclusive; To == 0 is open.
type Window struct{ From, To uint64 }

// Contains reports whether seq is inside w.
func (w Window) Contains(seq uint64) bool { return seq >= w.From && (w.To == 0 || seq <= w.To) }

// ParseWindows decodes the stored form "1-3,7-".
func ParseWindows(s string) ([]Window, error) {
	if s == "" {
		return nil, nil
	}
	var out []Window
	for _, part := range strings.Split(s, ",") {
		from, to, ok := strings.Cut(part, "-")
		if !ok {
			return nil, fmt.Errorf("bad window %q", part)
		}
		f, err := strconv.ParseUint(from, 10, 64)
		if err != nil {
			return nil, fmt.Errorf("bad window %q: %w", part, err)
		}
		w := Window{From: f}
		if to != "" {
			if w.To, err = strconv.ParseUint(to, 10, 64); err != nil {
				return nil, fmt.Errorf("bad window %q: %w", part, err)
			}
		}
		out = append(out, w)
	}
	return out, nil
}

// Windows returns user's membership windows in room.
func (d *Directory) Windows(ctx context.Context, room, user string) ([]Window, error) {
	s, err := d.rdb.HGet(ctx, keyWindows(room), user).Result()
	if errors.Is(err, redis.Nil) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("windows of %s in %s: %w", user, room, err)
	}
	return ParseWindows(s)
}

// UserRooms returns the rooms user was ever a member of, sorted.
func (d *Directory) UserRooms(ctx context.Context, user string) ([]string, error) {
	rooms, err := d.rdb.SMembers(ctx, keyUserRooms(user)).Result()
	if err != nil {
		return nil, fmt.Errorf("rooms of %s: %w", user, err)
	}
	sort.Strings(rooms)
	return rooms, nil
}

// RoomSeq returns the room's last assigned seq (ErrUnknownRoom if none).
func (d *Directory) RoomSeq(ctx context.Context, room string) (uint64, error) {
	n, err := d.rdb.Get(ctx, keySeq(room)).Uint64()
	if errors.Is(err, redis.Nil) {
		return 0, ErrUnknownRoom
	}
	if err != nil {
		return 0, fmt.Errorf("seq of %s: %w", room, err)
	}
	return n, nil
}

// Entry is one decoded room-log entry.
type Entry struct {
	Seq     uint64
	MsgID   string
	Sender  string
	Payload []byte
}

// Log returns the entries from..to (inclusive) of room's log; to == 0 reads
// to the end.
func (d *Directory) Log(ctx context.Context, room string, from, to uint64) ([]Entry, error) {
	if from < 1 {
		from = 1
	}
	stop := int64(to) - 1
	if to == 0 {
		stop = -1
	}
	raw, err := d.rdb.LRange(ctx, keyLog(room), int64(from)-1, stop).Result()
	if err != nil {
		return nil, fmt.Errorf("log of %s [%d,%d]: %w", room, from, to, err)
	}
	out := make([]Entry, 0, len(raw))
	for i, r := range raw {
		var e relaypb.LogEntry
		if err := proto.Unmarshal([]byte(r), &e); err != nil {
			return nil, fmt.Errorf("log of %s seq %d: %w", room, from+uint64(i), err)
		}
		out = append(out, Entry{Seq: from + uint64(i), MsgID: e.MsgId, Sender: e.Sender, Payload: e.Payload})
	}
	return out, nil
}

// A routing entry names the node, its incarnation (epoch) and the session
// that set it, "node@epoch.session": a session that closes removes only
// its own entry, never the one a newer session of the same user set on
// the same node in the meantime (a reconnect to the same node), nor one
// set by a newer incarnation of the node, whose session numbers start
// again (an overlapping restart). Readers use the node part.
func routeValue(node string, epoch, session uint64) string {
	return node + "@" + strconv.FormatUint(epoch, 10) + "." + strconv.FormatUint(session, 10)
}

// routeNode returns the node part of a routing entry.
func routeNode(v string) string {
	node, _, _ := strings.Cut(v, "@")
	return node
}

// SetRoute points user's routing entry at session on node's incarnation
// epoch.
func (d *Directory) SetRoute(ctx context.Context, user, node string, epoch, session uint64, ttl time.Duration) error {
	if err := d.rdb.Set(ctx, keyRoute(user), routeValue(node, epoch, session), ttl).Err(); err != nil {
		return fmt.Errorf("route %s to %s: %w", user, node, err)
	}
	return nil
}

// refreshRoutesScript re-arms each user's route when it is missing or still
// names the same session; a route another session took over is left alone.
var refreshRoutesScript = newScript(`
for i = 1, #KEYS do
  local v = redis.call('GET', KEYS[i])
  if (not v) or v == ARGV[i + 1] then redis.call('SET', KEYS[i], ARGV[i + 1], 'PX', ARGV[1]) end
end
return #KEYS
`)

// RefreshRoutes re-arms the routes of the sessions (user -> session) open
// on node's incarnation epoch.
func (d *Directory) RefreshRoutes(ctx context.Context, node string, epoch uint64, sessions map[string]uint64, ttl time.Duration) error {
	if len(sessions) == 0 {
		return nil
	}
	users := make([]string, 0, len(sessions))
	for u := range sessions {
		users = append(users, u)
	}
	sort.Strings(users)
	keys := make([]string, len(users))
	args := []any{ttl.Milliseconds()}
	for i, u := range users {
		keys[i] = keyRoute(u)
		args = append(args, routeValue(node, epoch, sessions[u]))
	}
	if err := refreshRoutesScript.Run(ctx, d.rdb, keys, args...).Err(); err != nil {
		return fmt.Errorf("refresh %d routes of %s: %w", len(users), node, err)
	}
	return nil
}

var dropRouteScript = newScript(`
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0
`)

// DropRoute deletes user's route if it still names session on node's
// incarnation epoch.
func (d *Directory) DropRoute(ctx context.Context, user, node string, epoch, session uint64) error {
	if err := dropRouteScript.Run(ctx, d.rdb, []string{keyRoute(user)}, routeValue(node, epoch, session)).Err(); err != nil {
		return fmt.Errorf("drop route of %s: %w", user, err)
	}
	return nil
}

// Route returns the node user is connected to ("" when unknown).
func (d *Directory) Route(ctx context.Context, user string) (string, error) {
	s, err := d.rdb.Get(ctx, keyRoute(user)).Result()
	if errors.Is(err, redis.Nil) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("route of %s: %w", user, err)
	}
	return routeNode(s), nil
}

// Routes looks up many users' routes with one MGET.
func (d *Directory) Routes(ctx context.Context, users []string) (map[string]string, error) {
	if len(users) == 0 {
		return map[string]string{}, nil
	}
	keys := make([]string, len(users))
	for i, u := range users {
		keys[i] = keyRoute(u)
	}
	vals, err := d.rdb.MGet(ctx, keys...).Result()
	if err != nil {
		return nil, fmt.Errorf("routes of %d users: %w", len(users), err)
	}
	out := make(map[string]string, len(users))
	for i, v := range vals {
		s, _ := v.(string)
		out[users[i]] = routeNode(s)
	}
	return out, nil
}

// NodeInfo is a node registry entry.
type NodeInfo struct {
	ID    string
	Addr  string
	Epoch uint64
	// Protocol is the highest relay protocol version the node speaks. An
	// entry without one was written by a build before versions were
	// advertised: v1.
	Protocol int
	// Incarnation names the process that wrote the entry: its start time
	// in nanoseconds, base 36 (Node.incarnation). An entry without one was
	// written by a build before incarnations were advertised. Peers tell
	// two processes apart by it when Redis lost writes and issued one
	// epoch twice, or an epoch below one already seen (peers.install).
	Incarnation string
}

// Register gives node info.ID a new epoch and publishes its entry (info's
// own Epoch is not read).
func (d *Directory) Register(ctx context.Context, info NodeInfo, ttl time.Duration) (uint64, error) {
	epoch, err := d.rdb.Incr(ctx, keyEpoch(info.ID)).Uint64()
	if err != nil {
		return 0, fmt.Errorf("register %s: %w", info.ID, err)
	}
	info.Epoch = epoch
	return epoch, d.Heartbeat(ctx, info, ttl)
}

// heartbeatScript re-publishes a registry entry (KEYS[1]) unless a newer
// incarnation of the node registered. ARGV: addr, epoch, protocol, TTL in
// ms, incarnation (Node.incarnation: the process's start time, base 36;
// "" from a caller that has none).
//
// When the entry names another process and both name one, the
// later-started process is the newer: an older one is refused whatever
// the epochs say, and a newer one writes over an older one's entry even
// at a lower epoch. Epochs cannot tell after Redis lost writes (restored
// from an older snapshot, a failover to a replica missing the last ones):
// a process started before the loss may hold a higher epoch than one
// started after it, and it must not take the entry back (its stop would
// then delete it, and the live process would stay unregistered).
//
// Otherwise epochs decide, and a node is refused when the entry names a
// newer epoch or the node's epoch counter (KEYS[2]) issued one (a newer
// incarnation between its increment and its first heartbeat). It compares
// epochs, never asks them to be equal: after Redis lost writes the entry
// and the counter may be older than the live node's epoch, and the node
// must still heartbeat; then it moves the counter up to its epoch, so the
// next incarnation is issued a newer one than it. Base-36 start times of
// one length order as strings. Returns 1, or 0 for a superseded node.
var heartbeatScript = newScript(`
local mine = tonumber(ARGV[2])
local me = ARGV[5]
local cur = tonumber(redis.call('HGET', KEYS[1], 'epoch') or '0')
local them = redis.call('HGET', KEYS[1], 'incarnation') or ''
local issued = tonumber(redis.call('GET', KEYS[2]) or '0')
local order = 0
if me ~= '' and them ~= '' and them ~= me then
  if #them ~= #me then
    if #them > #me then order = 1 else order = -1 end
  elseif them > me then order = 1 else order = -1 end
end
if order == 1 then return 0 end
if order == 0 and (cur > mine or issued > mine) then return 0 end
if issued < mine then redis.call('SET', KEYS[2], ARGV[2]) end
redis.call('HSET', KEYS[1], 'addr', ARGV[1], 'epoch', ARGV[2], 'protocol', ARGV[3], 'incarnation', ARGV[5])
redis.call('PEXPIRE', KEYS[1], ARGV[4])
return 1
`)

// ErrSuperseded: a heartbeat found a newer incarnation of the node
// registered (Heartbeat).
var ErrSuperseded = errors.New("a newer incarnation of the node is registered")

// Heartbeat re-publishes node's registry entry with a fresh TTL, unless a
// newer incarnation registered under the same id (ErrSuperseded): an
// older incarnation still alive during an overlapping restart must not
// put its epoch back over the newer entry (and its compare-and-delete
// deregister then remove it).
func (d *Directory) Heartbeat(ctx context.Context, n NodeInfo, ttl time.Duration) error {
	keys := []string{keyNode(n.ID), keyEpoch(n.ID)}
	ok, err := heartbeatScript.Run(ctx, d.rdb, keys, n.Addr, strconv.FormatUint(n.Epoch, 10), n.Protocol, ttl.Milliseconds(), n.Incarnation).Int()
	if err != nil {
		return fmt.Errorf("heartbeat %s: %w", n.ID, err)
	}
	if ok == 0 {
		return fmt.Errorf("heartbeat %s epoch %d: %w", n.ID, n.Epoch, ErrSuperseded)
	}
	return nil
}

// deregisterScript deletes a registry entry only if it still names the
// given epoch (ARGV[1]) and, when both name one, the stopping process
// (ARGV[2]): one command, so a new incarnation that registers while the
// old one stops (an overlapping restart) cannot lose its entry between a
// read and a delete, nor one issued the same epoch after Redis lost
// writes.
var deregisterScript = newScript(`
local them = redis.call('HGET', KEYS[1], 'incarnation') or ''
if redis.call('HGET', KEYS[1], 'epoch') == ARGV[1] and (ARGV[2] == '' or them == '' or them == ARGV[2]) then
  return redis.call('DEL', KEYS[1])
end
return 0
`)

// Deregister removes node's registry entry if it still holds epoch,
// atomically (Legacy.Deregister: a read, then a delete).
func (d *Directory) Deregister(ctx context.Context, n NodeInfo) error {
	if d.Legacy.Deregister {
		cur, err := d.LookupNode(ctx, n.ID)
		if err == nil && cur.Epoch != n.Epoch {
			d.hit(ProbeDirDeregisterSpared)
		}
		if err != nil || cur.Epoch != n.Epoch {
			return err
		}
		return d.rdb.Del(ctx, keyNode(n.ID)).Err()
	}
	epoch := strconv.FormatUint(n.Epoch, 10)
	deleted, err := deregisterScript.Run(ctx, d.rdb, []string{keyNode(n.ID)}, epoch, n.Incarnation).Int()
	if err != nil {
		return fmt.Errorf("deregister %s epoch %d: %w", n.ID, n.Epoch, err)
	}
	if deleted == 0 {
		d.hit(ProbeDirDeregisterSpared)
	}
	return nil
}

// hit tells the directory's prober, if any, that it hit a code probe.
func (d *Directory) hit(name string) {
	if d.probe != nil {
		d.probe(name)
	}
}

// ErrUnknownNode: the registry has no live entry for a node.
var ErrUnknownNode = errors.New("node not registered")

// LookupNode reads node's registry entry.
func (d *Directory) LookupNode(ctx context.Context, node string) (NodeInfo, error) {
	m, err := d.rdb.HGetAll(ctx, keyNode(node)).Result()
	if err != nil {
		return NodeInfo{}, fmt.Errorf("look up %s: %w", node, err)
	}
	if m["addr"] == "" {
		return NodeInfo{}, fmt.Errorf("look up %s: %w", node, ErrUnknownNode)
	}
	epoch, err := strconv.ParseUint(m["epoch"], 10, 64)
	if err != nil {
		return NodeInfo{}, fmt.Errorf("look up %s: bad epoch %q", node, m["epoch"])
	}
	protocol := ProtocolV1
	if v, ok := m["protocol"]; ok {
		if protocol, err = strconv.Atoi(v); err != nil || protocol < ProtocolV1 {
			return NodeInfo{}, fmt.Errorf("look up %s: bad protocol %q", node, v)
		}
	}
	return NodeInfo{ID: node, Addr: m["addr"], Epoch: epoch, Protocol: protocol, Incarnation: m["incarnation"]}, nil
}
