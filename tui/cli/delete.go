package cli

import (
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/wick-dev/wick/engine/sched"
	"github.com/wick-dev/wick/engine/spec"
	"github.com/wick-dev/wick/tui"
	"github.com/wick-dev/wick/tui/render"
)

func (a *app) deleteCmd() *cobra.Command {
	var force, asJSON, finished bool
	cmd := &cobra.Command{
		Use:               "delete HANDLE... | --all-finished",
		ValidArgsFunction: a.completeHandlesOrSweeps,
		Short:             "Remove apps' state, logs and containers (refuses a running app without --force)",
		Long: `Remove the state, logs and containers of one app or several, or with --all-finished
of every finished app of this WICK_HOME (what the UI's P does), and of the sweeps that
leaves with no app. A running app is
refused unless --force, which cancels it first. Every handle and sweep id is read
before any app is touched: one that names nothing stops them all; one that fails to be
deleted does not stop the others, and the exit code is 1 if any failed.

` + handleHelp + `
A sweep id (wick sweep list) stands for its apps and forgets the sweep.`,
		Args: args(func(cmd *cobra.Command, argv []string) error {
			switch {
			case finished && len(argv) > 0:
				return errors.New("--all-finished takes no handle")
			case !finished && len(argv) == 0:
				return errors.New("delete needs a HANDLE (or several), or --all-finished")
			}
			return nil
		}),
		RunE: func(cmd *cobra.Command, argv []string) error {
			if err := a.checkArgs(argv, "deleted"); err != nil {
				return err
			}
			argv, sweepIDs, err := a.sweepArgs(argv, true, force)
			if err != nil {
				return err
			}
			hs, err := a.resolveHandles(argv)
			var emptied []string
			if finished {
				hs, emptied, err = a.finishedApps()
			}
			if err != nil {
				return err
			}
			outs := make([]map[string]any, len(hs))
			errs := sched.Each(hs, func(i int, h spec.Handle) error {
				if err := a.runner().Delete(a.ctx, h, force); err != nil {
					if errors.Is(err, sched.ErrRunning) {
						// The scheduler's own hint is for the UI; one is enough.
						return fmt.Errorf("%w: %s (cancel it first, or use --force)", sched.ErrRunning, h)
					}
					return err
				}
				if err := tui.ForgetApp(a.home, h); err != nil {
					fmt.Fprintf(a.env.Stderr, "wick: warning: %s\n", render.Escape(oneLine(err.Error())))
				}
				outs[i] = map[string]any{"handle": h.String(), "deleted": true}
				if !asJSON {
					fmt.Fprintf(a.env.Stderr, "deleted %s\n", h)
				}
				return nil
			})
			if finished && len(hs) == 0 && !asJSON {
				fmt.Fprintln(a.env.Stderr, "no finished app to delete")
			}
			a.forgetSweeps(sweepIDs)
			a.forgetEmptySweeps(emptied, asJSON)
			if finished && len(hs) == 1 && errs[0] == nil && asJSON {
				return writeJSON(a.env.Stdout, outs) // --all-finished always prints a list
			}
			return a.bulkResult("delete", hs, outs, errs, asJSON)
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the deleted handle as JSON (a list for several apps or --all-finished)")
	cmd.Flags().BoolVarP(&force, "force", "f", false, "cancel a running app first, and wait for it to stop")
	cmd.Flags().BoolVar(&finished, "all-finished", false, "delete every finished app of this WICK_HOME")
	return cmd
}
