package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"
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
	if err := checkConfScheduler(a.runner(), conf, c.scheduler, schedulerFrom); err != nil {
		return nil, err
	}
	a.warnComponentSections(conf)
	cfg, err := runCfg(a.runner(), conf, c.scheduler, f.cfg, a.warn)
	if err != nil {
		return nil, err
	}
	c.cfg = cfg
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

// runQueue is the hidden verb `wick __sweep DIR`: the sweep's queue process.
func (a *app) runQueue(dir string) error {
	ctx, stop := signal.NotifyContext(a.ctx, syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	signal.Ignore(syscall.SIGHUP)
	var ready *os.File
	if fd, err := strconv.Atoi(a.env.Getenv(sweep.EnvReady)); err == nil && fd > 2 {
		ready = os.NewFile(uintptr(fd), "ready")
	}
	// Not for the apps it launches: their supervisors would inherit it.
	_ = os.Unsetenv(sweep.EnvReady)
	report := func(msg string) {
		if ready != nil {
			fmt.Fprintln(ready, msg)
			ready.Close()
			ready = nil
		}
	}
	store := a.runner().Sweeps()
	if store == nil {
		report("error: no state directory")
		return errors.New("no state directory")
	}
	q := &sweep.Queue{
		Store: store, ID: filepath.Base(dir), Launcher: a.runner(),
		Logf: func(format string, args ...any) {
			fmt.Fprintf(a.env.Stderr, "%s %s\n", time.Now().Format(time.RFC3339Nano), fmt.Sprintf(format, args...))
		},
		Ready: func() { report("ok") },
	}
	err := q.Run(ctx)
	if err != nil {
		report("error: " + oneLine(err.Error()))
	}
	return err
}

// queueCmd is the hidden verb of a sweep's queue process.
func (a *app) queueCmd() *cobra.Command {
	return &cobra.Command{
		Use:    sweep.QueueVerb + " SWEEP_DIR",
		Hidden: true,
		Args:   args(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, argv []string) error {
			return a.runQueue(argv[0])
		},
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

// cancelSweep cancels the sweep's apps (runner.CancelSweep: its queue emptied
// first, so that cancelling the running apps starts no queued one).
func (a *app) cancelSweep(id string) error {
	ctx, cancel := context.WithTimeout(a.ctx, 10*time.Second)
	defer cancel()
	_, _, err := a.runner().CancelSweep(ctx, id)
	return err
}

// sweepArgs reads the sweep ids among the handle arguments of cancel (del false) or
// delete (del true): each is replaced by the handles of its apps that were launched
// (and are still known), and the apps that never ran are dealt with at once, in one
// write of the sweep. A cancel empties the queue first, so that cancelling the running
// apps starts no queued one; a delete refuses a sweep with queued apps unless force.
// The ids are returned apart.
func (a *app) sweepArgs(argv []string, del, force bool) (rest []string, ids []string, err error) {
	store := a.runner().Sweeps()
	for _, s := range argv {
		s = trimSlash(s)
		if store == nil || !sweep.IsID(s) {
			rest = append(rest, s)
			continue
		}
		sw, err := store.Load(s)
		if err != nil {
			return nil, nil, usageError{err}
		}
		if del && !force && sw.Waiting() > 0 {
			return nil, nil, fmt.Errorf("%w: sweep %s has %s (wick cancel %s first, or use --force)", sched.ErrRunning, s, spec.Count(sw.Waiting(), "queued app"), s)
		}
		if !del || force {
			_, removed, err := store.CancelQueued(s)
			if err != nil {
				return nil, nil, err
			}
			if removed > 0 {
				fmt.Fprintf(a.env.Stderr, "sweep %s: %s cancelled before they ran\n", s, spec.Count(removed, "queued app"))
			}
		}
		if del {
			n, err := store.Forget(s, force)
			if err != nil {
				return nil, nil, err
			}
			if n > 0 {
				fmt.Fprintf(a.env.Stderr, "sweep %s: %s that never ran deleted\n", s, spec.Count(n, "app"))
			}
		}
		ids = append(ids, s)
		launched, err := a.launchedApps(s)
		if err != nil {
			return nil, nil, err
		}
		rest = append(rest, launched...)
	}
	return rest, ids, nil
}

// launchedApps are the handles of the apps of sweep id that were launched (or are
// being launched) and that their scheduler still knows.
func (a *app) launchedApps(id string) ([]string, error) {
	sw, err := a.runner().Sweeps().Load(id)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, e := range sw.Entries {
		if e.State != sweep.Launched && e.State != sweep.Launching {
			continue
		}
		h, err := spec.ParseHandle(e.Handle)
		if err != nil {
			continue
		}
		if _, err := a.runner().Status(a.ctx, h); errors.Is(err, sched.ErrNotFound) && e.State == sweep.Launched {
			continue // deleted already
		}
		out = append(out, e.Handle)
	}
	return out, nil
}

// filterSweep keeps the apps of sweep id, in queue order.
func (a *app) filterSweep(apps []spec.AppStatus, id string) ([]spec.AppStatus, *sweep.Sweep, error) {
	store := a.runner().Sweeps()
	if store == nil {
		return nil, nil, fmt.Errorf("%w: %s", sweep.ErrNoSweep, id)
	}
	sw, err := store.Load(id)
	if err != nil {
		if errors.Is(err, sweep.ErrNoSweep) {
			return nil, nil, usageError{err}
		}
		return nil, nil, err
	}
	order := map[string]int{}
	for i, e := range sw.Entries {
		order[e.Handle] = i
	}
	var out []spec.AppStatus
	for _, st := range apps {
		if st.Sweep != nil && st.Sweep.ID == id {
			out = append(out, st)
		}
	}
	slices.SortStableFunc(out, func(x, y spec.AppStatus) int { return order[x.Handle] - order[y.Handle] })
	return out, sw, nil
}

// sweepList writes the apps of a sweep: one column per swept name, then state,
// running replicas, age, duration, exit and, for an app that never ran, why.
func sweepList(w io.Writer, sw *sweep.Sweep, apps []spec.AppStatus, now time.Time, st render.Styler) error {
	heads := append([]string{"HANDLE"}, upperAll(sw.Names)...)
	heads = append(heads, "STATE", "RUNNING", "AGE", "DURATION", "EXIT", "NOTE")
	rows := make([][]string, len(apps))
	for i := range apps {
		a := &apps[i]
		cells := render.AppRow(a, now, st)
		row := []string{cells[render.AppColHandle]}
		for _, n := range sw.Names {
			row = append(row, render.Escape(a.Sweep.Values[n]))
		}
		note := ""
		switch {
		case a.State == spec.Queued, a.State == spec.Failed && len(a.Roles) == 0,
			a.State == spec.Cancelled && strings.HasPrefix(a.Msg, sweep.StoppedMsg("")):
			note, _, _ = strings.Cut(render.FirstLine(a.Msg), " (sweep ")
			note = render.Escape(note)
		}
		row = append(row, cells[render.AppColState], cells[render.AppColRunning], cells[render.AppColAge],
			cells[render.AppColDuration], cells[render.AppColExit], note)
		rows[i] = row
	}
	par := "all at once"
	if sw.MaxParallel > 0 {
		par = fmt.Sprintf("at most %d at once", sw.MaxParallel)
	}
	queue := "queue done"
	if sw.Waiting() > 0 {
		queue = fmt.Sprintf("%d queued", sw.Waiting())
		if !sw.QueueRunning() {
			queue += fmt.Sprintf(", queue not running (wick sweep resume %s)", sw.ID)
		}
	}
	fmt.Fprintf(w, "sweep %s · %s of %s on %s · %s · %s\n", sw.ID, spec.Count(len(sw.Entries), "app"), render.Escape(sw.Component), sw.Scheduler, par, queue)
	_, err := io.WriteString(w, render.Table(heads, rows, st))
	return err
}

// forgetSweeps removes the sweeps named on delete's command line once none of their
// apps is left.
func (a *app) forgetSweeps(ids []string) {
	for _, id := range ids {
		sw, err := a.runner().Sweeps().Load(id)
		if err != nil || sw.Waiting() > 0 {
			continue
		}
		left := 0
		for _, e := range sw.Entries {
			if e.State != sweep.Deleted && e.State != sweep.Launched {
				left++
			}
		}
		if launched, err := a.launchedApps(id); err == nil && left+len(launched) == 0 {
			if err := a.runner().Sweeps().Remove(id); err != nil {
				a.warn(fmt.Sprintf("sweep %s: %v", id, err))
			}
		}
	}
}

// sweepCmd is `wick sweep`: what concerns a sweep as a whole (its queue).
func (a *app) sweepCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "sweep",
		Short: "Manage sweeps: resume a sweep's queue, move a queued app",
		Long: `A sweep is the grid of apps wick run --sweep launches. wick list --sweep ID lists its
apps; wick cancel ID and wick delete ID act on all of them; wick metrics --sweep ID
compares them. These verbs act on its queue.`,
	}
	cmd.AddCommand(&cobra.Command{
		Use:               "resume SWEEP_ID",
		Short:             "Start the queue of a sweep again (after its process was killed)",
		Args:              args(cobra.ExactArgs(1)),
		ValidArgsFunction: a.completeSweepArg,
		RunE: func(cmd *cobra.Command, argv []string) error {
			sw, started, err := a.runner().ResumeSweep(a.ctx, argv[0])
			switch {
			case errors.Is(err, sweep.ErrNoSweep) || errors.Is(err, sweep.ErrNoStore):
				return usageError{err}
			case err != nil:
				return err
			case started:
				fmt.Fprintf(a.env.Stderr, "sweep %s: queue resumed, %d queued\n", sw.ID, sw.Waiting())
				a.sayEnvKept(sw)
			case sw.QueueRunning():
				fmt.Fprintf(a.env.Stderr, "sweep %s: its queue is running (pid %d)\n", sw.ID, sw.Queue.PID)
			default:
				fmt.Fprintf(a.env.Stderr, "sweep %s: nothing queued\n", sw.ID)
			}
			return nil
		},
	})
	var asJSON bool
	list := &cobra.Command{
		Use:   "list",
		Short: "List the sweeps, newest first: their apps by state and their queue",
		Args:  args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			return a.listSweeps(asJSON)
		},
	}
	list.Flags().BoolVar(&asJSON, "json", false, "print as JSON")
	cmd.AddCommand(list)
	var to int
	move := &cobra.Command{
		Use:               "move HANDLE --to N",
		Short:             "Move a queued app to place N of its sweep's queue (1: next to start)",
		Long:              "Move a queued app to place N of its sweep's queue (1: next to start).\n\n" + handleHelp,
		Args:              args(cobra.ExactArgs(1)),
		ValidArgsFunction: a.completeQueued,
		RunE: func(cmd *cobra.Command, argv []string) error {
			if to < 1 {
				return usagef("--to %d: want 1 or more", to)
			}
			h, err := a.resolveHandle(argv[0])
			if err != nil {
				return err
			}
			store := a.runner().Sweeps()
			sw, ok := store.Find(h.String())
			if !ok {
				return usagef("%s is not an app of a sweep", h)
			}
			place, last := to, ""
			err = store.Update(sw.ID, func(s *sweep.Sweep) error {
				// Move puts an app asked past the end at the end: say where it went.
				n := 0
				for i := range s.Entries {
					if s.Entries[i].State == sweep.Queued {
						n++
					}
				}
				if to >= n {
					place, last = n, " (the last)"
				}
				return s.Move(h.String(), to)
			})
			if err != nil {
				return usageError{err}
			}
			fmt.Fprintf(a.env.Stderr, "%s: place %d of the queue of sweep %s%s\n", h, place, sw.ID, last)
			return nil
		},
	}
	move.Flags().IntVar(&to, "to", 1, "the place in the queue, 1 being the next app to start")
	cmd.AddCommand(move)
	return cmd
}

// listSweeps prints one row per sweep: its id, component and scheduler, how many of
// its apps are in each state, and whether its queue runs.
func (a *app) listSweeps(asJSON bool) error {
	store := a.runner().Sweeps()
	all, err := store.All()
	if err != nil {
		return err
	}
	// Only the schedulers the sweeps run on are asked (not Docker and Slurm for a
	// machine's local sweeps).
	var apps []spec.AppStatus
	asked := map[string]bool{}
	for _, sw := range all {
		if !asked[sw.Scheduler] {
			asked[sw.Scheduler] = true
			got, _ := a.runner().List(a.ctx, sw.Scheduler)
			apps = append(apps, got...)
		}
	}
	counts := map[string]map[spec.AppState]int{}
	for _, st := range apps {
		if st.Sweep == nil {
			continue
		}
		if counts[st.Sweep.ID] == nil {
			counts[st.Sweep.ID] = map[spec.AppState]int{}
		}
		counts[st.Sweep.ID][st.State]++
	}
	order := []spec.AppState{spec.Queued, spec.Pending, spec.Running, spec.Succeeded, spec.Failed, spec.Cancelled, spec.UnknownState}
	if asJSON {
		out := make([]map[string]any, 0, len(all))
		for _, sw := range all {
			states := map[string]int{}
			for s, n := range counts[sw.ID] {
				states[s.String()] = n
			}
			out = append(out, map[string]any{"sweep": sw.ID, "component": sw.Component, "scheduler": sw.Scheduler,
				"names": sw.Names, "apps": len(sw.Entries), "states": states, "queue_running": sw.QueueRunning(), "created": sw.Created})
		}
		return writeJSON(a.env.Stdout, out)
	}
	rows := make([][]string, 0, len(all))
	now := time.Now()
	for _, sw := range all {
		var parts []string
		for _, s := range order {
			if n := counts[sw.ID][s]; n > 0 {
				parts = append(parts, fmt.Sprintf("%d %s", n, strings.ToLower(s.String())))
			}
		}
		queue := "done"
		switch {
		case sw.QueueRunning():
			queue = "running"
		case sw.Waiting() > 0:
			queue = "stopped (wick sweep resume)"
		}
		rows = append(rows, []string{sw.ID, render.Escape(sw.Component), sw.Scheduler, render.Escape(strings.Join(sw.Names, " x ")),
			strconv.Itoa(len(sw.Entries)), strings.Join(parts, ", "), queue, render.Age(sw.Created, now)})
	}
	_, err = io.WriteString(a.env.Stdout, render.Table([]string{"SWEEP", "COMPONENT", "SCHEDULER", "NAMES", "APPS", "STATES", "QUEUE", "AGE"}, rows, a.out()))
	return err
}
