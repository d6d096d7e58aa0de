package cli

import (
	"errors"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/pflag"

	"github.com/wick-dev/wick/components"
	"github.com/wick-dev/wick/engine/runner"
	"github.com/wick-dev/wick/engine/sched"
	"github.com/wick-dev/wick/engine/spec"
	"github.com/wick-dev/wick/engine/sweep"
	"github.com/wick-dev/wick/tui/render"
)

// sweepFlags are wick run's flags for sweeps.
type sweepFlags struct {
	specs       []string
	maxParallel int
	stopOnNaN   bool
}

// addSweepFlags adds --sweep and --max-parallel to wick run.
func addSweepFlags(fl *pflag.FlagSet, f *sweepFlags) {
	fl.StringArrayVar(&f.specs, "sweep", nil, "launch a grid: NAME=V1,V2,... (a value may be a range A..B[:STEP]; repeatable: the cartesian product); NAME is a component argument, else a flag of the script after --")
	fl.BoolVar(&f.stopOnNaN, "stop-on-nan", false, "with --sweep: cancel an app as soon as one of its metrics (its loss) is NaN or Inf, to free its slot")
	fl.IntVar(&f.maxParallel, "max-parallel", 0, "with --sweep: run at most this many apps at once, the others queued (default: one per GPU, else one per CPU core; slurm: all, Slurm queues them); an app its scheduler refuses for a limit (Slurm's MaxSubmitJobs, a full disk) waits in the queue")
}

// sweepCall is the component call of a sweep, its flags read as wick run reads them.
type sweepCall struct {
	name      string
	argv      []string
	scheduler string
	cfg       spec.Cfg
	workspace string
	lookup    components.Lookup
}

// readSweepCall reads the component, scheduler and run options of wick run --sweep,
// with .torchxconfig's defaults, as runRun does.
func (a *app) readSweepCall(f runFlags, argv []string) (*sweepCall, error) {
	conf, err := a.loadConfig()
	if err != nil {
		return nil, usageError{err}
	}
	cliRun := conf.CLIRun()
	c := &sweepCall{scheduler: f.scheduler, workspace: f.workspace}
	schedulerFrom := ""
	if c.scheduler == "" {
		c.scheduler = cliRun["scheduler"]
		schedulerFrom = conf.Where("cli:run", "scheduler")
	}
	if c.scheduler == "" {
		c.scheduler = DefaultScheduler
	}
	if c.workspace == "" {
		c.workspace = cliRun["workspace"]
	}
	if len(argv) > 0 && argv[0] == "--" {
		argv = argv[1:]
	}
	if len(argv) > 0 && !strings.HasPrefix(argv[0], "-") {
		c.name, c.argv = argv[0], argv[1:]
	} else if c.name, c.argv = cliRun["component"], argv; c.name == "" {
		return nil, usagef("missing component name (wick builtins lists them; or set component in [cli:run] of .torchxconfig)")
	}
	r := a.runner()
	if err := checkConfScheduler(r, conf, c.scheduler, schedulerFrom); err != nil {
		return nil, err
	}
	a.warnComponentSections(conf)
	cfg, err := runCfg(r, conf, c.scheduler, f.cfg, a.warn)
	if err != nil {
		return nil, err
	}
	// As for one app: config.toml's [alerts] are the defaults of every point's
	// on_end and on_alarm.
	c.cfg = a.withAlerts(r, c.scheduler, cfg)
	c.lookup = components.Lookup{
		Find:     a.findOptions(),
		Defaults: conf.ComponentDefaults,
		Warn:     func(s string) { fmt.Fprintf(a.env.Stderr, "wick: warning: %s\n", oneLine(s)) },
	}
	return c, nil
}

// runSweep plans every app of the grid (the Runner's PlanSweep, which the UI's
// sweep form calls too), prints them (--dryrun) or hands them to a new queue
// process, and then returns (--detach) or follows the sweep to its end.
func (a *app) runSweep(f runFlags, sf sweepFlags, argv []string) error {
	params, err := sweep.ParseParams(sf.specs)
	if err != nil {
		return usageError{err}
	}
	switch {
	case len(params) == 0:
		return usagef("--max-parallel and --stop-on-nan need --sweep NAME=V1,V2,...")
	case sf.maxParallel < 0:
		return usagef("--max-parallel %d: want 1 or more", sf.maxParallel)
	}
	c, err := a.readSweepCall(f, argv)
	if err != nil {
		return err
	}
	p, err := a.runner().PlanSweep(a.ctx, sweep.Request{
		Component: c.name, Args: c.argv, Params: params,
		Scheduler: c.scheduler, Cfg: c.cfg, Workspace: c.workspace, Lookup: c.lookup,
		MaxParallel: sf.maxParallel, StopOnNaN: sf.stopOnNaN,
		Env: os.Environ(), WorkDir: a.env.WorkDir,
	})
	var compErr *runner.ComponentError
	var pointErr *sweep.PointError
	switch {
	case err == nil:
	case errors.Is(err, components.ErrHelp) && errors.As(err, &compErr) && compErr.Component != nil:
		_, err := fmt.Fprint(a.env.Stdout, render.EscapeText(compErr.Component.Usage()))
		return err
	case errors.As(err, &pointErr):
		if errors.As(err, &compErr) || isBadInput(err) {
			return usagef("--sweep: %v", err)
		}
		return err
	case errors.As(err, &compErr) || isBadInput(err) || errors.Is(err, sweep.ErrBadSweep):
		return usageError{err}
	default:
		return err
	}
	if f.dryrun {
		return a.printSweepPlan(p.Sweep, p.DryRuns, f)
	}
	return a.launchSweep(p, f)
}

// launchSweep writes the sweep, starts its queue, and returns (--detach) or follows it.
func (a *app) launchSweep(p *sweep.Planned, f runFlags) error {
	sw := p.Sweep
	if err := a.runner().LaunchSweep(a.ctx, p); err != nil {
		return err
	}
	if f.detach {
		if f.asJSON {
			return writeJSON(a.env.Stdout, sweepJSON(sw))
		}
		_, err := fmt.Fprintln(a.env.Stdout, sw.ID)
		return err
	}
	if !f.asJSON {
		fmt.Fprintln(a.env.Stdout, sw.ID)
	}
	return a.followSweep(sw.ID, f.asJSON)
}

// sweepJSON is a sweep as --json prints it.
func sweepJSON(sw *sweep.Sweep) map[string]any {
	apps := make([]map[string]any, len(sw.Entries))
	for i := range sw.Entries {
		e := &sw.Entries[i]
		apps[i] = map[string]any{"handle": e.Handle, "name": e.Name, "values": sw.Ref(e).Values}
	}
	return map[string]any{"sweep": sw.ID, "scheduler": sw.Scheduler, "max_parallel": sw.MaxParallel, "apps": apps}
}

// printSweepPlan prints the dry run of a sweep: every app of the grid with its
// values, then the plan of the first app (the others differ only by their values).
func (a *app) printSweepPlan(sw *sweep.Sweep, infos []*sched.DryRunInfo, f runFlags) error {
	if f.asJSON {
		v := sweepJSON(sw)
		plans := make([]any, len(infos))
		for i, info := range infos {
			var p any = info
			if !f.reveal {
				var err error
				if p, err = render.MaskJSON(info); err != nil {
					return err
				}
			}
			plans[i] = p
		}
		v["dryruns"] = plans
		return writeJSON(a.env.Stdout, v)
	}
	return render.SweepPlan(a.env.Stdout, sw, infos[0], a.out(), render.TreeOptions{MaskSecrets: !f.reveal})
}

func upperAll(ss []string) []string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = strings.ToUpper(render.Escape(s))
	}
	return out
}

// sayEnvKept tells, on resume, that the sweep goes on in the environment and directory
// it was launched with, naming what this shell would have changed.
func (a *app) sayEnvKept(sw *sweep.Sweep) {
	if len(sw.Env) == 0 {
		fmt.Fprintf(a.env.Stderr, "sweep %s: made before sweeps recorded their environment: its apps get this shell's\n", sw.ID)
		return
	}
	if ch := sweep.EnvChanges(sw.Env, os.Environ()); len(ch) > 0 {
		names := ch
		if len(names) > 8 {
			names = append(names[:8:8], fmt.Sprintf("and %d more", len(ch)-8))
		}
		fmt.Fprintf(a.env.Stderr, "sweep %s: its apps keep the environment it was launched with; this shell's differs in %s (not used)\n",
			sw.ID, render.Escape(strings.Join(names, ", ")))
	}
	if sw.WorkDir != "" && sw.WorkDir != a.env.WorkDir {
		fmt.Fprintf(a.env.Stderr, "sweep %s: its apps run in %s, where it was launched (not here)\n", sw.ID, render.Escape(sw.WorkDir))
	}
}

// followSweep prints each app's changes of state until every app of the sweep has
// ended, and exits 0 only if all SUCCEEDED. The first Ctrl-C cancels the sweep (its
// queue and its running apps); a second one detaches.
func (a *app) followSweep(id string, asJSON bool) error {
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP)
	defer signal.Stop(sigs)
	r := a.runner()
	store := r.Sweeps()
	seen := map[string]spec.AppState{}
	final := map[string]*spec.AppStatus{}
	cancelled := false
	tick := time.NewTicker(200 * time.Millisecond)
	defer tick.Stop()
	for {
		sw, err := store.Load(id)
		if err != nil {
			return err
		}
		done, ahead := 0, 0
		for i := range sw.Entries {
			e := &sw.Entries[i]
			queued := e.State == sweep.Queued
			if _, ok := final[e.Handle]; ok {
				done++
				continue
			}
			st := a.sweepAppStatus(sw, e, ahead)
			if queued {
				ahead++
			}
			if st.State != seen[e.Handle] {
				seen[e.Handle] = st.State
				if !asJSON {
					line := fmt.Sprintf("%s  %s  %s", render.Escape(sw.Ref(e).Label()), e.Handle, a.errs().State(st.State, st.State.String()))
					if st.State == spec.Failed && st.Msg != "" {
						line += "  " + render.Escape(render.FirstLine(st.Msg))
					}
					fmt.Fprintln(a.env.Stderr, line)
				}
			}
			if st.State.Terminal() {
				final[e.Handle] = st
				done++
			}
		}
		if done == len(sw.Entries) {
			return a.sweepSummary(sw, final, asJSON)
		}
		select {
		case sig := <-sigs:
			if sig == syscall.SIGHUP {
				return nil // nobody to report to: the sweep goes on
			}
			if cancelled {
				fmt.Fprintf(a.env.Stderr, "wick: detached; the sweep is stopping: wick list --sweep %s\n", id)
				return exitError{code: ExitFailure}
			}
			cancelled = true
			fmt.Fprintf(a.env.Stderr, "wick: cancelling sweep %s (again to detach)\n", id)
			if err := a.cancelSweep(id); err != nil {
				fmt.Fprintf(a.env.Stderr, "wick: cancel: %s\n", render.Escape(oneLine(err.Error())))
			}
		case <-tick.C:
		}
	}
}

// sweepAppStatus is the status of one app of a sweep: its scheduler's once launched,
// else the queue's.
// ahead is the number of queued apps before e.
func (a *app) sweepAppStatus(sw *sweep.Sweep, e *sweep.Entry, ahead int) *spec.AppStatus {
	if e.State == sweep.Launched {
		if h, err := spec.ParseHandle(e.Handle); err == nil {
			if st, err := a.runner().Status(a.ctx, h); err == nil {
				return st
			}
		}
		return &spec.AppStatus{Handle: e.Handle, State: spec.UnknownState}
	}
	st := sw.StatusAt(e, ahead)
	return &st
}

// sweepSummary prints how the sweep's apps ended and exits 1 unless all SUCCEEDED.
func (a *app) sweepSummary(sw *sweep.Sweep, final map[string]*spec.AppStatus, asJSON bool) error {
	counts := map[spec.AppState]int{}
	for _, st := range final {
		counts[st.State]++
	}
	if asJSON {
		v := sweepJSON(sw)
		for i, app := range v["apps"].([]map[string]any) {
			app["state"] = final[sw.Entries[i].Handle].State.String()
		}
		if err := writeJSON(a.env.Stdout, v); err != nil {
			return err
		}
	} else {
		var parts []string
		for _, s := range []spec.AppState{spec.Succeeded, spec.Failed, spec.Cancelled, spec.UnknownState} {
			if counts[s] > 0 {
				parts = append(parts, fmt.Sprintf("%d %s", counts[s], a.errs().State(s, s.String())))
			}
		}
		fmt.Fprintf(a.env.Stderr, "wick: sweep %s: %s\n", sw.ID, strings.Join(parts, ", "))
	}
	if counts[spec.Succeeded] != len(sw.Entries) {
		return exitError{code: ExitFailure}
	}
	return nil
}
