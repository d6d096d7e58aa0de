package sweep

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/wick-dev/wick/components"
	"github.com/wick-dev/wick/engine/gpus"
	"github.com/wick-dev/wick/engine/sched"
	"github.com/wick-dev/wick/engine/spec"
)

// Request is what a sweep is planned from: a component call, some of whose arguments
// (or of its script's flags) take every value of a grid, and where and how the grid
// runs. The CLI's `wick run --sweep` and the UI's sweep form both fill one in and call
// the Runner's PlanSweep, which calls Prepare: neither plans a sweep on its own.
type Request struct {
	// Component is the component as the user named it (a builtin, FILE:NAME, a
	// component of the user's TorchX).
	Component string
	// Args are its arguments as on a command line: flags, then "--" and the script's
	// arguments. The swept ones are not among them.
	Args []string
	// Params are the swept names and their values (ParseParams).
	Params []Param
	// Scheduler, Cfg and Workspace are as for a single app (Cfg resolved).
	Scheduler string
	Cfg       spec.Cfg
	Workspace string
	// Lookup finds the component and its .torchxconfig defaults.
	Lookup components.Lookup
	// MaxParallel is how many apps run at once; 0 picks the default (one per GPU of
	// the pool, else one per CPU core; on Slurm all, Slurm queues them).
	MaxParallel int
	// StopOnNaN cancels an app whose metric turns NaN or Inf.
	StopOnNaN bool
	// Env is the launching environment (os.Environ of the CLI or the UI): the pool
	// is read from its CUDA_VISIBLE_DEVICES, and it is recorded with the sweep and
	// given to every point (resume included). nil means this process's.
	Env []string
	// WorkDir is the launching directory: the apps run there (local_cwd), and a
	// component file named relatively is found again from it.
	WorkDir string
}

// Planned is a sweep planned and not yet launched: the sweep (its entries queued), what
// each app is launched from, and each app's dry run, in grid order.
type Planned struct {
	Sweep   *Sweep
	Plans   []Plan
	DryRuns []*sched.DryRunInfo
	// Component is the component resolved once for the whole grid.
	Component *components.Component
}

// Engine is what planning needs of the Runner.
type Engine interface {
	// Session is the session of the apps' handles.
	Session() string
	// Materialize resolves a component by name and builds an AppDef from arguments.
	Materialize(ctx context.Context, name string, args []string, c components.Lookup) (*components.Component, *spec.AppDef, error)
	// BuildApp builds an AppDef of a component resolved already (Materialize's
	// second half, for every point but the first).
	BuildApp(ctx context.Context, comp *components.Component, name string, args []string, c components.Lookup) (*spec.AppDef, error)
	// DryRun plans an AppDef on a scheduler.
	DryRun(ctx context.Context, app *spec.AppDef, schedName string, cfg spec.Cfg, workspace string) (*sched.DryRunInfo, error)
}

// EnvReady is the variable that tells the queue process which file descriptor
// reports its start (StartQueue); it is not recorded with a sweep.
const EnvReady = "WICK_SWEEP_READY_FD"

// PointError is the error of one point of the grid: its app does not build or does
// not plan. It wraps the cause (a component's error, an invalid run option).
type PointError struct {
	// Label names the point (its values).
	Label string
	Err   error
}

func (e *PointError) Error() string { return fmt.Sprintf("the app of %s: %v", e.Label, e.Err) }
func (e *PointError) Unwrap() error { return e.Err }

// Prepare plans a sweep: it resolves the component once, decides where each swept name
// goes (Targets), deals the machine's device pool and the default parallelism, and
// dry-runs the app of every point of the grid. Nothing is written or started:
// Starter.Launch does that. Errors about the sweep itself wrap ErrBadSweep; an error of one
// point is a *PointError; the component's own errors (help included) come as
// Materialize returns them.
func Prepare(ctx context.Context, eng Engine, req Request) (*Planned, error) {
	switch {
	case len(req.Params) == 0:
		return nil, fmt.Errorf("%w: nothing is swept (want NAME=V1,V2,...)", ErrBadSweep)
	case req.MaxParallel < 0:
		return nil, fmt.Errorf("%w: max parallel %d: want 1 or more", ErrBadSweep, req.MaxParallel)
	}
	comp, _, err := eng.Materialize(ctx, req.Component, req.Args, req.Lookup)
	if err != nil {
		return nil, err
	}
	targets, err := Targets(comp, req.Params, req.Args)
	if err != nil {
		return nil, err
	}
	environ := req.Env
	if environ == nil {
		environ = osEnviron()
	}
	sw := &Sweep{ID: NewID(), Created: time.Now(), Component: comp.Name, Scheduler: req.Scheduler,
		Session: eng.Session(), MaxParallel: req.MaxParallel, StopOnNaN: req.StopOnNaN,
		Env: RecordEnv(environ, EnvReady), WorkDir: req.WorkDir}
	if OwnsMachine(req.Scheduler) {
		sw.Devices = gpus.Finder{Getenv: lookupIn(environ), Run: gpus.New().Run}.Pool(ctx)
		if sw.MaxParallel == 0 {
			sw.MaxParallel = runtime.NumCPU()
			if len(sw.Devices) > 0 {
				sw.MaxParallel = len(sw.Devices)
			}
		}
	}
	for _, p := range req.Params {
		sw.Names = append(sw.Names, p.Name)
	}
	grid := Grid(req.Params)
	out := &Planned{Sweep: sw, Component: comp, Plans: make([]Plan, 0, len(grid)), DryRuns: make([]*sched.DryRunInfo, 0, len(grid))}
	ref := componentRef(comp, req.WorkDir)
	for i, point := range grid {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		args := ApplyPoint(req.Args, targets, point)
		e := Entry{Index: i, Values: point, State: Queued}
		label := sw.Ref(&e).Label()
		app, err := eng.BuildApp(ctx, comp, req.Component, args, req.Lookup)
		var info *sched.DryRunInfo
		if err == nil {
			app.Name = AppName(app.Name, req.Params, point)
			SetRef(app, sw.Ref(&e))
			info, err = eng.DryRun(ctx, app, req.Scheduler, req.Cfg, req.Workspace)
		}
		if err != nil {
			return nil, &PointError{Label: label, Err: err}
		}
		info.Call = &sched.Call{Component: ref, Args: args}
		e.Name, e.Handle = app.Name, info.Handle().String()
		if len(sw.Devices) > 0 {
			e.GPUs = GPUsOf(app)
		}
		sw.Entries = append(sw.Entries, e)
		out.Plans = append(out.Plans, PlanOf(info))
		out.DryRuns = append(out.DryRuns, info)
	}
	return out, nil
}

// OwnsMachine says whether a scheduler runs its apps on this machine, whose GPUs and
// cores a sweep's queue then deals out; the others (Slurm, Kubernetes) queue the
// apps themselves.
func OwnsMachine(scheduler string) bool { return strings.HasPrefix(scheduler, "local_") }

// LaunchChoice says what the queue decides only when it launches an app, so that a
// plan printed is not taken for more than it is.
func (s *Sweep) LaunchChoice() string {
	if len(s.Devices) > 0 {
		return fmt.Sprintf("Chosen when each app is launched: its GPUs, from the pool %s (each replica its own), and a free rendezvous port for a multi-node torchrun role on the default one.", strings.Join(s.Devices, ","))
	}
	return "Chosen when each app is launched: a free rendezvous port for a multi-node torchrun role on the default one."
}

// Target is where a swept name goes: a component argument, or a flag of the script
// after "--".
type Target struct {
	Name   string
	Script bool
}

// Targets decides where each swept name goes: a parameter of the component wins;
// else, for a component that takes trailing arguments, a flag of the script (--NAME V
// after "--"). A name also given as a component flag in argv is refused: which one
// would win is not obvious.
func Targets(c *components.Component, ps []Param, argv []string) ([]Target, error) {
	norm := func(s string) string { return strings.ReplaceAll(s, "-", "_") }
	flagPart := argv
	if i := slices.Index(argv, "--"); i >= 0 {
		flagPart = argv[:i]
	}
	var names []string
	for _, p := range c.Params {
		names = append(names, p.Name)
	}
	out := make([]Target, len(ps))
	for i, p := range ps {
		var param *components.Param
		for j := range c.Params {
			if norm(c.Params[j].Name) == norm(p.Name) {
				param = &c.Params[j]
			}
		}
		if param == nil {
			if c.Varargs == "" {
				return nil, fmt.Errorf("%w: unknown NAME %q: not an argument of %s%s (it takes no script arguments after --)",
					ErrBadSweep, p.Name, c.Name, spec.DidYouMean(p.Name, names))
			}
			out[i] = Target{Name: p.Name, Script: true}
			continue
		}
		for _, a := range flagPart {
			flag, _, _ := strings.Cut(a, "=")
			if norm(flag) == "__"+norm(param.Name) || (param.Short != "" && flag == "-"+param.Short) {
				return nil, fmt.Errorf("%w: %s is swept and also given as %s; give it once", ErrBadSweep, p.Name, flag)
			}
		}
		out[i] = Target{Name: param.Name}
	}
	return out, nil
}

// ApplyPoint makes the arguments of one app: the component's own swept arguments
// first (--NAME=V), then argv, with the script's swept flags set after "--" (an
// existing --NAME V or --NAME=V there gets the value; otherwise --NAME V is added).
func ApplyPoint(argv []string, ts []Target, point []string) []string {
	var front []string
	head, tail, hasTail := argv, []string(nil), false
	if i := slices.Index(argv, "--"); i >= 0 {
		head, tail, hasTail = argv[:i], slices.Clone(argv[i+1:]), true
	}
	for i, t := range ts {
		v := point[i]
		if !t.Script {
			front = append(front, "--"+t.Name+"="+v)
			continue
		}
		hasTail = true
		flag, set := "--"+t.Name, false
		for j := 0; j < len(tail); j++ {
			switch {
			case tail[j] == flag && j+1 < len(tail):
				tail[j+1], set = v, true
			case strings.HasPrefix(tail[j], flag+"="):
				tail[j], set = flag+"="+v, true
			}
		}
		if !set {
			tail = append(tail, flag, v)
		}
	}
	out := append(front, head...)
	if hasTail {
		out = append(append(out, "--"), tail...)
	}
	return out
}

// componentRef names a component as a relaunch finds it again: FILE:NAME with an
// absolute FILE for a user file, else its name.
func componentRef(c *components.Component, workDir string) string {
	if c.Source == "" {
		return c.Name
	}
	src := c.Source
	if !filepath.IsAbs(src) && workDir != "" {
		src = filepath.Join(workDir, src)
	}
	if abs, err := filepath.Abs(src); err == nil {
		src = abs
	}
	return src + ":" + c.Name
}

// lookupIn reads a variable of environ, as os.LookupEnv reads the process's (the
// last setting wins).
func lookupIn(environ []string) func(string) (string, bool) {
	return func(k string) (string, bool) {
		for i := len(environ) - 1; i >= 0; i-- {
			if v, ok := strings.CutPrefix(environ[i], k+"="); ok {
				return v, true
			}
		}
		return "", false
	}
}

// ErrNoStore is returned by Launch without a state directory.
var ErrNoStore = errors.New("sweeps need a state directory (set WICK_HOME)")
