package main

import (
	"context"
	"fmt"
	"log"
	"net"
	"strings"

	"github.com/relaysim/relaysim/system"
)

// claimIdentity refuses to start a node whose id is held by a live process
// (its registry entry's heartbeat is fresh), unless -takeover says to. A
// restart after a crash either waits for the dead process's entry to
// expire (the registry TTL) or takes over explicitly.
func claimIdentity(ctx context.Context, node *system.Node, o options, logger *log.Logger) error {
	err := node.Directory().CheckIdentity(ctx, o.node)
	switch {
	case err == nil:
		return nil
	case o.takeover:
		logger.Printf("node %s: taking over: %v", o.node, err)
		return nil
	}
	return fmt.Errorf("%w; refusing to start a second process under this id: stop the other one, wait for its entry to expire, or start with -takeover", err)
}

// parsePeerAddrs reads -peer-addr: ADDR=VIA pairs, comma-separated.
func parsePeerAddrs(s string) (map[string]string, error) {
	if s == "" {
		return nil, nil
	}
	out := map[string]string{}
	for _, part := range strings.Split(s, ",") {
		from, via, ok := strings.Cut(strings.TrimSpace(part), "=")
		if !ok || from == "" || via == "" {
			return nil, fmt.Errorf("-peer-addr %q: want ADDR=VIA[,ADDR=VIA...]", s)
		}
		for _, a := range []string{from, via} {
			if _, _, err := net.SplitHostPort(a); err != nil {
				return nil, fmt.Errorf("-peer-addr %q: %w", s, err)
			}
		}
		if _, dup := out[from]; dup {
			return nil, fmt.Errorf("-peer-addr %q: %s given twice", s, from)
		}
		out[from] = via
	}
	return out, nil
}

// peerDialer dials peers over TCP, through the address -peer-addr gives
// for theirs when it gives one (nil: the node's default dialer).
func peerDialer(via map[string]string) func(context.Context, string) (net.Conn, error) {
	if len(via) == 0 {
		return nil
	}
	var d net.Dialer
	return func(ctx context.Context, addr string) (net.Conn, error) {
		if v, ok := via[addr]; ok {
			addr = v
		}
		return d.DialContext(ctx, "tcp", addr)
	}
}
