package cli

import (
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/wick-dev/wick/engine/spec"
	"github.com/wick-dev/wick/engine/sweep"
	"github.com/wick-dev/wick/tui/render"
)

func (a *app) listCmd() *cobra.Command {
	var asJSON bool
	var schedName string
	var states []string
	var limit int
	var all bool
	var sweepID string
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List every app wick knows, of every scheduler and session, newest first",
		Long: `List apps: handle, name, state, running/total replicas, age, duration and exit code.
Without -s every scheduler is listed; one that cannot be reached (a Docker Engine that is
down) is reported on stderr and the others are still listed.
--state keeps apps in the given states (running, failed, ..., or "active" for those
that have not ended and "done" for those that have); --limit keeps the newest N.
local_docker apps other WICK_HOMEs launched on the same Engine are left out unless --all;
so are the kubernetes apps this WICK_HOME did not launch, which --all (-A, as kubectl's)
lists from every namespace of the current context, as NAMESPACE:APP_ID.`,
		Example: `  wick list --state failed,cancelled --limit 5
  wick list -s local_docker --state active --json`,
		Args: args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			keep, err := stateFilter(states)
			if err != nil {
				return err
			}
			if limit < 0 {
				return usagef("--limit %d: want 0 (no limit) or more", limit)
			}
			if schedName != "" {
				if _, err := a.runner().Scheduler(schedName); err != nil {
					return usageError{err}
				}
			}
			list := a.runner().List
			if all {
				list = a.runner().ListAllHomes
			}
			apps, errs := list(a.ctx, schedName)
			for _, err := range errs {
				if schedName == "" || len(apps) > 0 {
					fmt.Fprintf(a.env.Stderr, "wick: warning: %s\n", render.Escape(oneLine(err.Error())))
				}
			}
			if schedName != "" && len(errs) > 0 && len(apps) == 0 {
				return errs[0]
			}
			kept := []spec.AppStatus{}
			for _, st := range apps {
				if keep(st.State) && (all || !st.Foreign) && (limit == 0 || len(kept) < limit) {
					kept = append(kept, st)
				}
			}
			apps = kept
			a.attachHangs(apps)
			var sw *sweep.Sweep
			if sweepID != "" {
				if apps, sw, err = a.filterSweep(apps, sweepID); err != nil {
					return err
				}
			}
			if asJSON {
				return writeJSON(a.env.Stdout, apps)
			}
			if sw != nil {
				return sweepList(a.env.Stdout, sw, apps, time.Now(), a.out())
			}
			return render.AppList(a.env.Stdout, apps, time.Now(), a.out(), termWidth(a.env.Stdout))
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print as JSON")
	cmd.Flags().StringVarP(&schedName, "scheduler", "s", "", "list only this scheduler's apps")
	cmd.Flags().StringSliceVar(&states, "state", nil, "list only apps in these states (comma-separated; active, done, or a state name)")
	cmd.Flags().IntVar(&limit, "limit", 0, "list at most this many apps, newest first (0: all)")
	cmd.Flags().BoolVarP(&all, "all", "A", false, "list the apps of other WICK_HOMEs too (local_docker's on the same Engine, kubernetes' in every namespace)")
	cmd.Flags().StringVar(&sweepID, "sweep", "", "list only the apps of this sweep, in queue order, with a column per swept name")
	_ = cmd.RegisterFlagCompletionFunc("sweep", a.completeSweepFlag)
	_ = cmd.RegisterFlagCompletionFunc("scheduler", a.completeSchedulers)
	_ = cmd.RegisterFlagCompletionFunc("state", func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
		return []string{"active", "done", "queued", "pending", "running", "succeeded", "failed", "cancelled", "unknown"}, cobra.ShellCompDirectiveNoFileComp
	})
	return cmd
}

// stateFilter reads --state: state names, "active" (not ended) and "done" (ended).
func stateFilter(names []string) (func(spec.AppState) bool, error) {
	if len(names) == 0 {
		return func(spec.AppState) bool { return true }, nil
	}
	var active, done bool
	want := map[spec.AppState]bool{}
	for _, raw := range names {
		switch n := strings.ToLower(strings.TrimSpace(raw)); n {
		case "active":
			active = true
		case "done":
			done = true
		default:
			st, err := spec.ParseAppState(strings.ToUpper(n))
			if err != nil {
				return nil, usagef("--state \"%s\": not a state (want active, done, or one of queued, pending, running, succeeded, failed, cancelled, unknown)", render.Escape(truncate(raw, 40)))
			}
			want[st] = true
		}
	}
	return func(s spec.AppState) bool {
		return want[s] || (active && !s.Terminal()) || (done && s.Terminal())
	}, nil
}
