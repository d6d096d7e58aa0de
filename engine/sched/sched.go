// Package sched defines what a scheduler is to wick: the Scheduler interface, the
// dry-run and submission types, log lines and log options, and the registry that maps
// scheduler names to factories. Each scheduler lives in a package of its own. The
// optional capabilities a scheduler may add (Killer, UsageReader, MultiLogger,
// RawLogReader, Readier), and what a user loses without each, are listed in
// capabilities.go.
package sched

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/wick-dev/wick/engine/spec"
)

// ErrNotFound is returned (wrapped) for an app a scheduler does not know.
var ErrNotFound = errors.New("no such app")

// ErrRunning is returned by Delete for an app that is still running without force.
var ErrRunning = errors.New("app is still running")

// ErrUnreachable matches (errors.Is) the errors of a scheduler that could not be
// reached at all: a Docker Engine that does not answer, a Slurm controller that is
// down. wick exits with a code of its own for them (docs/json.md). A scheduler makes
// its own such error with Unreachable, so that its message stays its own.
var ErrUnreachable = errors.New("the scheduler cannot be reached")

// Unreachable returns an error with message msg that matches ErrUnreachable.
func Unreachable(msg string) error { return &unreachableError{msg} }

type unreachableError struct{ msg string }

func (e *unreachableError) Error() string { return e.msg }

// Is makes the error match ErrUnreachable.
func (e *unreachableError) Is(target error) bool { return target == ErrUnreachable }

// LeftBehindError is a launch that failed, or was stopped, and whose rollback could
// not remove all it had made: Left names what remains and how to remove it.
type LeftBehindError struct {
	Err  error // why the launch did not complete
	Left error // what the rollback could not remove
}

func (e *LeftBehindError) Error() string {
	return e.Err.Error() + "; its rollback left: " + e.Left.Error()
}

// Unwrap gives both errors to errors.Is and errors.As.
func (e *LeftBehindError) Unwrap() []error { return []error{e.Err, e.Left} }

// Submission is everything a scheduler needs to plan an app. Its JSON keys are
// snake_case, as in every --json output (docs/json.md).
type Submission struct {
	AppID string `json:"app_id"`
	// Session is the session of the app's handle, filled by the Runner (its own, by
	// default spec.DefaultSession): a scheduler's plan takes it as it is.
	Session string `json:"session"`
	// App is the AppDef after the runner's env injection, before macro substitution.
	App *spec.AppDef `json:"app"`
	// Cfg holds the scheduler's resolved run options.
	Cfg spec.Cfg `json:"cfg"`
	// Workspace is a directory to lay over the role's image (docker), or "".
	Workspace string `json:"workspace"`
	// Devices is the app's device pool (CUDA_VISIBLE_DEVICES entries: GPU indexes,
	// GPU or MIG UUIDs) when the caller chose its GPUs (a sweep's queue): the
	// scheduler hands each replica its own slice of it, in role and replica order,
	// max(resource.gpu, 1) devices each, and gives no replica any other device.
	// Empty: the scheduler's own choice (local: auto_set_cuda_visible_devices over
	// the machine's pool, package gpus).
	Devices []string `json:"devices,omitempty"`
}

// DryRunInfo is a planned submission: what Schedule would submit, inspectable and
// printable before anything runs.
type DryRunInfo struct {
	Scheduler string `json:"scheduler"`
	Submission
	// Request is the scheduler's own request (JSON-marshalable, struct fields in the
	// order they should be printed).
	Request any `json:"request"`
	// Call is the component call the app was planned from (`wick run COMPONENT ARGS`),
	// or nil for an AppDef. It is not part of the printed plan; the Runner records it
	// at launch so that the UI can open the component's form filled with these
	// arguments again.
	Call *Call `json:"-"`
}

// Call is a component call: the component's name (FILE:NAME for a user file, with an
// absolute FILE) and its command-line style arguments.
type Call struct {
	Component string   `json:"component"`
	Args      []string `json:"args"`
}

// Handle is the app's handle once scheduled.
func (d *DryRunInfo) Handle() spec.Handle {
	return spec.Handle{Scheduler: d.Scheduler, Session: d.Session, AppID: d.AppID}
}

// Progress reports a step of long work (an image build, container starts) to the user.
// It may be nil.
type Progress func(step string)

// Report calls p if it is not nil.
func (p Progress) Report(format string, args ...any) {
	if p != nil {
		p(fmt.Sprintf(format, args...))
	}
}

// Description is what a scheduler knows of an app.
type Description struct {
	Status spec.AppStatus
	// App is the AppDef as submitted, or as far as the scheduler can rebuild it.
	App *spec.AppDef
	// Cfg holds the run options the app was launched with, when known.
	Cfg spec.Cfg
}

// ReplicaDescriber is implemented by schedulers that can describe an app for a caller
// that looks at some of its replicas only, at a cost that grows with those replicas
// rather than with the app (the local schedulers: `wick log APP/ROLE/K` of a
// thousand-replica app). The Description's Status holds, of each role, the statuses
// of the replicas of refs only (more is allowed); the rest is Describe's.
type ReplicaDescriber interface {
	DescribeReplicas(ctx context.Context, appID string, refs []ReplicaRef) (*Description, error)
}

// Scheduler launches, observes and stops apps. Every method that blocks takes a
// context. Implementations must be safe for concurrent use.
type Scheduler interface {
	// Name is the registry name, e.g. "local_cwd".
	Name() string
	// RunOpts describes the run options the scheduler accepts.
	RunOpts() spec.RunOpts
	// DryRun plans sub without side effects and returns the request Schedule would
	// submit. The Runner has checked sub: its app validates, its app id and session are
	// valid names, and its Cfg is resolved against RunOpts; DryRun checks only what is
	// its own (images, directories, run option values).
	DryRun(ctx context.Context, sub Submission) (any, error)
	// Schedule submits a planned app and returns once it is launched.
	Schedule(ctx context.Context, info *DryRunInfo, progress Progress) error
	// Describe returns the app's status and definition, or an error wrapping ErrNotFound.
	Describe(ctx context.Context, appID string) (*Description, error)
	// List returns the status of every app this scheduler knows, of every session.
	List(ctx context.Context) ([]spec.AppStatus, error)
	// Cancel asks the app to stop. It may return before the replicas have ended (the
	// local schedulers signal the supervisor, slurm runs scancel) or wait until they
	// are stopped (local_docker stops its containers, each within its stop timeout):
	// callers bound it with ctx and read the outcome with Describe. Cancelling a
	// terminal app does nothing.
	Cancel(ctx context.Context, appID string) error
	// Delete removes what the app left behind (state, logs, containers). A running app
	// is refused with ErrRunning unless force, which cancels it first.
	Delete(ctx context.Context, appID string, force bool) error
	// Logs returns the lines of one replica of a role.
	Logs(ctx context.Context, appID, role string, replica int, opts LogOptions) (LogIterator, error)
	// Close frees what the scheduler holds. It never stops running apps.
	Close() error
}

// Config is what every scheduler factory receives.
type Config struct {
	// Session is the session name in handles.
	Session string
	// StateDir is wick's state directory ($WICK_HOME).
	StateDir string
	// WorkDir is the working directory of the launching command (local_cwd runs replicas
	// there); "" means the process's own.
	WorkDir string
	// Self is the command that runs wick itself (the binary path), for supervisors and
	// hidden helper verbs.
	Self []string
	// Warn, when not nil, receives what a scheduler notices while reading and goes on
	// despite (a damaged log index read around); nil drops it.
	Warn func(msg string)
}

// Factory makes a scheduler.
type Factory func(cfg Config) (Scheduler, error)

// Registry maps scheduler names to factories, in registration order.
type Registry struct {
	names     []string
	factories map[string]Factory
}

// Register adds a scheduler. Registering a name twice replaces the factory.
func (r *Registry) Register(name string, f Factory) {
	if r.factories == nil {
		r.factories = map[string]Factory{}
	}
	if _, ok := r.factories[name]; !ok {
		r.names = append(r.names, name)
	}
	r.factories[name] = f
}

// Names lists the registered schedulers in registration order.
func (r *Registry) Names() []string { return append([]string(nil), r.names...) }

// ErrUnknownScheduler is wrapped when a scheduler name is not registered.
var ErrUnknownScheduler = errors.New("unknown scheduler")

// Factory returns the factory registered under name, or an error that lists the known
// names and suggests the closest.
func (r *Registry) Factory(name string) (Factory, error) {
	if f, ok := r.factories[name]; ok {
		return f, nil
	}
	return nil, fmt.Errorf("%w %q%s; known: %v", ErrUnknownScheduler, name, spec.DidYouMean(name, r.names), r.names)
}

// Timestamp formats t for logs and tables: RFC 3339 with milliseconds, UTC.
func Timestamp(t time.Time) string { return t.UTC().Format("2006-01-02T15:04:05.000Z07:00") }
