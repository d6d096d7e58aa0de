package cli

import (
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/wick-dev/wick/engine/sched"
	"github.com/wick-dev/wick/engine/spec"
)

func (a *app) cancelCmd() *cobra.Command {
	var noWait, asJSON, now bool
	var timeout time.Duration
	cmd := &cobra.Command{
		Use:               "cancel HANDLE...",
		ValidArgsFunction: a.completeHandlesOrSweeps,
		Short:             "Stop apps: SIGTERM to every replica, SIGKILL after the grace period",
		Long: `Stop one app or several. Every replica gets SIGTERM (its whole process group, or
its container), then SIGKILL after the scheduler's grace period; the app ends CANCELLED.
Waits until every app is terminal unless --no-wait. Cancelling a finished app does
nothing. Cancelling again does not shorten the grace period; --now kills at once
(SIGKILL, no TERM trap runs) on local_cwd, local_dir and local_docker. Slurm always
sends SIGTERM and waits its KillWait first: there --now is refused, and nothing is
stopped. Every handle and sweep id is read before any app is touched: one that names
nothing stops them all; one that fails to stop does not stop the others, and the exit
code is 1 if any failed.

` + handleHelp + `
A sweep id (wick sweep list) stands for its apps, its queued ones cancelled unrun.`,
		Args: args(cobra.MinimumNArgs(1)),
		RunE: func(cmd *cobra.Command, argv []string) error {
			if err := a.checkArgs(argv, "cancelled"); err != nil {
				return err
			}
			argv, _, err := a.sweepArgs(argv, false, false)
			if err != nil {
				return err
			}
			hs, err := a.resolveHandles(argv)
			if err != nil {
				return err
			}
			r := a.runner()
			stop := r.Cancel
			if now {
				stop = r.Kill
			}
			ctx, cancel := contextWithTimeout(a.ctx, timeout)
			defer cancel()
			outs := make([]map[string]any, len(hs))
			errs := sched.Each(hs, func(i int, h spec.Handle) error {
				if err := stop(a.ctx, h); err != nil {
					return err
				}
				if noWait {
					outs[i] = map[string]any{"handle": h.String(), "cancel_requested": true}
					return nil
				}
				st, err := r.Wait(ctx, h, 20*time.Millisecond)
				if err != nil {
					return fmt.Errorf("waiting for %s to stop: %w", h, err)
				}
				outs[i] = map[string]any{"handle": h.String(), "state": st.State.String()}
				if !asJSON {
					fmt.Fprintf(a.env.Stderr, "%s %s\n", h, a.errs().State(st.State, st.State.String()))
				}
				return nil
			})
			return a.bulkResult("cancel", hs, outs, errs, asJSON)
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the handle and the final state as JSON (a list for several apps)")
	cmd.Flags().BoolVar(&noWait, "no-wait", false, "return once the stop is requested")
	cmd.Flags().BoolVar(&now, "now", false, "kill every replica at once (SIGKILL), without the grace period")
	cmd.Flags().DurationVar(&timeout, "timeout", time.Minute, "how long to wait for the apps to stop")
	return cmd
}
