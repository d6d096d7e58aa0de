package cli

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"

	"github.com/wick-dev/wick/engine/sched"
	"github.com/wick-dev/wick/engine/spec"
	"github.com/wick-dev/wick/tui/render"
)

func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

func (a *app) statusCmd() *cobra.Command {
	var asJSON bool
	var roles []string
	cmd := &cobra.Command{
		Use:   "status HANDLE",
		Short: "Show an app's state and every replica's state, exit code, restarts and error",
		Long: `Show an app's status: its state, then one row per replica with state, exit code,
restarts, pid or container, start time, duration and error.

HANDLE is SCHEDULER://SESSION/APP_ID, as printed by wick run and wick list.
Exits 1 with "no such app" when HANDLE names no app.`,
		Args: args(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, argv []string) error {
			h, err := parseHandle(argv[0])
			if err != nil {
				return err
			}
			st, err := a.runner().Status(a.ctx, h)
			if err != nil {
				return err
			}
			if len(roles) > 0 {
				st.Roles = filterRoles(st.Roles, roles)
			}
			if asJSON {
				return writeJSON(a.env.Stdout, st)
			}
			return render.Status(a.env.Stdout, st, time.Now(), a.out())
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the status as JSON")
	cmd.Flags().StringSliceVar(&roles, "roles", nil, "show only these roles (comma-separated)")
	return cmd
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
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "describe HANDLE",
		Short: "Show everything known of an app: status, replicas, log paths, AppDef, run options",
		Args:  args(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, argv []string) error {
			h, err := parseHandle(argv[0])
			if err != nil {
				return err
			}
			d, err := a.runner().Describe(a.ctx, h)
			if err != nil {
				return err
			}
			if asJSON {
				return writeJSON(a.env.Stdout, struct {
					Status spec.AppStatus `json:"status"`
					App    *spec.AppDef   `json:"app,omitempty"`
					Cfg    spec.Cfg       `json:"run_options,omitempty"`
				}{d.Status, d.App, d.Cfg})
			}
			return render.Describe(a.env.Stdout, d, time.Now(), a.out(), render.TreeOptions{})
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print as JSON")
	return cmd
}

func (a *app) listCmd() *cobra.Command {
	var asJSON bool
	var schedName string
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List every app wick knows, of every scheduler and session, newest first",
		Long: `List apps: handle, name, state, running/total replicas, age, duration and exit code.
Without -s every scheduler is listed; one that cannot be reached (a Docker Engine that is
down) is reported on stderr and the others are still listed.`,
		Args: args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if schedName != "" {
				if _, err := a.runner().Scheduler(schedName); err != nil {
					return usageError{err}
				}
			}
			apps, errs := a.runner().List(a.ctx, schedName)
			for _, err := range errs {
				if schedName == "" {
					fmt.Fprintf(a.env.Stderr, "wick: warning: %s\n", oneLine(err.Error()))
				}
			}
			if schedName != "" && len(errs) > 0 {
				return errs[0]
			}
			if apps == nil {
				apps = []spec.AppStatus{}
			}
			if asJSON {
				return writeJSON(a.env.Stdout, apps)
			}
			return render.AppList(a.env.Stdout, apps, time.Now(), a.out())
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print as JSON")
	cmd.Flags().StringVarP(&schedName, "scheduler", "s", "", "list only this scheduler's apps")
	return cmd
}

func (a *app) cancelCmd() *cobra.Command {
	var noWait bool
	var timeout time.Duration
	cmd := &cobra.Command{
		Use:   "cancel HANDLE",
		Short: "Stop an app: SIGTERM to every replica, SIGKILL after the grace period",
		Long: `Stop an app. Every replica gets SIGTERM (its whole process group, or its
container), then SIGKILL after the scheduler's grace period; the app ends CANCELLED.
Waits until the app is terminal unless --no-wait. Cancelling a finished app does nothing.`,
		Args: args(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, argv []string) error {
			h, err := parseHandle(argv[0])
			if err != nil {
				return err
			}
			r := a.runner()
			if err := r.Cancel(a.ctx, h); err != nil {
				return err
			}
			if noWait {
				return nil
			}
			ctx, cancel := contextWithTimeout(a.ctx, timeout)
			defer cancel()
			st, err := r.Wait(ctx, h, 20*time.Millisecond)
			if err != nil {
				return fmt.Errorf("waiting for %s to stop: %w", h, err)
			}
			fmt.Fprintf(a.env.Stderr, "%s %s\n", h, a.errs().State(st.State, st.State.String()))
			return nil
		},
	}
	cmd.Flags().BoolVar(&noWait, "no-wait", false, "return once the stop is requested")
	cmd.Flags().DurationVar(&timeout, "timeout", time.Minute, "how long to wait for the app to stop")
	return cmd
}

func (a *app) deleteCmd() *cobra.Command {
	var force bool
	cmd := &cobra.Command{
		Use:   "delete HANDLE",
		Short: "Remove an app's state, logs and containers (refuses a running app without --force)",
		Args:  args(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, argv []string) error {
			h, err := parseHandle(argv[0])
			if err != nil {
				return err
			}
			if err := a.runner().Delete(a.ctx, h, force); err != nil {
				if errors.Is(err, sched.ErrRunning) {
					return fmt.Errorf("%w (cancel it first, or use --force)", err)
				}
				return err
			}
			fmt.Fprintf(a.env.Stderr, "deleted %s\n", h)
			return nil
		},
	}
	cmd.Flags().BoolVarP(&force, "force", "f", false, "cancel a running app first")
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
				return writeJSON(a.env.Stdout, map[string]string{"version": spec.Version})
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
