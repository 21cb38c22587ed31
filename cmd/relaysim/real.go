package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"syscall"

	"github.com/relaysim/relaysim/mutants"
	"github.com/relaysim/relaysim/realcluster"
	"github.com/relaysim/relaysim/sim"
	"github.com/relaysim/relaysim/system"
)

// cmdReal runs the relay for real (realcluster) and judges it.
func cmdReal(args []string, stdout, stderr io.Writer) int {
	cfg := realcluster.DefaultConfig()
	fs := newFlagSet("real")
	seed := fs.String("seed", "0x2a", "root seed of the workload and nemesis plans, hex (0x2a) or decimal")
	nemesis := fs.String("nemesis", "all", "nemesis kinds: all, none, or a list of "+fmt.Sprint(realcluster.Kinds))
	mode := fs.String("mode", cfg.Mode, "relay mode: single, bulk or stream")
	relayd := fs.String("relayd", "", "relayd binary to run (default: build ./cmd/relayd)")
	mutant := fs.String("mutant", "", "build relayd with this catalog mutant applied (go build -overlay)")
	out := fs.String("out", "", "directory for the history, the logs and Redis' files (default: a new temporary directory)")
	fs.DurationVar(&cfg.Duration, "duration", cfg.Duration, "load phase, with the nemesis on (real time)")
	fs.DurationVar(&cfg.Drain, "drain", cfg.Drain, "longest liveness phase (it ends when every member has what it is owed)")
	fs.IntVar(&cfg.Nodes, "nodes", cfg.Nodes, "relayd processes")
	fs.IntVar(&cfg.Users, "users", cfg.Users, "users (one client each)")
	fs.IntVar(&cfg.Rooms, "rooms", cfg.Rooms, "rooms")
	fs.IntVar(&cfg.RoomsPerUser, "rooms-per-user", cfg.RoomsPerUser, "rooms each user joins at the start")
	fs.Float64Var(&cfg.Rate, "rate", cfg.Rate, "sends per second, all users together")
	fs.Float64Var(&cfg.Churn, "churn", cfg.Churn, "joins, leaves and reconnects per second")
	fs.IntVar(&cfg.Faults, "faults", cfg.Faults, "nemesis steps (one at a time; the first take every kind once)")
	fs.StringVar(&cfg.RedisAddr, "redis", "", "use the Redis at this loopback ADDR instead of starting redis-server (refused when it holds data, unless -flush)")
	fs.BoolVar(&cfg.Flush, "flush", false, "with -redis: wipe its data first")
	usage := func(err error) int {
		fmt.Fprintf(stderr, "relaysim real: %v\n", err)
		fmt.Fprintln(stderr, "usage: relaysim real -seed 0x2a -duration 60s [-nodes 3 -nemesis all ...]; -h lists the flags")
		return exitUsage
	}
	if err := parseFlags(fs, args, stdout); err != nil {
		if errors.Is(err, errHelp) {
			return exitOK
		}
		return usageError(stderr, "real", err)
	}
	if fs.NArg() > 0 {
		return usage(fmt.Errorf("unexpected argument %q", fs.Arg(0)))
	}
	s, err := sim.ParseSeed(*seed)
	if err != nil {
		return usage(err)
	}
	cfg.Seed = uint64(s)
	if cfg.Nemesis, err = realcluster.ParseNemesis(*nemesis); err != nil {
		return usage(fmt.Errorf("-nemesis: %w", err))
	}
	if _, err := system.ParseMode(*mode); err != nil {
		return usage(err)
	}
	cfg.Mode = *mode
	if *relayd != "" && *mutant != "" {
		return usage(errors.New("-relayd and -mutant exclude each other (a mutant is built from the source tree)"))
	}
	if cfg.RedisAddr == "" {
		path, err := exec.LookPath("redis-server")
		if err != nil {
			return usage(errors.New("redis-server is not on PATH: install it (apt-get install redis-server) or give -redis ADDR of a running one"))
		}
		cfg.RedisServer = path
	}
	if cfg.Dir = *out; cfg.Dir == "" {
		if cfg.Dir, err = os.MkdirTemp("", "relaysim-real-*"); err != nil {
			return usage(err)
		}
	}
	cfg.Relayd = *relayd
	// A mutant is checked before anything is built: a bad name is bad input.
	var m *mutants.Mutant
	if *mutant != "" {
		if m, err = findMutant(*mutant); err != nil {
			return usage(err)
		}
	}
	if cfg.Relayd == "" {
		cfg.Relayd = filepath.Join(cfg.Dir, "relayd")
		if err := buildRelayd(cfg.Relayd, m, stderr); err != nil {
			fmt.Fprintf(stderr, "relaysim real: %v\n", err)
			return exitHarness
		}
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	fmt.Fprintf(stderr, "relaysim real: output in %s\n", cfg.Dir)
	res, err := realcluster.Run(ctx, cfg, stderr)
	var ue *realcluster.UsageError
	switch {
	case errors.As(err, &ue):
		return usage(err)
	case err != nil:
		fmt.Fprintf(stderr, "relaysim real: %v (logs in %s)\n", err, cfg.Dir)
		return exitHarness
	}
	realcluster.WriteSummary(stdout, res)
	switch {
	case len(res.Violations) > 0:
		return exitFail
	case len(res.Errs) > 0:
		return exitHarness
	}
	return exitOK
}

func findMutant(name string) (*mutants.Mutant, error) {
	all, err := mutants.Catalog()
	if err != nil {
		return nil, err
	}
	for _, m := range all {
		if m.Name == name {
			return m, nil
		}
	}
	return nil, fmt.Errorf("-mutant %q: no such mutant (relaysim mutants -list names them)", name)
}

// buildRelayd builds ./cmd/relayd into bin, with m applied when given.
func buildRelayd(bin string, m *mutants.Mutant, stderr io.Writer) error {
	root, err := moduleRoot()
	if err != nil {
		return err
	}
	args := []string{"build", "-o", bin}
	if m != nil {
		overlay, err := mutants.Apply(root, m)
		if err != nil {
			return fmt.Errorf("apply mutant %s: %w", m.Name, err)
		}
		args = append(args, "-overlay", overlay)
		fmt.Fprintf(stderr, "relaysim real: relayd with mutant %s (%s, caught by %s)\n", m.Name, m.File, m.Property)
	}
	cmd := exec.Command("go", append(args, "./cmd/relayd")...)
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("go build relayd: %v\n%s", err, out)
	}
	return nil
}
