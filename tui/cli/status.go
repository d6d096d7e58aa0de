package cli

import (
	"context"
	"time"

	"github.com/spf13/cobra"

	"github.com/wick-dev/wick/engine/spec"
	"github.com/wick-dev/wick/tui/render"
)

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
