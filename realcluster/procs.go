package realcluster

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"sync"
	"syscall"
	"time"
)

// proc is one process the runner started.
type proc struct {
	name   string
	cmd    *exec.Cmd
	exited chan struct{} // closed once the process has exited and its output is read
	err    error         // cmd.Wait's result, once exited is closed
}

// procs starts processes and stops every one of them by PID at the end.
type procs struct {
	mu  sync.Mutex
	all []*proc
}

// start runs bin with args; its output (stdout and stderr) is appended to
// logPath and every line is passed to onLine (from one goroutine).
func (ps *procs) start(name, logPath string, onLine func(string), bin string, args ...string) (*proc, error) {
	logf, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(bin, args...)
	dieWithRunner(cmd)
	pr, pw := io.Pipe()
	cmd.Stdout, cmd.Stderr = pw, pw
	if err := cmd.Start(); err != nil {
		logf.Close()
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	p := &proc{name: name, cmd: cmd, exited: make(chan struct{})}
	ps.mu.Lock()
	ps.all = append(ps.all, p)
	ps.mu.Unlock()
	scanned := make(chan struct{})
	go func() {
		defer close(scanned)
		sc := bufio.NewScanner(pr)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			fmt.Fprintln(logf, sc.Text())
			if onLine != nil {
				onLine(sc.Text())
			}
		}
		_, _ = io.Copy(io.Discard, pr) // a line too long: keep the pipe drained
	}()
	go func() {
		p.err = cmd.Wait()
		pw.Close()
		<-scanned
		logf.Close()
		close(p.exited)
	}()
	return p, nil
}

func (p *proc) pid() int { return p.cmd.Process.Pid }

func (p *proc) running() bool {
	select {
	case <-p.exited:
		return false
	default:
		return true
	}
}

func (p *proc) signal(sig syscall.Signal) error {
	if !p.running() {
		return fmt.Errorf("%s (pid %d) has exited", p.name, p.pid())
	}
	return p.cmd.Process.Signal(sig)
}

// kill sends SIGKILL and waits for the exit.
func (p *proc) kill() {
	_ = p.cmd.Process.Signal(syscall.SIGKILL)
	<-p.exited
}

// stop asks the process to exit (SIGCONT first: a paused process handles
// no signal but SIGKILL), then kills it after grace.
func (p *proc) stop(grace time.Duration) error {
	if !p.running() {
		return nil
	}
	_ = p.cmd.Process.Signal(syscall.SIGCONT)
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	t := time.NewTimer(grace)
	defer t.Stop()
	select {
	case <-p.exited:
		return nil
	case <-t.C:
		p.kill()
		return fmt.Errorf("%s (pid %d) did not exit within %v of SIGTERM: killed", p.name, p.pid(), grace)
	}
}

// stopAll stops every process still running, each by its PID, and
// returns the errors of those that had to be killed.
func (ps *procs) stopAll(grace time.Duration) error {
	ps.mu.Lock()
	all := append([]*proc(nil), ps.all...)
	ps.mu.Unlock()
	var errs []error
	var wg sync.WaitGroup
	var mu sync.Mutex
	for _, p := range all {
		wg.Go(func() {
			if err := p.stop(grace); err != nil {
				mu.Lock()
				errs = append(errs, err)
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}

// pids lists the PIDs of every process started.
func (ps *procs) pids() []int {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	out := make([]int, len(ps.all))
	for i, p := range ps.all {
		out[i] = p.pid()
	}
	return out
}
