// Package cli is wick's one-shot face: the cobra verbs for scripts and terminals. Every
// verb goes through the same Runner as the UI and prints through tui/render.
package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/wick-dev/wick/engine/runner"
	"github.com/wick-dev/wick/engine/sched"
	"github.com/wick-dev/wick/engine/spec"
	"github.com/wick-dev/wick/tui/render"
)

// Exit codes.
const (
	ExitOK      = 0
	ExitFailure = 1 // the app failed, or the operation did
	ExitUsage   = 2 // bad flags, arguments or input
)

// Env is the world a command runs in. Tests give their own.
type Env struct {
	Stdin          io.Reader
	Stdout, Stderr io.Writer
	// Getenv reads environment variables.
	Getenv func(string) string
	// Self is the path of the wick binary, for supervisors and demo.train.
	Self string
	// WorkDir is the working directory.
	WorkDir string
	// StdoutTTY and StderrTTY say whether the streams are terminals (colors, progress).
	StdoutTTY, StderrTTY bool
	// Registry, when set, replaces the builtin schedulers (tests).
	Registry *sched.Registry
}

// UIOptions are the flags of `wick ui`.
type UIOptions struct {
	Logs      string
	Theme     string
	RingLines int
}

// OSEnv is the Env of the real process.
func OSEnv() Env {
	self, _ := os.Executable()
	wd, _ := os.Getwd()
	return Env{
		Stdin: os.Stdin, Stdout: os.Stdout, Stderr: os.Stderr,
		Getenv: os.Getenv, Self: self, WorkDir: wd,
		StdoutTTY: isTTY(os.Stdout), StderrTTY: isTTY(os.Stderr),
	}
}

// usageError marks errors that exit with ExitUsage.
type usageError struct{ err error }

func (e usageError) Error() string { return e.err.Error() }
func (e usageError) Unwrap() error { return e.err }

func usagef(format string, args ...any) error { return usageError{fmt.Errorf(format, args...)} }

// exitError carries a specific exit code with an optional message.
type exitError struct {
	code int
	err  error
}

func (e exitError) Error() string {
	if e.err == nil {
		return ""
	}
	return e.err.Error()
}

// app holds what the verbs share: env, runner, styles.
type app struct {
	env    Env
	ctx    context.Context
	run    *runner.Runner
	home   string
	noColr bool
}

// StateHome returns wick's state directory: $WICK_HOME, else $XDG_STATE_HOME/wick, else
// ~/.local/state/wick.
func StateHome(getenv func(string) string) string {
	if h := getenv("WICK_HOME"); h != "" {
		return h
	}
	if x := getenv("XDG_STATE_HOME"); x != "" {
		return filepath.Join(x, "wick")
	}
	home := getenv("HOME")
	if home == "" {
		home, _ = os.UserHomeDir()
	}
	return filepath.Join(home, ".local", "state", "wick")
}

func (a *app) runner() *runner.Runner {
	if a.run == nil {
		reg := a.env.Registry
		if reg == nil {
			reg = runner.Builtin()
		}
		a.run = runner.New(reg, sched.Config{
			Session:  spec.DefaultSession,
			StateDir: a.home,
			WorkDir:  a.env.WorkDir,
			Self:     []string{a.env.Self},
		})
	}
	return a.run
}

// styler picks colors for w: only on a terminal, never with NO_COLOR.
func (a *app) styler(tty bool) render.Styler {
	if !tty || a.noColr {
		return render.Plain{}
	}
	return render.ANSI{}
}

func (a *app) out() render.Styler  { return a.styler(a.env.StdoutTTY) }
func (a *app) errs() render.Styler { return a.styler(a.env.StderrTTY) }

// Main runs wick with args (without the program name) and returns the exit code. Errors
// are printed as one line on stderr; nothing panics at the user.
func Main(ctx context.Context, args []string, env Env) (code int) {
	a := &app{env: env, ctx: ctx, home: StateHome(env.Getenv)}
	a.noColr = env.Getenv("NO_COLOR") != "" || env.Getenv("TERM") == "dumb"
	defer func() {
		if r := recover(); r != nil {
			fmt.Fprintf(env.Stderr, "wick: internal error: %v (please report it)\n", r)
			code = ExitFailure
		}
		if a.run != nil {
			_ = a.run.Close()
		}
	}()
	root := a.rootCmd()
	if len(args) > 0 && args[0] == "run" {
		args = append([]string{"run"}, FixSingleDashCfg(args[1:])...)
	}
	root.SetArgs(args)
	root.SetIn(env.Stdin)
	root.SetOut(env.Stdout)
	root.SetErr(env.Stderr)
	err := root.ExecuteContext(ctx)
	if err == nil {
		return ExitOK
	}
	var ee exitError
	if errors.As(err, &ee) {
		if ee.err != nil {
			fmt.Fprintf(env.Stderr, "wick: %v\n", ee.err)
		}
		return ee.code
	}
	fmt.Fprintf(env.Stderr, "wick: %s\n", oneLine(err.Error()))
	var ue usageError
	if errors.As(err, &ue) || isCobraUsage(err) {
		return ExitUsage
	}
	return ExitFailure
}

func oneLine(s string) string {
	return strings.Join(strings.Fields(strings.ReplaceAll(s, "\n", " ")), " ")
}

// isCobraUsage recognises cobra's own usage errors (unknown command, bad args count).
func isCobraUsage(err error) bool {
	s := err.Error()
	for _, p := range []string{"unknown command", "unknown flag", "unknown shorthand", "accepts ", "requires at least", "requires at most", "invalid argument", "flag needs an argument", "required flag"} {
		if strings.Contains(s, p) {
			return true
		}
	}
	return false
}

func (a *app) rootCmd() *cobra.Command {
	root := &cobra.Command{
		Use:   "wick",
		Short: "Launch and watch training jobs: TorchX apps as local processes or Docker containers",
		Long: `wick launches jobs described the TorchX way (an AppDef of roles, each role N
replicas) on this machine, as local processes (local_cwd, local_dir) or Docker
containers (local_docker), and lets you watch every replica live.

Run it with no arguments on a terminal for the full-screen UI, or use the verbs:

  wick run utils.echo --msg hi            launch, stream logs, exit with the app's result
  wick run --detach demo.train            launch and print the handle
  wick list                               every app wick knows
  wick log HANDLE -t                      follow an app's logs
  wick status HANDLE | wick cancel HANDLE | wick delete HANDLE`,
		SilenceUsage:  true,
		SilenceErrors: true,
		CompletionOptions: cobra.CompletionOptions{
			HiddenDefaultCmd: false,
		},
	}
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return usageError{err} })
	root.AddCommand(
		a.runCmd(), a.builtinsCmd(), a.runoptsCmd(), a.versionCmd(),
		a.statusCmd(), a.describeCmd(), a.listCmd(), a.logCmd(),
		a.cancelCmd(), a.deleteCmd(), a.uiCmd(),
	)
	a.addHidden(root)
	return root
}

// args wraps a cobra positional-args validator so that its errors exit with ExitUsage.
func args(v cobra.PositionalArgs) cobra.PositionalArgs {
	return func(cmd *cobra.Command, a []string) error {
		if err := v(cmd, a); err != nil {
			return usageError{err}
		}
		return nil
	}
}

// parseHandle reads a handle argument, as a usage error when malformed.
func parseHandle(s string) (spec.Handle, error) {
	h, err := spec.ParseHandle(s)
	if err != nil {
		return h, usageError{err}
	}
	return h, nil
}

func isTTY(f *os.File) bool {
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}
