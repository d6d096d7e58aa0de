package cli

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/wick-dev/wick/components"
	"github.com/wick-dev/wick/components/pycomp"
	"github.com/wick-dev/wick/engine/config"
	"github.com/wick-dev/wick/engine/spec"
	"github.com/wick-dev/wick/tui"
	"github.com/wick-dev/wick/tui/render"
)

func (a *app) findOptions() components.FindOptions {
	return components.FindOptions{Dirs: components.DefaultDirs(a.env.WorkDir, tui.UserConfigDir(a.env.Getenv)), WorkDir: a.env.WorkDir, Self: a.env.Self,
		External: a.torchx()}
}

// torchx is the bridge to the user's TorchX (components wick does not define), made
// once per process so that its answers are cached across the UI's calls.
func (a *app) torchx() components.External {
	a.pyOnce.Do(func() {
		var settings map[string]string
		if conf, err := a.loadConfig(); err == nil {
			settings = conf.Wick("python")
		}
		b, err := pycomp.Configure(a.env.WorkDir, a.env.Getenv, settings)
		if err != nil {
			a.py = badExternal{err}
			return
		}
		a.py = b
	})
	return a.py
}

// badExternal answers every call with the error of a bad [wick:python] setting.
type badExternal struct{ err error }

func (b badExternal) Find(context.Context, string) (*components.Component, error) {
	return nil, b.err
}
func (b badExternal) Materialize(context.Context, string, []string, map[string]string) (*components.Component, *spec.AppDef, error) {
	return nil, nil, b.err
}
func (b badExternal) All(context.Context) ([]*components.Component, error) { return nil, b.err }
func (b badExternal) File(context.Context, string) ([]*components.Component, error) {
	return nil, b.err
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
found on the search path (./.wick/components, ~/.config/wick/components), then,
when your Python imports TorchX, TorchX's components that wick has no copy of
(TorchX's builtins, or those your [torchx.components] entry points register),
marked (torchx). See wick run --help for the Python used.
--print NAME prints a component as a YAML component file: a starting point for your own.`,
		Args: args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if print != "" {
				c, err := components.FindContext(a.ctx, print, a.findOptions())
				if err != nil {
					return usageError{err}
				}
				if c.From == components.FromTorchX {
					return usagef("%s is a TorchX component (Python): --print writes wick's own as YAML; see its source in TorchX, or wick run %s --help", print, print)
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
					From    string `json:"from,omitempty"`
				}
				items := []item{}
				for _, c := range all {
					items = append(items, item{c.Name, c.Summary, c.Source, c.From})
				}
				return writeJSON(a.env.Stdout, items)
			}
			var builtin, user, torchx []*components.Component
			for _, c := range all {
				switch {
				case c.From == components.FromTorchX && c.Source == "":
					torchx = append(torchx, c)
				case c.Source == "":
					builtin = append(builtin, c)
				default:
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
					name, src := c.Name, c.Source
					if c.From == components.FromTorchX {
						// A .py file's component is called FILE:NAME (by TorchX).
						if rel, err := filepath.Rel(a.env.WorkDir, c.Source); err == nil && !strings.HasPrefix(rel, "..") {
							src = rel
						}
						name, src = src+":"+c.Name, "torchx"
					}
					fmt.Fprintf(a.env.Stdout, "%3d. %-14s %s %s\n", i+1, st.Key(render.Escape(name)), st.Dim(render.Escape(c.Summary)), st.Dim("("+render.Escape(src)+")"))
				}
			}
			if len(torchx) > 0 {
				fmt.Fprintf(a.env.Stdout, "\nFound %d components from TorchX (run by your TorchX, not wick's):\n", len(torchx))
				for i, c := range torchx {
					fmt.Fprintf(a.env.Stdout, "%3d. %-14s %s %s\n", i+1, st.Key(render.Escape(c.Name)), st.Dim(render.Escape(c.Summary)), st.Dim("(torchx)"))
				}
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&print, "print", "", "print the named component as a YAML component file")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print as JSON")
	return cmd
}
