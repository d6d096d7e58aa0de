package cli

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/wick-dev/wick/components"
	"github.com/wick-dev/wick/engine/config"
	"github.com/wick-dev/wick/tui"
	"github.com/wick-dev/wick/tui/render"
)

func (a *app) findOptions() components.FindOptions {
	return components.FindOptions{Dirs: components.DefaultDirs(a.env.WorkDir, tui.UserConfigDir(a.env.Getenv)), WorkDir: a.env.WorkDir, Self: a.env.Self}
}

// loadConfig reads .torchxconfig: only $TORCHXCONFIG when set, else ~/.torchxconfig and
// ./.torchxconfig, the project file winning.
func (a *app) loadConfig() (*config.Config, error) {
	explicit := a.env.Getenv(config.EnvVar)
	return config.Load(config.Locations{
		TorchxConfig: explicit, TorchxConfigSet: explicit != "",
		Cwd: a.env.WorkDir, Home: a.env.Getenv("HOME"),
	})
}

func (a *app) builtinsCmd() *cobra.Command {
	var print string
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "builtins [--print NAME]",
		Short: "List the builtin components and user components on the search path",
		Long: `List the components wick run can launch: the builtins, then user components
found on the search path (./.wick/components, ~/.config/wick/components).
--print NAME prints a component as a YAML component file: a starting point for your own.`,
		Args: args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if print != "" {
				c, err := components.Find(print, a.findOptions())
				if err != nil {
					return usageError{err}
				}
				_, err = fmt.Fprint(a.env.Stdout, render.EscapeText(c.Describe()))
				return err
			}
			all, errs := components.All(a.findOptions())
			for _, err := range errs {
				fmt.Fprintf(a.env.Stderr, "wick: warning: %s\n", render.Escape(oneLine(err.Error())))
			}
			if asJSON {
				type item struct {
					Name    string `json:"name"`
					Summary string `json:"summary"`
					Source  string `json:"source,omitempty"`
				}
				items := []item{}
				for _, c := range all {
					items = append(items, item{c.Name, c.Summary, c.Source})
				}
				return writeJSON(a.env.Stdout, items)
			}
			var builtin, user []*components.Component
			for _, c := range all {
				if c.Source == "" {
					builtin = append(builtin, c)
				} else {
					user = append(user, c)
				}
			}
			st := a.out()
			fmt.Fprintf(a.env.Stdout, "Found %d builtin components:\n", len(builtin))
			for i, c := range builtin {
				fmt.Fprintf(a.env.Stdout, "%3d. %-14s %s\n", i+1, st.Key(render.Escape(c.Name)), st.Dim(render.Escape(c.Summary)))
			}
			if len(user) > 0 {
				fmt.Fprintf(a.env.Stdout, "\nFound %d user components:\n", len(user))
				for i, c := range user {
					fmt.Fprintf(a.env.Stdout, "%3d. %-14s %s %s\n", i+1, st.Key(render.Escape(c.Name)), st.Dim(render.Escape(c.Summary)), st.Dim("("+render.Escape(c.Source)+")"))
				}
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&print, "print", "", "print the named component as a YAML component file")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print as JSON")
	return cmd
}
