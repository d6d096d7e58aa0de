// Package common is the contract between wick's root model and its views: the context
// handed down by the root (size, theme, actions, the engine), the View interface every
// view implements, the messages views send to the root and to themselves, and the action
// table's types. Each view declares its own rows of the table beside its code; the root
// assembles them. The widgets views draw with are in tui/widget.
package common

import (
	"context"
	"time"

	"github.com/wick-dev/wick/components"
	"github.com/wick-dev/wick/engine/metrics"
	"github.com/wick-dev/wick/engine/sched"
	"github.com/wick-dev/wick/engine/spec"
	"github.com/wick-dev/wick/engine/sweep"
	"github.com/wick-dev/wick/themes"
)

// Backend is what the UI needs of the engine. *runner.Runner satisfies it; every call
// goes through the same Runner method a one-shot verb uses.
type Backend interface {
	StateDir() string
	SchedulerBackends() []string
	SchedulerRunOpts(name string) (spec.RunOpts, error)
	DryRunComponent(ctx context.Context, name string, args []string, scheduler string, cfg spec.Cfg, workspace string, c components.Lookup) (*sched.DryRunInfo, error)
	// DryRun plans an AppDef on a scheduler (a relaunch plans its source's AppDef).
	DryRun(ctx context.Context, app *spec.AppDef, scheduler string, cfg spec.Cfg, workspace string) (*sched.DryRunInfo, error)
	Schedule(ctx context.Context, info *sched.DryRunInfo, progress sched.Progress) (spec.Handle, error)
	Run(ctx context.Context, app *spec.AppDef, scheduler string, cfg spec.Cfg, workspace string, progress sched.Progress) (spec.Handle, error)
	Describe(ctx context.Context, h spec.Handle) (*sched.Description, error)
	// AttachUsage adds each running replica's CPU and RSS to an app's status.
	AttachUsage(ctx context.Context, h spec.Handle, st *spec.AppStatus) error
	// Usage returns the CPU and RSS of each running replica (for the wall's titles).
	Usage(ctx context.Context, h spec.Handle) (map[sched.ReplicaKey]sched.Usage, error)
	// Call is the component call the app h was launched from, nil when not known.
	Call(h spec.Handle) (*sched.Call, error)
	List(ctx context.Context, scheduler string) ([]spec.AppStatus, []error)
	// ListAllHomes is List with other WICK_HOMEs' local_docker apps, marked Foreign.
	ListAllHomes(ctx context.Context, scheduler string) ([]spec.AppStatus, []error)
	Cancel(ctx context.Context, h spec.Handle) error
	// CancelSweep cancels every app of sweep id, its queued apps first (none of them
	// starts while its running apps are cancelled).
	CancelSweep(ctx context.Context, id string) (removed int, cancelled []spec.Handle, err error)
	// PlanSweep plans a grid of apps (the one planning `wick run --sweep` uses too:
	// the engine reads the device pool and deals it); LaunchSweep writes it and starts
	// its queue.
	PlanSweep(ctx context.Context, req sweep.Request) (*sweep.Planned, error)
	LaunchSweep(ctx context.Context, p *sweep.Planned) error
	// ResumeSweep starts the queue of sweep id again (its process was killed), unless
	// it runs or has nothing left to do (started false).
	ResumeSweep(ctx context.Context, id string) (sw *sweep.Sweep, started bool, err error)
	// MoveQueued puts a queued app of a sweep at place `to` of its queue (1: the
	// next to start), as `wick sweep move` does.
	MoveQueued(h spec.Handle, to int) (sw *sweep.Sweep, place int, last bool, err error)
	Delete(ctx context.Context, h spec.Handle, force bool) error
	LogLines(ctx context.Context, h spec.Handle, role string, k int, opts sched.LogOptions) (sched.LogIterator, error)
}

// Config is what the UI reads of .torchxconfig: argument defaults per component
// ([component:NAME]) and run options per scheduler ([SCHEDULER]).
type Config interface {
	ComponentDefaults(name string) map[string]string
	RunOpts(scheduler string, opts spec.RunOpts) (spec.Cfg, error)
}

// NoConfig is the Config of a project without .torchxconfig.
type NoConfig struct{}

// ComponentDefaults returns no defaults.
func (NoConfig) ComponentDefaults(string) map[string]string { return nil }

// RunOpts returns no run options.
func (NoConfig) RunOpts(string, spec.RunOpts) (spec.Cfg, error) { return nil, nil }

// Context is the state the root model shares with every view: the size of the body
// (the screen less the title, status and help lines), the theme, the actions, the
// engine and the clock. Views read it; only the root writes it.
type Context struct {
	// Ctx is cancelled when the UI ends; slow work runs under it.
	Ctx     context.Context
	Backend Backend
	Config  Config
	// Components lists the components the picker offers (builtins and user files).
	Components func() ([]*components.Component, error)
	// Find is where the Runner finds a component when the form plans it: the same
	// search path Components lists.
	Find components.FindOptions
	// DefaultScheduler is preselected in the argument form.
	DefaultScheduler string
	// Workspace is passed to dry runs and launches (local_docker image builds).
	Workspace string

	// Cores lends every processor to parallel work (a search) while the UI runs on
	// fewer; nil leaves GOMAXPROCS alone.
	Cores *Cores

	// Alarms reads and keeps the apps' metric alarms (for the app list's marks and
	// describe); nil reads none.
	Alarms *metrics.Book

	Theme   *themes.Theme
	Actions *Registry
	// Width and Height are the size of the body, where the active view draws.
	Width, Height int
	// Now is the clock (fixed in tests).
	Now func() time.Time

	lastID ViewID
}

// NewID returns an id no other view of this UI has.
func (c *Context) NewID() ViewID {
	c.lastID++
	return c.lastID
}

// MemoryLimit is the UI's soft memory limit (runtime/debug.SetMemoryLimit): the wall's
// 192k lines held (its budget, however many replicas) and the readers of 1,024
// replicas, ~95 MB of live heap, fit under it with room for a frame's garbage,
// keeping RSS under 150 MB: the binary's pages and what is not Go's come on top
// (at 160 MB of limit RSS was 160-167 MB, at 136 MB 142-154 MB). Above it the
// garbage collector works harder, never more than half a core.
const MemoryLimit = 128 << 20
