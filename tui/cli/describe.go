package cli

import (
	"time"

	"github.com/spf13/cobra"

	"github.com/wick-dev/wick/engine/metrics"
	"github.com/wick-dev/wick/engine/spec"
	"github.com/wick-dev/wick/tui/render"
)

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
