package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/wick-dev/wick/engine/metrics"
	"github.com/wick-dev/wick/engine/sched"
	"github.com/wick-dev/wick/engine/spec"
	"github.com/wick-dev/wick/engine/sweep"
	"github.com/wick-dev/wick/tui"
	"github.com/wick-dev/wick/tui/render"
)

// JSONSchema is the version of the --json outputs' shape, documented in docs/json.md:
// within a version keys are only ever added; renaming or removing one, or changing
// what a value means, makes the next version. `wick version --json` prints it.
const JSONSchema = 1

func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// handleHelp says what a HANDLE argument may be (see resolveHandle), for the help of
// every verb that takes one.
const handleHelp = `HANDLE is the app's handle, SCHEDULER://SESSION/APP_ID as wick run and wick list
print it; or its app id alone (train-kf2vb0x9qwm3); or the start of an app id that
only one app's id starts with (train-kf2). An app id given whole wins over the ids it
starts; a start that several ids share is an error that lists them.`

func (a *app) statusCmd() *cobra.Command {
	var asJSON bool
	var roles []string
	cmd := &cobra.Command{
		Use:               "status HANDLE",
		ValidArgsFunction: a.completeHandles,
		Short:             "Show an app's state and every replica's state, exit code, restarts and error",
		Long: `Show an app's status: its state, then one row per replica with state, exit code,
restarts, pid or container, start time, duration and error.

` + handleHelp + `
A sweep id (sweep-...) shows the sweep's apps, one row each, as wick list --sweep does.
Exits 2 with "no such app" when HANDLE names no app.`,
		Args: args(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, argv []string) error {
			if sw, apps, ok, err := a.sweepOf(argv[0]); ok || err != nil {
				if err != nil {
					return err
				}
				return a.sweepStatus(sw, apps, asJSON)
			}
			h, err := a.resolveHandle(argv[0])
			if err != nil {
				return err
			}
			d, err := a.runner().Describe(a.ctx, h)
			if err != nil {
				return err
			}
			st := &d.Status
			a.attachUsage(h, st)
			a.attachHang(h, d)
			if len(roles) > 0 {
				st.Roles = filterRoles(st.Roles, roles)
			}
			if asJSON {
				return writeJSON(a.env.Stdout, st)
			}
			if err := render.Status(a.env.Stdout, st, time.Now(), a.out()); err != nil {
				return err
			}
			a.hint(st)
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the status as JSON")
	cmd.Flags().StringSliceVar(&roles, "roles", nil, "show only these roles (comma-separated)")
	return cmd
}

// usageTimeout bounds reading what a running app's replicas use: the Docker Engine
// answers a stats request at its collector's next tick, within a second.
const usageTimeout = 3 * time.Second

// attachUsage adds the CPU and RSS of each running replica to st. It is best effort:
// a replica whose usage cannot be read (it just ended, the Engine is slow) is shown
// without it, and the status is still printed.
func (a *app) attachUsage(h spec.Handle, st *spec.AppStatus) {
	ctx, cancel := context.WithTimeout(a.ctx, usageTimeout)
	defer cancel()
	_ = a.runner().AttachUsage(ctx, h, st)
}

func filterRoles(rs []spec.RoleStatus, keep []string) []spec.RoleStatus {
	var out []spec.RoleStatus
	for _, r := range rs {
		for _, k := range keep {
			if r.Role == k {
				out = append(out, r)
			}
		}
	}
	return out
}

func (a *app) describeCmd() *cobra.Command {
	var asJSON, reveal bool
	cmd := &cobra.Command{
		Use:               "describe HANDLE",
		ValidArgsFunction: a.completeHandles,
		Short:             "Show everything known of an app: status, replicas, log paths, AppDef, run options",
		Long: `Show everything known of an app: its status and every replica's (as wick status),
log paths, the AppDef it was launched with, its run options and any metric alarm.
Env values whose names look secret are masked unless --show-secrets.

` + handleHelp + `
Exits 2 with "no such app" when HANDLE names no app.`,
		Args: args(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, argv []string) error {
			h, err := a.resolveHandle(argv[0])
			if err != nil {
				return err
			}
			d, err := a.runner().Describe(a.ctx, h)
			if err != nil {
				return err
			}
			a.attachUsage(h, &d.Status)
			a.attachHang(h, d)
			alarms, notes, namer := a.metricAlarms(h, d)
			if asJSON {
				var v any = struct {
					Status spec.AppStatus  `json:"status"`
					App    *spec.AppDef    `json:"app,omitempty"`
					Cfg    spec.Cfg        `json:"run_options,omitempty"`
					Alarms []metrics.Alarm `json:"metric_alarms,omitempty"`
				}{d.Status, d.App, d.Cfg, alarms}
				if !reveal {
					if v, err = render.MaskJSON(v); err != nil {
						return err
					}
				}
				return writeJSON(a.env.Stdout, v)
			}
			found := &metrics.Found{N: len(alarms), Notes: notes}
			for _, al := range alarms {
				found.Lines = append(found.Lines, al.DescribeWith(namer.Name)) // the peer too: "rank 1", not replica:local
			}
			if err := render.Describe(a.env.Stdout, d, time.Now(), a.out(), render.TreeOptions{MaskSecrets: !reveal, Alarms: found}); err != nil {
				return err
			}
			a.hint(&d.Status)
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print as JSON")
	cmd.Flags().BoolVar(&reveal, "show-secrets", false, "show env values whose names look secret (TOKEN, SECRET, PASS, PWD, PAT, CREDENTIAL, AUTH, PRIVATE, CERT, SESSION, COOKIE, *_KEY); masked otherwise")
	return cmd
}

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

func (a *app) versionCmd() *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "version",
		Short: "Print wick's version",
		Args:  args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if asJSON {
				return writeJSON(a.env.Stdout, struct {
					Version string `json:"version"`
					Schema  int    `json:"json_schema"`
				}{spec.Version, JSONSchema})
			}
			_, err := fmt.Fprintf(a.env.Stdout, "wick %s\n", spec.Version)
			return err
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print as JSON")
	return cmd
}

func (a *app) runoptsCmd() *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "runopts [SCHEDULER]",
		Short: "List the run options (-cfg KEY=VALUE) each scheduler accepts",
		Args:  args(cobra.MaximumNArgs(1)),
		RunE: func(cmd *cobra.Command, argv []string) error {
			r := a.runner()
			names := r.SchedulerBackends()
			if len(argv) == 1 {
				names = argv[:1]
			}
			all := map[string]spec.RunOpts{}
			for i, name := range names {
				opts, err := r.SchedulerRunOpts(name)
				if err != nil {
					return usageError{err}
				}
				all[name] = opts
				if asJSON {
					continue
				}
				if i > 0 {
					fmt.Fprintln(a.env.Stdout)
				}
				render.RunOpts(a.env.Stdout, name, opts, a.out())
			}
			if asJSON {
				return writeJSON(a.env.Stdout, runOptsJSON(all))
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print as JSON")
	return cmd
}

type runOptJSON struct {
	Name     string `json:"name"`
	Type     string `json:"type"`
	Default  any    `json:"default,omitempty"`
	Required bool   `json:"required,omitempty"`
	Help     string `json:"help"`
}

func runOptsJSON(all map[string]spec.RunOpts) map[string][]runOptJSON {
	out := map[string][]runOptJSON{}
	for name, opts := range all {
		list := []runOptJSON{}
		for _, o := range opts {
			list = append(list, runOptJSON{o.Name, o.Type.String(), o.Default, o.Required, o.Help})
		}
		out[name] = list
	}
	return out
}
