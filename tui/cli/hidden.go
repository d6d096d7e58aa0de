package cli

import (
	"context"
	"errors"
	"fmt"
	"os"
	"runtime/debug"
	"runtime/pprof"
	"strconv"
	"time"

	"github.com/spf13/cobra"

	"github.com/wick-dev/wick/components"
	"github.com/wick-dev/wick/components/demo"
	"github.com/wick-dev/wick/engine/alerts"
	"github.com/wick-dev/wick/engine/local"
	"github.com/wick-dev/wick/engine/pystack"
	"github.com/wick-dev/wick/tui"
	"github.com/wick-dev/wick/tui/common"
)

// superviseCmd is the verb of the per-app supervisor, which wick runs itself: it is
// not for users and not in the help.
func (a *app) superviseCmd() *cobra.Command {
	return &cobra.Command{
		Use:    local.SuperviseVerb + " APP_DIR",
		Hidden: true,
		Args:   args(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, argv []string) error {
			return local.Supervise(a.ctx, argv[0])
		},
	}
}

// alertsCmd is the verb of an app's alerts watcher (engine/alerts), which the Runner
// starts beside an app with an on_alarm, or an on_end its scheduler does not run: it
// is not for users and not in the help. Its messages go to its watch.log.
func (a *app) alertsCmd() *cobra.Command {
	return &cobra.Command{
		Use:    alerts.Verb + " DIR",
		Hidden: true,
		Args:   args(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, argv []string) error {
			logf := func(format string, args ...any) {
				fmt.Fprintf(a.env.Stderr, "%s %s\n", time.Now().Format(time.RFC3339), fmt.Sprintf(format, args...))
			}
			return alerts.Watch(a.ctx, a.runner(), argv[0], logf)
		},
	}
}

// stackNodeCmd is the verb wick stack runs on a Slurm replica's node, within its job
// (pystack.NodeVerb): the stacks of the replica's Python processes there, read within
// --timeout, on stdout for the caller. It is not for users and not in the help.
func (a *app) stackNodeCmd() *cobra.Command {
	var timeout time.Duration
	cmd := &cobra.Command{
		Use:    pystack.NodeVerb + " APP_ID ROLE REPLICA",
		Hidden: true,
		Args:   args(cobra.ExactArgs(3)),
		RunE: func(cmd *cobra.Command, argv []string) error {
			k, err := strconv.Atoi(argv[2])
			if err != nil {
				return usagef("replica %q is not a number", argv[2])
			}
			ctx, cancel := context.WithTimeout(a.ctx, timeout)
			defer cancel()
			return pystack.WriteNode(a.env.Stdout, pystack.DumpReplica(ctx, argv[0], argv[1], k))
		},
	}
	cmd.Flags().DurationVar(&timeout, "timeout", stackTimeout, "how long the samplers may take")
	return cmd
}

// demoCmd is the verb of the demo training program (demo.train), which wick runs
// itself: it is not for users and not in the help.
func (a *app) demoCmd() *cobra.Command {
	return &cobra.Command{
		Use:                demo.Verb,
		Hidden:             true,
		DisableFlagParsing: true,
		RunE: func(cmd *cobra.Command, argv []string) error {
			opts, err := demo.ParseFlags(argv)
			if err != nil {
				return usageError{err}
			}
			err = demo.Train(a.ctx, a.env.Stdout, a.env.Stderr, opts)
			// A failing rank exits with its own code, as a real trainer would.
			var exit *demo.ExitError
			if errors.As(err, &exit) {
				return exitError{code: exit.ExitCode(), err: exit}
			}
			return err
		},
	}
}

func (a *app) uiCmd() *cobra.Command {
	var o UIOptions
	cmd := &cobra.Command{
		Use:   "ui",
		Short: "Open the full-screen UI (also: wick with no arguments on a terminal)",
		Long: `Open the full-screen UI: pick a component, fill its arguments, preview the dry run,
launch, browse apps, and watch logs. q quits; running apps keep running.`,
		Args: args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			sweepID := ""
			if _, _, ok, err := a.sweepOf(o.Logs); ok || err != nil {
				// A sweep: the app list with the sweep's apps unfolded, l opens one's.
				if err != nil {
					return err
				}
				sweepID, o.Logs = trimSlash(o.Logs), ""
			}
			if o.Logs != "" {
				// An app id or a prefix of one, as every verb takes.
				h, err := a.resolveHandle(o.Logs)
				if err != nil {
					return err
				}
				o.Logs = h.String()
			}
			stdin, isFile := a.env.Stdin.(*os.File)
			if !a.env.StdoutTTY || isFile && !IsTerminal(stdin) {
				return usagef("wick ui needs a terminal (the verbs work without one: wick --help)")
			}
			if o.RingLines < 1 {
				return usagef("--ring must be at least 1")
			}
			conf, err := a.loadConfig()
			if err != nil {
				return usageError{err}
			}
			// Most of the UI's garbage is short-lived log batches: without a soft limit
			// the heap grows to twice what the rings hold. GOMEMLIMIT, when set, wins.
			if a.env.Getenv("GOMEMLIMIT") == "" {
				debug.SetMemoryLimit(common.MemoryLimit)
			}
			// The UI runs on common.Procs processors but for a search or a launch,
			// which get every processor while they run (see common.Cores).
			// GOMAXPROCS, when set, wins.
			procs := a.followProcs()
			sched := conf.CLIRun()["scheduler"]
			if sched == "" {
				sched = DefaultScheduler
			}
			// WICK_CPUPROFILE (not in the help: for who measures the UI) writes a
			// CPU profile of the whole session, for go tool pprof.
			if path := a.env.Getenv("WICK_CPUPROFILE"); path != "" {
				stop, err := startCPUProfile(path)
				if err != nil {
					return err
				}
				defer stop()
			}
			// WICK_MEMPROFILE, the same for the heap (startMemProfile).
			if path := a.env.Getenv("WICK_MEMPROFILE"); path != "" {
				stop, err := startMemProfile(path)
				if err != nil {
					return err
				}
				defer func() {
					if err := stop(); err != nil {
						fmt.Fprintln(a.env.Stderr, "wick:", err)
					}
				}()
			}
			// Warnings of the engine (a damaged log index) wait until the UI has
			// given the terminal back.
			a.holdWarnings()
			defer a.flushWarnings()
			return tui.Run(a.ctx, tui.Options{
				Runner: a.runner(),
				Components: func() ([]*components.Component, error) {
					all, errs := components.All(a.findOptions())
					return all, errors.Join(errs...)
				},
				Find:             a.findOptions(),
				Config:           conf,
				DefaultScheduler: sched,
				Workspace:        conf.CLIRun()["workspace"],
				Theme:            o.Theme,
				Logs:             o.Logs,
				Sweep:            sweepID,
				RingLines:        o.RingLines,
				Procs:            procs,
				Getenv:           a.env.Getenv,
				Messages:         a.env.Stderr,
			})
		},
	}
	cmd.Flags().StringVar(&o.Logs, "logs", "", "open straight on this app's logs (a handle, an app id or a unique prefix of one; a sweep id opens the list on its apps)")
	_ = cmd.RegisterFlagCompletionFunc("logs", a.completeHandles)
	cmd.Flags().StringVar(&o.Theme, "theme", "", "theme: dark, light, high-contrast, or a user theme name")
	cmd.Flags().IntVar(&o.RingLines, "ring", 100_000, "most log lines a replica's pane keeps in memory; all panes together keep at most 256k (older ones are read back from disk)")
	return cmd
}

// startCPUProfile writes a CPU profile to path until stop is called.
func startCPUProfile(path string) (stop func(), err error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, fmt.Errorf("WICK_CPUPROFILE: %w", err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		_ = f.Close()
		return nil, fmt.Errorf("WICK_CPUPROFILE %s: %w", path, err)
	}
	return func() {
		pprof.StopCPUProfile()
		_ = f.Close()
	}, nil
}
