package cli

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"sync/atomic"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/wick-dev/wick/components"
	"github.com/wick-dev/wick/engine/config"
	"github.com/wick-dev/wick/engine/runner"
	"github.com/wick-dev/wick/engine/sched"
	"github.com/wick-dev/wick/engine/spec"
	"github.com/wick-dev/wick/tui/render"
)

// DefaultScheduler is used when neither -s nor .torchxconfig names one. TorchX silently
// defaults to docker; wick runs where you are.
const DefaultScheduler = "local_cwd"

type runFlags struct {
	scheduler string
	cfg       string
	dryrun    bool
	asJSON    bool
	detach    bool
	workspace string
	reveal    bool
	// TorchX's run flags: --wait and --log are what wick run does by default,
	// --tee_logs what its output always is (lines prefixed role/k); --parent_run_id
	// sets TORCHX_PARENT_RUN_ID in every role; --stdin is refused.
	wait, log, teeLogs, stdin bool
	parentRunID               string
	hangAfter                 string
	sweep                     sweepFlags
	// schedulerFrom is "PATH:LINE" of [cli:run] scheduler when the scheduler is
	// .torchxconfig's (runDefaults).
	schedulerFrom string
}

func (a *app) runCmd() *cobra.Command {
	var f runFlags
	cmd := &cobra.Command{
		Use:   "run [-s SCHEDULER] [-cfg K=V,...] [--dryrun] [--detach] COMPONENT [ARGS...]",
		Short: "Launch a component (or preview it with --dryrun)",
		Long: `Launch a component: a builtin (see wick builtins), a user component found on the
search path (./.wick/components, ~/.config/wick/components), or FILE.yaml:NAME.
The component's parameters are flags after its name (wick run COMPONENT --help lists
them); everything after "--" goes to the component as trailing arguments.

TorchX components run unchanged: FILE.py:FN, the names your [torchx.components]
entry points register, and TorchX's builtins wick has no copy of (utils.booth, ...).
wick asks your own TorchX for their AppDef, with the python3 on PATH (as torchx
would); $WICK_PYTHON or [wick:python] python = ... in .torchxconfig names another
interpreter, and $WICK_PYTHON_TIMEOUT or [wick:python] timeout = ... the time
limit of that call (default 30s), $WICK_PYTHON_MEMORY or [wick:python] memory = ...
its memory bound (default 2GiB). TorchX parses their arguments: its error messages.
A component that raises is one line (exception and file:line);
WICK_PYTHON_TRACEBACK=1 adds Python's traceback. wick's own builtins and YAML
components never need Python.

By default wick run stays attached: it streams every replica's logs (prefixed role/k)
to stderr and exits 0 only if the app SUCCEEDED; Ctrl-C or SIGTERM cancels the app
(a second Ctrl-C detaches at once). Ctrl-C or SIGTERM while the app is still being
launched stops the launch: what was started is cancelled (local) or removed (docker).
SIGHUP (a closed terminal, an ssh drop) ends wick run but not the app, which keeps
running as under nohup: wick log -f HANDLE follows it again. --detach prints the
handle and returns; the app keeps running and wick list, log, status and cancel find
it from any terminal.

Run options (-cfg) are checked against the scheduler (wick runopts SCHEDULER); an
unknown one is a warning, as in TorchX. Precedence, highest first, as in TorchX: flags
on the command line; ~/.torchxconfig; ./.torchxconfig (or only $TORCHXCONFIG when
set); built-in defaults.

TorchX's run flags: --wait and --log are wick run's default (it waits and streams the
logs unless --detach), --tee_logs its output (each line prefixed role/k);
--parent_run_id ID sets TORCHX_PARENT_RUN_ID in every role, as TorchX does; --stdin
is not supported (give the component and its arguments on the command line).`,
		Example: `  wick run utils.echo --msg hello
  wick run --dryrun ./my_component.py:trainer --lr 0.1
  wick run -s local_cwd --dryrun dist.ddp -j 2x4 --script train.py
  wick run --detach demo.train --replicas 4
  wick run -s local_docker -cfg network=wick,shm_size=2g utils.sh --image myimg -- echo hi`,
		Args:              cobra.ArbitraryArgs,
		ValidArgsFunction: a.completeComponents,
		RunE: func(cmd *cobra.Command, argv []string) error {
			if len(f.sweep.specs) > 0 || cmd.Flags().Changed("max-parallel") || f.sweep.stopOnNaN {
				return wickFlagAfterComponent(cmd.Flags(), a.runSweep(f, f.sweep, argv))
			}
			return wickFlagAfterComponent(cmd.Flags(), a.runRun(f, argv))
		},
	}
	fl := cmd.Flags()
	// Component arguments follow the component name: stop parsing wick's flags there.
	fl.SetInterspersed(false)
	fl.StringVarP(&f.scheduler, "scheduler", "s", "", "scheduler: "+strings.Join(a.runner().SchedulerBackends(), ", ")+" (default "+DefaultScheduler+")")
	fl.StringVar(&f.cfg, "cfg", "", `run options "K=V,K2=V2" (also -cfg); see wick runopts`)
	fl.StringVar(&f.cfg, "scheduler_args", "", "alias of -cfg, as in TorchX")
	_ = fl.MarkHidden("scheduler_args")
	_ = cmd.RegisterFlagCompletionFunc("scheduler", a.completeSchedulers)
	_ = cmd.RegisterFlagCompletionFunc("cfg", a.completeCfg)
	fl.BoolVar(&f.dryrun, "dryrun", false, "print the AppDef and the scheduler request; launch nothing")
	fl.BoolVar(&f.asJSON, "json", false, "print the dry run, the handle or the final status as JSON")
	fl.BoolVarP(&f.detach, "detach", "d", false, "print the handle and return; the app keeps running")
	fl.StringVar(&f.workspace, "workspace", "", "local_docker: build an image laying this directory over the role's image")
	fl.BoolVar(&f.wait, "wait", false, "wait for the app to end (the default; TorchX's flag)")
	fl.BoolVar(&f.log, "log", false, "stream the logs while waiting (the default; TorchX's flag)")
	fl.BoolVar(&f.teeLogs, "tee_logs", false, "prefix each log line with its replica (always done; TorchX's flag)")
	fl.StringVar(&f.hangAfter, "hang-after", "", "raise the hang alarm after this long without output or a new step (90s, 5m; off; default: 5m or 10x the median step time)")
	fl.StringVar(&f.parentRunID, "parent_run_id", "", "set TORCHX_PARENT_RUN_ID in every role (experiment tracking, as TorchX)")
	fl.BoolVar(&f.stdin, "stdin", false, "TorchX's JSON arguments on stdin: not supported")
	addSweepFlags(fl, &f.sweep)
	fl.BoolVar(&f.reveal, "show-secrets", false, "--dryrun: show env values whose names look secret (see wick describe --help); masked otherwise")
	return cmd
}

func (a *app) runRun(f runFlags, argv []string) error {
	if err := f.checkTorchXFlags(); err != nil {
		return err
	}
	a.parentRunID = f.parentRunID
	conf, err := a.loadConfig()
	if err != nil {
		return usageError{err}
	}
	name, argv, err := runDefaults(conf, &f, argv)
	if err != nil {
		return err
	}
	r := a.runner()
	if err := checkConfScheduler(r, conf, f.scheduler, f.schedulerFrom); err != nil {
		return err
	}
	if err := setHangAfter(r, f.hangAfter); err != nil {
		return err
	}
	a.warnComponentSections(conf)
	cfg, err := runCfg(r, conf, f.scheduler, f.cfg, a.warn)
	if err != nil {
		return err
	}
	cfg = a.withAlerts(r, f.scheduler, cfg)

	info, err := r.DryRunComponent(a.ctx, name, argv, f.scheduler, cfg, f.workspace, components.Lookup{
		Find:     a.findOptions(),
		Defaults: conf.ComponentDefaults,
		Warn:     func(s string) { fmt.Fprintf(a.env.Stderr, "wick: warning: %s\n", oneLine(s)) },
	})
	var compErr *runner.ComponentError
	switch {
	case errors.Is(err, components.ErrHelp) && errors.As(err, &compErr):
		_, err := fmt.Fprint(a.env.Stdout, render.EscapeText(compErr.Component.UsageAs(name)))
		return err
	case errors.As(err, &compErr) || isBadInput(err):
		return usageError{err}
	case err != nil:
		return err
	}
	if f.dryrun {
		return a.printDryRun(info, f)
	}
	// A signal during the launch (replicas being started, containers being created)
	// stops the launch: the scheduler rolls back what it made, or the app it started
	// is cancelled. SIGHUP (a closed terminal) lets the launch finish: the app keeps
	// running, as under nohup.
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP)
	defer signal.Stop(sigs)
	a.surviveClosedOutput()
	lctx, stopLaunch := context.WithCancel(a.ctx)
	interrupted := make(chan os.Signal, 1)
	var hungUp atomic.Bool
	go func() {
		for {
			select {
			case sig := <-sigs:
				if sig == syscall.SIGHUP {
					hungUp.Store(true)
					continue
				}
				interrupted <- sig
				stopLaunch()
			case <-lctx.Done():
			}
			return
		}
	}()
	progress, done := a.progress()
	h, err := r.Schedule(lctx, info, progress)
	done()
	stopLaunch()
	select {
	case sig := <-interrupted:
		return a.interruptedLaunch(sig, info.Handle(), err)
	default:
	}
	if err != nil {
		return err
	}
	if hungUp.Load() && !f.detach {
		return nil // nobody to attach to: the app keeps running
	}
	if f.detach {
		return a.printHandle(h, f.asJSON)
	}
	if !f.asJSON {
		fmt.Fprintln(a.env.Stdout, h)
	}
	return a.attach(h, info.App, f.asJSON, sigs)
}

// runDefaults fills f's scheduler and workspace from [cli:run] of .torchxconfig when
// the flags did not give them, and returns the component's name (argv's first word,
// else the config's component) with its arguments.
func runDefaults(conf *config.Config, f *runFlags, argv []string) (string, []string, error) {
	cliRun := conf.CLIRun()
	if f.scheduler == "" {
		f.scheduler = cliRun["scheduler"]
		f.schedulerFrom = conf.Where("cli:run", "scheduler")
	}
	if f.scheduler == "" {
		f.scheduler = DefaultScheduler
	}
	if f.workspace == "" {
		f.workspace = cliRun["workspace"]
	}
	if f.hangAfter == "" {
		f.hangAfter = cliRun["hang_after"]
	}
	if len(argv) > 0 && argv[0] == "--" {
		argv = argv[1:]
	}
	if len(argv) > 0 && !strings.HasPrefix(argv[0], "-") {
		return argv[0], argv[1:], nil
	}
	if name := cliRun["component"]; name != "" {
		return name, argv, nil
	}
	return "", nil, usagef("missing component name (wick builtins lists them; or set component in [cli:run] of .torchxconfig)")
}

// setHangAfter makes every app r launches carry its hang time (--hang-after, or
// [cli:run] hang_after): "0" for off, a duration, nothing for the default.
func setHangAfter(r *runner.Runner, v string) error {
	d, err := spec.ParseHangAfter(v)
	switch {
	case err != nil:
		return usagef("--hang-after: %v", err)
	case d < 0:
		r.SetAppMetadata(map[string]string{spec.MetaHangAfter: "0"})
	case d > 0:
		r.SetAppMetadata(map[string]string{spec.MetaHangAfter: d.String()})
	}
	return nil
}

// checkConfScheduler fails a scheduler that .torchxconfig's [cli:run] gave (from is
// its "PATH:LINE", "" when the command line gave it) and that is none, naming the
// file and the line: the error alone did not say where the name came from.
func checkConfScheduler(r *runner.Runner, conf *config.Config, scheduler, from string) error {
	if from == "" {
		return nil
	}
	if _, err := r.Scheduler(scheduler); err != nil {
		return usagef("%s: [cli:run] scheduler: %v", render.Escape(from), err)
	}
	return nil
}

// warnComponentSections warns, one stderr line each, of the [component:NAME]
// sections of conf that name no component but are a near miss of one of wick's
// (a typo: TorchX ignores such a section, and its defaults apply to nothing). A
// name near none of wick's may be TorchX's, and asking TorchX costs a Python start
// on every run: those are left alone, and a near miss is asked about only then.
func (a *app) warnComponentSections(conf *config.Config) {
	secs := conf.ComponentSections()
	if len(secs) == 0 {
		return
	}
	opts := a.findOptions()
	external := opts.External
	opts.External = nil
	comps, _ := components.All(opts)
	known := map[string]bool{}
	names := make([]string, 0, len(comps))
	for _, c := range comps {
		known[c.Name] = true
		names = append(names, c.Name)
	}
	for _, s := range secs {
		if known[s.Name] || strings.Contains(s.Name, ":") { // FILE:NAME: read when run
			continue
		}
		dym := ""
		if s.Name != "" { // [component:] (config_test.py's "bad section") names nothing
			if dym = spec.DidYouMean(s.Name, names); dym == "" {
				continue
			}
		}
		if external != nil {
			if _, err := external.Find(a.ctx, s.Name); err == nil {
				continue
			}
		}
		fmt.Fprintf(a.env.Stderr, "wick: warning: %s:%d: [component:%s] names no component, its defaults apply to nothing%s\n",
			render.Escape(s.Path), s.Line, render.Escape(s.Name), render.Escape(dym))
	}
}

// runCfg returns the run options of the named scheduler: those of -cfg (cfgFlag)
// over those of .torchxconfig.
func runCfg(r *runner.Runner, conf *config.Config, scheduler, cfgFlag string, warn func(string)) (spec.Cfg, error) {
	s, err := r.Scheduler(scheduler)
	if err != nil {
		return nil, usageError{err}
	}
	cfg, warns, err := s.RunOpts().ParseCfgLenient(cfgFlag)
	if err != nil {
		return nil, usagef("-cfg: %v", err)
	}
	for _, w := range warns {
		warn("-cfg: " + w)
	}
	fileCfg, err := conf.RunOpts(scheduler, s.RunOpts())
	if err != nil {
		return nil, usageError{err}
	}
	for _, w := range conf.UnknownRunOpts(scheduler, s.RunOpts()) {
		warn(w)
	}
	return cfg.Merge(fileCfg), nil
}

// printDryRun prints what wick run --dryrun shows of info: the tree, or JSON with
// --json, secrets masked unless --reveal.
func (a *app) printDryRun(info *sched.DryRunInfo, f runFlags) error {
	if !f.asJSON {
		return render.DryRun(a.env.Stdout, info, a.out(), render.TreeOptions{MaskSecrets: !f.reveal})
	}
	var v any = info
	if !f.reveal {
		var err error
		if v, err = render.MaskJSON(info); err != nil {
			return err
		}
	}
	return writeJSON(a.env.Stdout, v)
}

// printHandle prints the handle of an app launched with --detach (as JSON with --json).
func (a *app) printHandle(h spec.Handle, asJSON bool) error {
	if asJSON {
		return writeJSON(a.env.Stdout, map[string]string{"handle": h.String()})
	}
	_, err := fmt.Fprintln(a.env.Stdout, h)
	return err
}

// isBadInput says whether a dry-run error is the user's input (exit 2) rather than a
// failure of the machine (exit 1).
func isBadInput(err error) bool {
	for _, target := range []error{spec.ErrInvalidRunOpt, spec.ErrNoRoles, spec.ErrEmptyEntrypoint, spec.ErrBadReplicas, spec.ErrTooManyReplicas, spec.ErrReplicaBudget, spec.ErrBadEnvName, spec.ErrMalformedHandle} {
		if errors.Is(err, target) {
			return true
		}
	}
	return false
}
