package cli

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/wick-dev/wick/engine/spec"
	"github.com/wick-dev/wick/tui/render"
)

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
