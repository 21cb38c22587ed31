package realcluster

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/redis/go-redis/v9/maintnotifications"

	"github.com/relaysim/relaysim/model"
)

const (
	clusterToken = "realcluster-token"
	userSecret   = "realcluster-user-secret"
	startTimeout = 20 * time.Second // a process must be serving within this
	stopGrace    = 15 * time.Second // relayd's own graceful stop bound
)

// node is one relayd: its id, its fixed loopback port (kept across
// restarts, so peers' proxies keep pointing at it) and its process.
type node struct {
	id     string
	port   int
	proc   *proc
	paused bool
	// expected marks an exit the runner caused (kill, term, the end).
	expected bool
}

func (n *node) addr() string { return net.JoinHostPort("127.0.0.1", strconv.Itoa(n.port)) }

// cluster is the processes and proxies of one run.
type cluster struct {
	cfg       Config
	ps        procs
	log       io.Writer
	rec       *recorder
	redisAddr string
	redisPort int
	redis     *proc // nil with an external Redis
	nodes     []*node
	proxies   map[[2]int]*proxy

	mu       sync.Mutex
	logMu    sync.Mutex
	injected map[model.FaultKind]int
	errs     []error
}

// freePort returns a loopback port that was free a moment ago.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("find a free loopback port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

func (c *cluster) logf(format string, args ...any) {
	c.logMu.Lock()
	defer c.logMu.Unlock()
	fmt.Fprintf(c.log, "%8.3fs  %s\n", c.rec.now().Seconds(), fmt.Sprintf(format, args...))
}

// harnessErr notes a failure of the runner itself (not of the relay).
func (c *cluster) harnessErr(err error) {
	c.logf("harness error: %v", err)
	c.mu.Lock()
	c.errs = append(c.errs, err)
	c.mu.Unlock()
}

func redisClient(addr string) *redis.Client {
	return redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1, DialTimeout: time.Second,
		MaintNotificationsConfig: &maintnotifications.Config{Mode: maintnotifications.ModeDisabled}})
}

// waitRedis polls PING until Redis answers (not LOADING) or the timeout.
func waitRedis(ctx context.Context, addr string, p *proc, timeout time.Duration) error {
	rdb := redisClient(addr)
	defer rdb.Close()
	deadline := time.Now().Add(timeout)
	for {
		// Knock first: while nothing listens, go-redis's pool would log
		// every failed dial ("connection refused") on its own.
		err := knock(ctx, addr)
		if err == nil {
			err = rdb.Ping(ctx).Err()
		}
		if err == nil {
			return nil
		}
		if p != nil && !p.running() {
			return fmt.Errorf("redis-server exited: %v (see redis.log)", p.err)
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return fmt.Errorf("redis at %s does not answer: %w", addr, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// knock reports whether something accepts TCP connections at addr.
func knock(ctx context.Context, addr string) error {
	d := net.Dialer{Timeout: time.Second}
	conn, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return err
	}
	return conn.Close()
}

// startRedis runs redis-server on the run's port with its files in the
// run's directory: appendonly yes and appendfsync always, so every write
// acked to the relay is on disk before the ack, and a restart after
// SIGKILL loses none.
func (c *cluster) startRedis(ctx context.Context) error {
	dir := filepath.Join(c.cfg.Dir, "redis")
	p, err := c.ps.start("redis-server", filepath.Join(c.cfg.Dir, "redis.log"), nil, c.cfg.RedisServer,
		"--port", strconv.Itoa(c.redisPort), "--bind", "127.0.0.1", "--dir", dir, "--appendonly", "yes",
		"--appendfsync", "always", "--save", "", "--daemonize", "no", "--logfile", "")
	if err != nil {
		return err
	}
	c.redis = p
	return waitRedis(ctx, c.redisAddr, p, startTimeout)
}

// checkExternalRedis refuses a Redis that holds data unless Flush allows
// wiping it.
func (c *cluster) checkExternalRedis(ctx context.Context) error {
	// A running Redis answers at once: one that does not is bad input.
	if err := waitRedis(ctx, c.redisAddr, nil, 3*time.Second); err != nil {
		return &UsageError{err}
	}
	rdb := redisClient(c.redisAddr)
	defer rdb.Close()
	n, err := rdb.DBSize(ctx).Result()
	if err != nil {
		return fmt.Errorf("redis at %s: %w", c.redisAddr, err)
	}
	if n > 0 && !c.cfg.Flush {
		return &UsageError{fmt.Errorf("redis at %s holds %d keys; the run would mix its state with them: give -flush to wipe it, or another Redis", c.redisAddr, n)}
	}
	if n > 0 {
		return rdb.FlushAll(ctx).Err()
	}
	return nil
}

var (
	servingLine = regexp.MustCompile(`node (\S+) serving on `)
	panicLine   = regexp.MustCompile(`task .* panicked \(recovered\)`)
)

// startNode runs node i's relayd and waits for its serving line. Its
// peers are dialled through this node's proxies. takeover: the previous
// process under the id may still be registered (killed, not stopped).
func (c *cluster) startNode(ctx context.Context, i int, takeover bool) error {
	n := c.nodes[i]
	var via []string
	for j, peer := range c.nodes {
		if j != i {
			via = append(via, peer.addr()+"="+c.proxies[[2]int{i, j}].addr())
		}
	}
	args := []string{"-node", n.id, "-listen", n.addr(), "-redis", c.redisAddr, "-token", clusterToken,
		"-user-secret", userSecret, "-mode", c.cfg.Mode, "-peer-addr", strings.Join(via, ","),
		"-probes", filepath.Join(c.cfg.Dir, probesPrefix+n.id+".json")}
	if takeover {
		args = append(args, "-takeover")
	}
	// The port was free when the run began; after a kill it is free again
	// at once (the listener is gone), but a slow exit may hold it a moment.
	var err error
	for try := 1; try <= 10; try++ {
		if err = c.startNodeOnce(ctx, i, args); err == nil || ctx.Err() != nil {
			return err
		}
		c.logf("%s did not start (try %d): %v", n.id, try, err)
		if !sleepCtx(ctx, 300*time.Millisecond) {
			break
		}
	}
	return err
}

func (c *cluster) startNodeOnce(ctx context.Context, i int, args []string) error {
	n := c.nodes[i]
	serving := make(chan struct{})
	var once sync.Once
	onLine := func(line string) {
		if servingLine.MatchString(line) {
			once.Do(func() { close(serving) })
		}
		if panicLine.MatchString(line) {
			c.rec.record(model.Event{Kind: model.KindPanic, Node: n.id, Err: line})
		}
	}
	p, err := c.ps.start(n.id, filepath.Join(c.cfg.Dir, n.id+".log"), onLine, c.cfg.Relayd, args...)
	if err != nil {
		return err
	}
	c.mu.Lock()
	n.proc, n.paused, n.expected = p, false, false
	c.mu.Unlock()
	t := time.NewTimer(startTimeout)
	defer t.Stop()
	select {
	case <-serving:
		c.logf("%s serving on %s (pid %d)", n.id, n.addr(), p.pid())
		return nil
	case <-p.exited:
		return fmt.Errorf("%s exited before serving: %v (see %s.log)", n.id, p.err, n.id)
	case <-t.C:
		p.kill()
		return fmt.Errorf("%s did not start serving within %v", n.id, startTimeout)
	case <-ctx.Done():
		p.kill()
		return ctx.Err()
	}
}

// killNode SIGKILLs node i; undoing restarts it, taking over its id (its
// registry entry is still fresh).
func (c *cluster) killNode(i int) (func() error, error) {
	n := c.nodes[i]
	c.mu.Lock()
	n.expected = true
	p := n.proc
	c.mu.Unlock()
	p.kill()
	return func() error { return c.startNode(context.Background(), i, true) }, nil
}

// termNode SIGTERMs node i and waits for its graceful exit; undoing
// restarts it without -takeover (a graceful stop deregistered it).
func (c *cluster) termNode(i int) (func() error, error) {
	n := c.nodes[i]
	c.mu.Lock()
	n.expected = true
	p := n.proc
	c.mu.Unlock()
	err := p.stop(stopGrace + 5*time.Second)
	if err == nil && p.err != nil {
		err = fmt.Errorf("%s exited with %v after SIGTERM (want 0)", n.id, p.err)
	}
	if err != nil {
		c.relayFailure(n.id, err.Error())
	}
	return func() error { return c.startNode(context.Background(), i, false) }, nil
}

// pauseNode SIGSTOPs node i; undoing SIGCONTs it.
func (c *cluster) pauseNode(i int) (func() error, error) {
	n := c.nodes[i]
	if err := n.proc.signal(syscall.SIGSTOP); err != nil {
		return nil, err
	}
	c.mu.Lock()
	n.paused = true
	c.mu.Unlock()
	return func() error {
		c.mu.Lock()
		n.paused = false
		c.mu.Unlock()
		return n.proc.signal(syscall.SIGCONT)
	}, nil
}

// killRedis SIGKILLs redis-server; undoing restarts it on its files.
func (c *cluster) killRedis() (func() error, error) {
	c.redis.kill()
	return func() error { return c.startRedis(context.Background()) }, nil
}

// setLink puts the proxy from node i to node j into state s; undoing
// heals it.
func (c *cluster) setLink(i, j int, s linkState, delay time.Duration) func() error {
	p := c.proxies[[2]int{i, j}]
	p.set(s, delay)
	return func() error {
		p.set(linkPass, 0)
		return nil
	}
}

// relayFailure records a failure of the relay seen from outside (a
// process that died or misbehaved) as a panic event: the no-task-panics
// property covers a node that stopped working.
func (c *cluster) relayFailure(node, what string) {
	c.logf("relay failure: %s", what)
	c.rec.record(model.Event{Kind: model.KindPanic, Node: node, Err: what})
}

// heal ends every lingering effect before the liveness phase: links
// pass, paused nodes continue, and a node that is down (one that died by
// itself: the nemesis restarts the ones it stops) is recorded and
// restarted.
func (c *cluster) heal(ctx context.Context) error {
	for _, p := range c.proxies {
		p.set(linkPass, 0)
	}
	var errs []error
	for i, n := range c.nodes {
		c.mu.Lock()
		p, paused, expected := n.proc, n.paused, n.expected
		c.mu.Unlock()
		if paused {
			_ = p.signal(syscall.SIGCONT)
		}
		if !p.running() {
			if !expected {
				c.relayFailure(n.id, fmt.Sprintf("relayd %s (pid %d) exited by itself: %v (see %s.log)", n.id, p.pid(), p.err, n.id))
			}
			if err := c.startNode(ctx, i, true); err != nil {
				errs = append(errs, err)
			}
		}
	}
	if c.redis != nil && !c.redis.running() {
		if err := c.startRedis(ctx); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// stopNodes stops every relayd gracefully; one that does not exit 0 on
// SIGTERM is a relay failure.
func (c *cluster) stopNodes() {
	var wg sync.WaitGroup
	for _, n := range c.nodes {
		c.mu.Lock()
		p, expected := n.proc, n.expected
		n.expected = true
		c.mu.Unlock()
		if p == nil {
			continue
		}
		if !p.running() {
			if !expected {
				c.relayFailure(n.id, fmt.Sprintf("relayd %s (pid %d) exited by itself: %v (see %s.log)", n.id, p.pid(), p.err, n.id))
			}
			continue
		}
		wg.Go(func() {
			err := p.stop(stopGrace + 5*time.Second)
			if err == nil && p.err != nil {
				err = fmt.Errorf("%s exited with %v after SIGTERM (want 0)", n.id, p.err)
			}
			if err != nil {
				c.relayFailure(n.id, err.Error())
			}
		})
	}
	wg.Wait()
}
