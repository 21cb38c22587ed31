package system

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// ErrNodeLive says that a node id is held by a live process: its registry
// entry is still there, so its heartbeat is fresh (an entry expires
// RegistryTTL after the last heartbeat).
var ErrNodeLive = errors.New("node id is held by a live process")

// CheckIdentity returns an error wrapping ErrNodeLive when node's registry
// entry is live: another process serving under the same id, or one that
// died less than a registry TTL ago. A second process under a live id
// would share its routes and epoch key and heartbeat over its entry, so a
// deployment must refuse to start it unless told to take over (relayd
// -takeover). It reads the registry only and changes nothing.
func (d *Directory) CheckIdentity(ctx context.Context, node string) error {
	info, err := d.LookupNode(ctx, node)
	if errors.Is(err, ErrUnknownNode) {
		return nil
	}
	if err != nil {
		return err
	}
	ttl, err := d.rdb.PTTL(ctx, keyNode(node)).Result()
	if err != nil {
		return fmt.Errorf("look up %s: %w", node, err)
	}
	return fmt.Errorf("node %s is registered at %s with epoch %d, heartbeat expiring in %v: %w",
		node, info.Addr, info.Epoch, ttl.Round(time.Millisecond), ErrNodeLive)
}
