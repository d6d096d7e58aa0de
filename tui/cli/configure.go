package cli

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/wick-dev/wick/engine/config"
	"github.com/wick-dev/wick/engine/spec"
)

func (a *app) configureCmd() *cobra.Command {
	var (
		scheds     string
		print, all bool
		force      bool
	)
	cmd := &cobra.Command{
		Use:   "configure [-s SCHEDULERS] [--print] [-a]",
		Short: "Write a .torchxconfig with the schedulers' run options, as torchx configure does",
		Long: `Write ./.torchxconfig with a [SCHEDULER] section per scheduler (all of them, or the
comma-separated -s list), as TorchX's torchx configure writes it (torchx/runner/config.py
dump): a required run option as "#FIXME:(type) help", and with -a the optional ones
too, each set to its default (lists joined by ';', maps as K:V;K2:V2, None for none).
--print writes it to stdout instead. Unlike torchx configure, an existing
.torchxconfig is not overwritten unless --force is given.`,
		Example: `  wick configure -s slurm -a --print
  wick configure -s local_cwd,local_docker -a`,
		Args: args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			names := a.runner().SchedulerBackends()
			if scheds != "" {
				want := strings.Split(scheds, ",")
				for _, n := range want {
					if !slices.Contains(names, n) {
						return usagef("-s: unknown scheduler %q%s", n, spec.DidYouMean(n, names))
					}
				}
				names = want
			}
			if print {
				return a.dumpConfig(a.env.Stdout, names, !all)
			}
			path := filepath.Join(a.env.WorkDir, config.FileName)
			flags := os.O_WRONLY | os.O_CREATE | os.O_EXCL
			if force {
				flags = os.O_WRONLY | os.O_CREATE | os.O_TRUNC
			}
			f, err := os.OpenFile(path, flags, 0o644)
			if errors.Is(err, os.ErrExist) {
				return usagef("%s exists: wick configure does not overwrite it (--force does; --print writes to stdout)", path)
			}
			if err != nil {
				return fmt.Errorf("configure: %w", err)
			}
			if err := a.dumpConfig(f, names, !all); err != nil {
				f.Close()
				return err
			}
			if err := f.Close(); err != nil {
				return fmt.Errorf("configure: %w", err)
			}
			fmt.Fprintf(a.env.Stderr, "wick: wrote %s\n", path)
			return nil
		},
	}
	fl := cmd.Flags()
	fl.StringVarP(&scheds, "schedulers", "s", "", "comma-separated schedulers to write the run options of (default: all)")
	fl.BoolVar(&print, "print", false, "print the config to stdout instead of writing ./.torchxconfig")
	fl.BoolVarP(&all, "all", "a", false, "include the optional run options with their defaults (default: only the required ones)")
	fl.BoolVar(&force, "force", false, "overwrite an existing ./.torchxconfig")
	return cmd
}

// dumpConfig writes the run options of the schedulers as TorchX's config.dump does.
func (a *app) dumpConfig(w io.Writer, names []string, requiredOnly bool) error {
	var b strings.Builder
	for _, name := range names {
		opts, err := a.runner().SchedulerRunOpts(name)
		if err != nil {
			return usageError{err}
		}
		fmt.Fprintf(&b, "[%s]\n", name)
		for _, o := range opts {
			if !o.Required && requiredOnly {
				continue
			}
			fmt.Fprintf(&b, "%s = %s\n", o.Name, dumpValue(o))
		}
		b.WriteString("\n")
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// dumpValue is a run option's value in torchx configure's file: "#FIXME:(TYPE) HELP"
// (60 characters at most, then "...") for a required one, else its default as
// TorchX writes it.
func dumpValue(o spec.RunOpt) string {
	if o.Required {
		ph := fmt.Sprintf("#FIXME:(%s) %s", torchxTypeName(o.Type), o.Help)
		if len(ph) > 60 {
			ph = ph[:60] + "..."
		}
		return ph
	}
	switch v := o.Default.(type) {
	case nil:
		return config.NoneValue
	case bool:
		if v {
			return "True"
		}
		return "False"
	case []string:
		if len(v) == 0 {
			return config.NoneValue
		}
		return strings.Join(v, ";")
	case map[string]string:
		if len(v) == 0 {
			return config.NoneValue
		}
		parts := make([]string, 0, len(v))
		for _, k := range spec.SortedKeys(v) {
			parts = append(parts, k+":"+v[k])
		}
		return strings.Join(parts, ";")
	}
	return spec.FormatValue(o.Default)
}

// torchxTypeName is TorchX's get_type_name of a run option's type.
func torchxTypeName(t spec.OptType) string {
	switch t {
	case spec.OptInt:
		return "int"
	case spec.OptFloat:
		return "float"
	case spec.OptBool:
		return "bool"
	case spec.OptList:
		return "List[str]"
	case spec.OptMap:
		return "Dict[str, str]"
	}
	return "str"
}
