// Package cli is wick's one-shot face: the cobra verbs for scripts and terminals. Every
// verb goes through the same Runner as the UI and prints through tui/render.
package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"slices"
	"sync"
	"syscall"

	"github.com/spf13/cobra"
	"golang.org/x/sys/unix"

	"github.com/wick-dev/wick/components"
	"github.com/wick-dev/wick/components/demo"
	"github.com/wick-dev/wick/engine/alerts"
	"github.com/wick-dev/wick/engine/local"
	"github.com/wick-dev/wick/engine/pystack"
	"github.com/wick-dev/wick/engine/runner"
	"github.com/wick-dev/wick/engine/safefs"
	"github.com/wick-dev/wick/engine/sched"
	"github.com/wick-dev/wick/engine/spec"
	"github.com/wick-dev/wick/engine/sweep"
	"github.com/wick-dev/wick/tui/common"
	"github.com/wick-dev/wick/tui/render"
)

// Exit codes, documented in docs/json.md. A --json error carries the same code in
// its "exit_code". An interrupted verb ends by its signal (128+N in a shell: 130 for
// Ctrl-C), once it has done what the signal asks (an attached run cancels its app).
const (
	ExitOK          = 0
	ExitFailure     = 1 // the app failed, or the operation did
	ExitUsage       = 2 // bad flags, arguments or input; no such app, sweep or component
	ExitCancelled   = 3 // the app was cancelled (by another command: Ctrl-C is the signal's code)
	ExitUnreachable = 4 // the scheduler could not be reached (Docker Engine, Slurm controller)
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
	// MaxProcs, when set, sets the process's GOMAXPROCS (runtime.GOMAXPROCS): a wick
	// that follows logs runs on common.Procs. Tests, which share one process, leave
	// it nil.
	MaxProcs func(n int) int
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
		StdoutTTY: IsTerminal(os.Stdout), StderrTTY: IsTerminal(os.Stderr),
		MaxProcs: runtime.GOMAXPROCS,
	}
}

// followProcs is the GOMAXPROCS of a wick that follows logs (the UI, `wick log -f`,
// an attached run): common.Procs, or 0 to leave it alone where the user set
// GOMAXPROCS or the Env cannot set it. Following, a wick's goroutines (a reader a
// replica, the printer) mostly wake, print a line and sleep: `wick log -f` of 64
// replicas of demo.train at 20 lines/s took 0.77x the CPU on one processor as on
// two (3.72 against 4.83 s, the same lines, #37 round 14).
func (a *app) followProcs() int {
	if a.env.MaxProcs == nil || a.env.Getenv("GOMAXPROCS") != "" {
		return 0
	}
	return common.Procs
}

// follow puts the process on followProcs processors, if any, when following.
func (a *app) follow(following bool) {
	if n := a.followProcs(); n > 0 && following {
		a.env.MaxProcs(n)
	}
}

// app holds what the verbs share: env, runner, styles.
type app struct {
	// parentRunID is wick run --parent_run_id: TORCHX_PARENT_RUN_ID in every role.
	parentRunID string
	env         Env
	ctx         context.Context
	run         *runner.Runner
	home        string
	noColr      bool
	// pyOnce makes py, the bridge to the user's TorchX (see torchx).
	pyOnce sync.Once
	py     components.External

	warnMu sync.Mutex
	warned map[string]bool
	// held keeps the warnings that come while the UI owns the terminal; they are
	// printed once it has given it back (flushWarnings).
	held     []string
	holdWarn bool
}

// warn prints an engine's warning on stderr, once per message. Log readers call it
// from their own goroutines.
func (a *app) warn(msg string) {
	a.warnMu.Lock()
	defer a.warnMu.Unlock()
	if a.warned[msg] {
		return
	}
	if a.warned == nil {
		a.warned = map[string]bool{}
	}
	a.warned[msg] = true
	line := fmt.Sprintf("wick: warning: %s\n", render.Escape(oneLine(msg)))
	if a.holdWarn {
		if len(a.held) < maxHeldWarnings {
			a.held = append(a.held, line)
		}
		return
	}
	fmt.Fprint(a.env.Stderr, line)
}

// maxHeldWarnings bounds the warnings kept while the UI runs.
const maxHeldWarnings = 100

// holdWarnings makes warnings wait until flushWarnings: the UI owns the terminal.
func (a *app) holdWarnings() {
	a.warnMu.Lock()
	defer a.warnMu.Unlock()
	a.holdWarn = true
}

// flushWarnings prints the warnings held since holdWarnings, and prints the next
// ones at once.
func (a *app) flushWarnings() {
	a.warnMu.Lock()
	defer a.warnMu.Unlock()
	for _, l := range a.held {
		fmt.Fprint(a.env.Stderr, l)
	}
	a.held, a.holdWarn = nil, false
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

// tightenHome makes a state directory left readable by an older wick private on first
// use: the home itself (0700 stops every other user at the door) and the directories
// wick keeps in it. Failures are not fatal here; creating files there reports them.
func tightenHome(home string) {
	for _, d := range []string{"", "local", "local/apps", "logs", "ui", "docker", "slurm"} {
		_ = safefs.Tighten(filepath.Join(home, d))
	}
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
			Warn:     a.warn,
		})
		a.run.SetRoleEnv(a.trackerEnv)
	}
	return a.run
}

// trackerEnv is the env TorchX's runner gives every role: TORCHX_PARENT_RUN_ID of
// --parent_run_id, and the trackers' variables, from
// .torchxconfig's [torchx:tracker] and [tracker:NAME] and $TORCHX_TRACKERS (a config
// that does not load gives none: the verb that launches reports it).
func (a *app) trackerEnv() map[string]string {
	var env map[string]string
	if conf, err := a.loadConfig(); err == nil {
		env = conf.TrackerEnv(func(k string) (string, bool) {
			v := a.env.Getenv(k)
			return v, v != ""
		})
	}
	if a.parentRunID != "" {
		if env == nil {
			env = map[string]string{}
		}
		env[runner.EnvParentRunID] = a.parentRunID
	}
	return env
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
	var killed syscall.Signal // a signal a verb caught, to end wick by at last
	tightenHome(a.home)
	a.noColr = env.Getenv("NO_COLOR") != "" || env.Getenv("TERM") == "dumb"
	defer func() {
		if r := recover(); r != nil {
			fmt.Fprintf(env.Stderr, "wick: internal error: %v (please report it)\n", r)
			code = ExitFailure
		}
		if a.run != nil {
			_ = a.run.Close()
		}
		if killed != 0 {
			code = reraise(killed)
		}
	}()
	root := a.rootCmd(args)
	if len(args) > 0 && args[0] == "run" {
		if run, _, err := root.Find(args[:1]); err == nil {
			rest, err := TorchXRunArgs(args[1:], run.Flags(), a.knownScheduler)
			if err != nil {
				fmt.Fprintf(env.Stderr, "wick: %s\n", render.Escape(err.Error()))
				jsonError(env.Stdout, args, err.Error(), ExitUsage)
				return ExitUsage
			}
			args = append(args[:1:1], rest...)
		}
	}
	root.SetArgs(args)
	root.SetIn(env.Stdin)
	root.SetOut(env.Stdout)
	root.SetErr(env.Stderr)
	err := root.ExecuteContext(ctx)
	if err == nil {
		return ExitOK
	}
	var intr interrupted
	if errors.As(err, &intr) {
		killed = intr.sig // once the runner is closed (see above)
		return 128 + int(intr.sig)
	}
	var ee exitError
	if errors.As(err, &ee) {
		if ee.err != nil {
			fmt.Fprintf(env.Stderr, "wick: %s\n", render.Escape(oneLine(ee.err.Error())))
			jsonError(env.Stdout, args, ee.err.Error(), ee.code)
		}
		return ee.code
	}
	msg := render.Escape(oneLine(err.Error()))
	fmt.Fprintf(env.Stderr, "wick: %s\n", msg)
	code = exitCodeOf(err)
	jsonError(env.Stdout, args, oneLine(err.Error()), code)
	return code
}

// knownScheduler returns the error of an unknown scheduler name (with "did you
// mean"), nil for one wick has; it starts no scheduler.
func (a *app) knownScheduler(name string) error {
	r := a.runner()
	if slices.Contains(r.SchedulerBackends(), name) {
		return nil
	}
	_, err := r.Scheduler(name)
	return err
}

// reraise ends wick by sig, which a verb caught to finish its output, as the signal's
// default action would have ended it: a shell and a parent see the same status as
// before it was caught. The signal goes to this thread, so that the runtime's handler
// (which, sig no longer caught, kills the process by it) runs before Tgkill returns.
// It returns what a shell would report, should wick still be alive (sig ignored).
func reraise(sig syscall.Signal) int {
	signal.Reset(sig)
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	_ = unix.Tgkill(unix.Getpid(), unix.Gettid(), sig)
	return 128 + int(sig)
}

// verb is one of wick's verbs and the function that makes its command.
type verb struct {
	name string
	make func() *cobra.Command
}

// verbs are wick's verbs, the hidden ones (which wick runs itself) last.
func (a *app) verbs() []verb {
	return []verb{
		{"run", a.runCmd}, {"builtins", a.builtinsCmd}, {"runopts", a.runoptsCmd}, {"configure", a.configureCmd}, {"version", a.versionCmd},
		{"status", a.statusCmd}, {"describe", a.describeCmd}, {"list", a.listCmd}, {"log", a.logCmd},
		{"cancel", a.cancelCmd}, {"delete", a.deleteCmd}, {"ui", a.uiCmd}, {"metrics", a.metricsCmd},
		{"sweep", a.sweepCmd}, {"stack", a.stackCmd}, {"exec", a.execCmd},
		{sweep.QueueVerb, a.queueCmd}, {local.SuperviseVerb, a.superviseCmd}, {alerts.Verb, a.alertsCmd}, {demo.Verb, a.demoCmd},
		{pystack.NodeVerb, a.stackNodeCmd},
	}
}

// rootCmd makes the command tree for args. When args name a verb, only that verb's
// command is made (none for --version alone): making all of them (their flags, their
// help) is a good part of the start of a one-shot verb, and of every supervisor.
// Anything else (no verb, help, completion, a mistyped verb) gets the whole tree.
func (a *app) rootCmd(args []string) *cobra.Command {
	root := a.newRoot()
	if len(args) == 1 && (args[0] == "--version" || args[0] == "-v") {
		root.CompletionOptions.DisableDefaultCmd = true // the version is all it prints
		return root
	}
	all := a.verbs()
	if len(args) > 0 {
		for _, v := range all {
			if v.name == args[0] {
				root.AddCommand(v.make())
				// No completion command to make: the verb is known.
				root.CompletionOptions.DisableDefaultCmd = true
				typeUsageErrors(root)
				return root
			}
		}
	}
	for _, v := range all {
		root.AddCommand(v.make())
	}
	root.InitDefaultHelpCmd()
	// The completion command takes its writer when it is made: the caller's stdout,
	// not os.Stdout (Main's SetOut comes after).
	root.SetOut(a.env.Stdout)
	root.InitDefaultCompletionCmd()
	typeUsageErrors(root)
	return root
}

// newRoot makes the root command, without its verbs.
func (a *app) newRoot() *cobra.Command {
	root := &cobra.Command{
		Use:   "wick",
		Short: "Launch and watch training jobs: TorchX apps as local processes, Docker containers or Slurm jobs",
		Long: `wick launches jobs described the TorchX way (an AppDef of roles, each role N
replicas) as local processes (local_cwd, local_dir), Docker containers (local_docker)
or Slurm jobs (slurm), and lets you watch every replica live.

Run it with no arguments on a terminal for the full-screen UI, or use the verbs:

  wick run utils.echo --msg hi            launch, stream logs, exit with the app's result
  wick run --detach demo.train            launch and print the handle
  wick list                               every app wick knows
  wick log HANDLE -t                      follow an app's logs
  wick status HANDLE | wick cancel HANDLE | wick delete HANDLE

HANDLE is SCHEDULER://SESSION/APP_ID, or an app id, or a unique prefix of one.
Shell completion: wick completion bash|zsh|fish --help.`,
		SilenceUsage:  true,
		SilenceErrors: true,
		CompletionOptions: cobra.CompletionOptions{
			HiddenDefaultCmd: false,
		},
	}
	root.Version = spec.Version
	root.SetVersionTemplate("wick {{.Version}}\n")
	root.SetFlagErrorFunc(flagError)
	// With Args and a RunE, an unknown verb reaches unknownCommand; no verb prints help.
	root.Args = unknownCommand
	root.SuggestionsMinimumDistance = 2
	root.RunE = func(cmd *cobra.Command, _ []string) error { return cmd.Help() }
	root.PersistentPreRunE = func(cmd *cobra.Command, _ []string) error {
		for c := cmd; c != nil; c = c.Parent() {
			switch c.Name() {
			case "help", "version", "completion", cobra.ShellCompRequestCmd, cobra.ShellCompNoDescRequestCmd:
				return nil // what needs no state
			}
		}
		if cmd == root {
			return nil
		}
		return a.checkHome()
	}
	return root
}

// checkHome refuses a state directory that is there but is not a directory (a file,
// a link to one): every verb failed on it with a message naming some path below it
// ("local_cwd: log_dir: not a directory"), and wick list printed an empty table
// and exited 0.
func (a *app) checkHome() error {
	fi, err := os.Stat(a.home)
	if err != nil || fi.IsDir() {
		return nil
	}
	if a.env.Getenv("WICK_HOME") != "" {
		return usageError{fmt.Errorf("WICK_HOME %s is not a directory", a.home)}
	}
	return usageError{fmt.Errorf("wick's state directory %s is not a directory (set WICK_HOME to use another)", a.home)}
}

// parseHandle reads a handle argument, as a usage error when malformed.
func parseHandle(s string) (spec.Handle, error) {
	h, err := spec.ParseHandle(s)
	if err != nil {
		return h, usageError{err}
	}
	return h, nil
}

// IsTerminal reports whether f is a terminal: whether the kernel has terminal
// settings for it (TCGETS), which /dev/null and other character devices have not.
func IsTerminal(f *os.File) bool {
	rc, err := f.SyscallConn() // not f.Fd(), which would make f blocking
	if err != nil {
		return false
	}
	var tty bool
	_ = rc.Control(func(fd uintptr) {
		_, err := unix.IoctlGetTermios(int(fd), unix.TCGETS)
		tty = err == nil
	})
	return tty
}
