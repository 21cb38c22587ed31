package main

import (
	"bufio"
	"fmt"
	"os"
	"strings"

	"github.com/relaysim/relaysim/sim"
	"github.com/relaysim/relaysim/timeline"
)

// writeTimeline draws res as the HTML page of -timeline FILE: the history,
// the violations with their evidence, and the kept trace for hovering.
func writeTimeline(path, title, replay string, res *sim.Result) error {
	var trace []string
	if res.Trace != nil {
		if text := res.Trace.Text(); text != "" {
			trace = strings.Split(strings.TrimSuffix(text, "\n"), "\n")
		}
	}
	c, n := res.Config, res.Counts() // as the printed summary counts
	in := timeline.Input{
		Title:      fmt.Sprintf("%s seed=%s mode=%s nodes=%d users=%d", title, c.Seed, c.Mode, c.Nodes, n.Users),
		Counts:     &n,
		History:    res.History,
		Violations: res.Violations,
		Trace:      trace,
	}
	if res.Failed() {
		in.Command = replay
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	w := bufio.NewWriter(f)
	if err := timeline.Write(w, in); err != nil {
		f.Close()
		return err
	}
	if err := w.Flush(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
