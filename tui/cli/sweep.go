package cli

import (
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/wick-dev/wick/engine/runner"
	"github.com/wick-dev/wick/engine/spec"
	"github.com/wick-dev/wick/engine/sweep"
	"github.com/wick-dev/wick/tui/render"
)

// sweepCmd is `wick sweep`: what concerns a sweep as a whole (its queue).
func (a *app) sweepCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "sweep",
		Short: "Manage sweeps: resume a sweep's queue, move a queued app",
		Long: `A sweep is the grid of apps wick run --sweep launches. wick list --sweep ID lists its
apps; wick cancel ID and wick delete ID act on all of them; wick metrics --sweep ID
compares them. These verbs act on its queue.`,
	}
	cmd.AddCommand(&cobra.Command{
		Use:               "resume SWEEP_ID",
		Short:             "Start the queue of a sweep again (after its process was killed)",
		Args:              args(cobra.ExactArgs(1)),
		ValidArgsFunction: a.completeSweepArg,
		RunE: func(cmd *cobra.Command, argv []string) error {
			sw, started, err := a.runner().ResumeSweep(a.ctx, argv[0])
			switch {
			case errors.Is(err, sweep.ErrNoSweep) || errors.Is(err, sweep.ErrNoStore):
				return usageError{err}
			case err != nil:
				return err
			case started:
				fmt.Fprintf(a.env.Stderr, "sweep %s: queue resumed, %d queued\n", sw.ID, sw.Waiting())
				a.sayEnvKept(sw)
			case sw.QueueRunning():
				fmt.Fprintf(a.env.Stderr, "sweep %s: its queue is running (pid %d)\n", sw.ID, sw.Queue.PID)
			default:
				fmt.Fprintf(a.env.Stderr, "sweep %s: nothing queued\n", sw.ID)
			}
			return nil
		},
	})
	var asJSON bool
	list := &cobra.Command{
		Use:   "list",
		Short: "List the sweeps, newest first: their apps by state and their queue",
		Args:  args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			return a.listSweeps(asJSON)
		},
	}
	list.Flags().BoolVar(&asJSON, "json", false, "print as JSON")
	cmd.AddCommand(list)
	var to int
	move := &cobra.Command{
		Use:               "move HANDLE --to N",
		Short:             "Move a queued app to place N of its sweep's queue (1: next to start)",
		Long:              "Move a queued app to place N of its sweep's queue (1: next to start).\n\n" + handleHelp,
		Args:              args(cobra.ExactArgs(1)),
		ValidArgsFunction: a.completeQueued,
		RunE: func(cmd *cobra.Command, argv []string) error {
			if to < 1 {
				return usagef("--to %d: want 1 or more", to)
			}
			h, err := a.resolveHandle(argv[0])
			if err != nil {
				return err
			}
			sw, place, last, err := a.runner().MoveQueued(h, to)
			if errors.Is(err, runner.ErrNotInSweep) {
				return usagef("%s is not an app of a sweep", h)
			}
			if err != nil {
				return usageError{err}
			}
			end := ""
			if last {
				end = " (the last)" // an app asked past the end went there
			}
			fmt.Fprintf(a.env.Stderr, "%s: place %d of the queue of sweep %s%s\n", h, place, sw.ID, end)
			return nil
		},
	}
	move.Flags().IntVar(&to, "to", 1, "the place in the queue, 1 being the next app to start")
	cmd.AddCommand(move)
	return cmd
}

// listSweeps prints one row per sweep: its id, component and scheduler, how many of
// its apps are in each state, and whether its queue runs.
func (a *app) listSweeps(asJSON bool) error {
	store := a.runner().Sweeps()
	all, err := store.All()
	if err != nil {
		return err
	}
	// Only the schedulers the sweeps run on are asked (not Docker and Slurm for a
	// machine's local sweeps).
	var apps []spec.AppStatus
	asked := map[string]bool{}
	for _, sw := range all {
		if !asked[sw.Scheduler] {
			asked[sw.Scheduler] = true
			got, _ := a.runner().List(a.ctx, sw.Scheduler)
			apps = append(apps, got...)
		}
	}
	counts := map[string]map[spec.AppState]int{}
	for _, st := range apps {
		if st.Sweep == nil {
			continue
		}
		if counts[st.Sweep.ID] == nil {
			counts[st.Sweep.ID] = map[spec.AppState]int{}
		}
		counts[st.Sweep.ID][st.State]++
	}
	order := []spec.AppState{spec.Queued, spec.Pending, spec.Running, spec.Succeeded, spec.Failed, spec.Cancelled, spec.UnknownState}
	if asJSON {
		out := make([]map[string]any, 0, len(all))
		for _, sw := range all {
			states := map[string]int{}
			for s, n := range counts[sw.ID] {
				states[s.String()] = n
			}
			out = append(out, map[string]any{"sweep": sw.ID, "component": sw.Component, "scheduler": sw.Scheduler,
				"names": sw.Names, "apps": len(sw.Entries), "states": states, "queue_running": sw.QueueRunning(), "created": sw.Created})
		}
		return writeJSON(a.env.Stdout, out)
	}
	rows := make([][]string, 0, len(all))
	now := time.Now()
	for _, sw := range all {
		var parts []string
		for _, s := range order {
			if n := counts[sw.ID][s]; n > 0 {
				parts = append(parts, fmt.Sprintf("%d %s", n, strings.ToLower(s.String())))
			}
		}
		queue := "done"
		switch {
		case sw.QueueRunning():
			queue = "running"
		case sw.Waiting() > 0:
			queue = "stopped (wick sweep resume)"
		}
		rows = append(rows, []string{sw.ID, render.Escape(sw.Component), sw.Scheduler, render.Escape(strings.Join(sw.Names, " x ")),
			strconv.Itoa(len(sw.Entries)), strings.Join(parts, ", "), queue, render.Age(sw.Created, now)})
	}
	_, err = io.WriteString(a.env.Stdout, render.Table([]string{"SWEEP", "COMPONENT", "SCHEDULER", "NAMES", "APPS", "STATES", "QUEUE", "AGE"}, rows, a.out()))
	return err
}
