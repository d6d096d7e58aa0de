// Package local implements the local_cwd and local_dir schedulers: every replica is a
// process on this machine, owned by a supervisor that outlives the command that
// launched the app.
//
// Schedule writes the app's state directory and starts the supervisor (wick itself,
// re-executed as `wick __supervise DIR`, detached in its own session). The supervisor
// starts the replicas, records their output through pipes into log files (see package
// logs), applies the retry policies, and keeps the app's state on disk. Every other
// method reads that state, so any wick process sees the app: list, status, logs, cancel
// and delete work from another terminal, after the UI quits or after an ssh drop.
//
// On-disk layout, under the scheduler's StateDir ($WICK_HOME):
//
//	local/apps/<app_id>/launch.json     scheduler, session, AppDef, run options, request
//	local/apps/<app_id>/state.json      the app's status, written atomically
//	local/apps/<app_id>/supervisor.log  the supervisor's own messages
//	local/apps/<app_id>/cancel          a cancel asked for before the supervisor ran
//	local/apps/<app_id>/.state.reserve  space kept for the final state (a full disk)
//	local/apps/<app_id>/.state.unsaved  the end of an app whose final state could not
//	                                    be written, and why
//
// and under the log_dir run option (default <StateDir>/logs), in TorchX's layout:
//
//	<log_dir>/<session>/<app_id>/<role>/<replica>/{stdout,stderr,combined}.log
//	<log_dir>/<session>/<app_id>/<role>/<replica>/lines.idx   line times and streams
//	<log_dir>/<session>/<app_id>/<role>/<replica>/error.json  TORCHELASTIC_ERROR_FILE
//	<log_dir>/<session>/<app_id>/SUCCESS                      TorchX's summary at the end
//
// Exit codes: a replica killed by signal N has exit code 128+N, as in a shell and in
// Docker; a replica whose program could not be executed has 127 (not found) or 126
// (any other exec error), with the exec error as its structured error.
//
// Retries: a replica that fails (non-zero exit or exec failure) is restarted while its
// role's max_retries allows, according to the role's retry_policy: REPLICA restarts it
// alone (max_retries per replica); ROLE stops and restarts every replica of the role
// (max_retries restarts of the role); APPLICATION, the default, stops and restarts
// every replica of the app (restarts of the app, counted against the failing role's
// max_retries). Restarted replicas keep their log files; each line records its
// attempt. With no retry left the app is FAILED at once and the other replicas are
// stopped (fail fast; they end CANCELLED). The app is SUCCEEDED when every replica
// exited 0, CANCELLED when cancelled. Stopping is SIGTERM to the replica's process
// group, then SIGKILL after stop_timeout; when a replica's leader exits, what is left
// of its process group is killed, as in a container.
//
// Nothing outlives the supervisor: replicas die with it (Pdeathsig), and a small
// reaper process kills their descendants if the supervisor itself is SIGKILLed (see
// reaper.go). An app whose supervisor is gone without a final state reads FAILED:
// "supervisor could not write its state: WHY (the app had ended STATE; exit codes:
// ...)" when the supervisor ended the app but could not write that (a read-only or
// full state directory), else "supervisor died".
package local

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/wick-dev/wick/engine/alerts"
	"github.com/wick-dev/wick/engine/logs"
	"github.com/wick-dev/wick/engine/sched"
	"github.com/wick-dev/wick/engine/spec"
)

// Scheduler names.
const (
	NameCwd = "local_cwd"
	NameDir = "local_dir"
)

// SuperviseVerb is the hidden verb that runs Supervise: `wick __supervise APP_DIR`.
const SuperviseVerb = "__supervise"

// Run option names.
const (
	OptLogDir      = "log_dir"
	OptPrependCwd  = "prepend_cwd"
	OptAutoCuda    = "auto_set_cuda_visible_devices"
	OptStopTimeout = "stop_timeout"
	OptOnEnd       = "on_end"
)

// DefaultStopTimeout is the seconds a stopping replica gets between SIGTERM and SIGKILL,
// as in TorchX's local scheduler and wick's local_docker.
const DefaultStopTimeout = 10.0

// MaxStopTimeout is the largest stop_timeout accepted (spec.MaxStopTimeout, a day).
const MaxStopTimeout = float64(spec.MaxStopTimeout)

// Scheduler is local_cwd or local_dir. It holds no state of its own beyond a watcher
// for following logs: everything about apps is on disk.
type Scheduler struct {
	name    string
	dir     bool // local_dir: the image is the directory the replica runs in
	cfg     sched.Config
	watcher *logs.Watcher
	// logCache keeps what opening logs reads of an app (see logCache).
	logCache *logCache
	// usage keeps the previous CPU sample of replicas' processes (see Usage).
	usage usageSampler
	// chimes holds, by app id, the bells of the supervisors this process started,
	// until each app's logs end (see chime.go).
	chimes *chimes
}

// NewCwd makes the local_cwd scheduler: replicas run in the working directory of the
// command that launches them, and the image is ignored.
func NewCwd(cfg sched.Config) (sched.Scheduler, error) { return newScheduler(NameCwd, false, cfg) }

// NewDir makes the local_dir scheduler: each role's image must be an absolute path to an
// existing directory; replicas run in it, and relative entrypoints are resolved
// against it.
func NewDir(cfg sched.Config) (sched.Scheduler, error) { return newScheduler(NameDir, true, cfg) }

// Register adds local_cwd and local_dir to r, in that order.
func Register(r *sched.Registry) {
	r.Register(NameCwd, NewCwd)
	r.Register(NameDir, NewDir)
}

func newScheduler(name string, dir bool, cfg sched.Config) (*Scheduler, error) {
	if cfg.StateDir == "" {
		return nil, errors.New("no state directory (set WICK_HOME)")
	}
	if !filepath.IsAbs(cfg.StateDir) {
		abs, err := filepath.Abs(cfg.StateDir)
		if err != nil {
			return nil, fmt.Errorf("state directory: %w", err)
		}
		cfg.StateDir = abs
	}
	if cfg.Session == "" {
		cfg.Session = spec.DefaultSession
	}
	return &Scheduler{name: name, dir: dir, cfg: cfg, watcher: logs.NewWatcher(), logCache: &logCache{}, chimes: &chimes{m: map[string]*chimeEntry{}}}, nil
}

// Name returns "local_cwd" or "local_dir".
func (s *Scheduler) Name() string { return s.name }

// RunOpts lists TorchX's local options (log_dir, prepend_cwd,
// auto_set_cuda_visible_devices) plus stop_timeout.
func (s *Scheduler) RunOpts() spec.RunOpts {
	return spec.RunOpts{
		{Name: OptLogDir, Type: spec.OptString, Default: s.defaultLogDir(),
			Help: "directory for the replicas' log files, laid out as <log_dir>/<session>/<app_id>/<role>/<replica>/{stdout,stderr,combined}.log; kept until `wick delete`"},
		{Name: OptPrependCwd, Type: spec.OptBool, Default: false,
			Help: "put the working directory (local_dir: the image directory) first in the replicas' PATH, so that its programs take precedence over those on PATH; otherwise it comes last"},
		{Name: OptAutoCuda, Type: spec.OptBool, Default: false,
			Help: "set CUDA_VISIBLE_DEVICES for roles that request GPUs, giving each replica its own (counted with nvidia-smi -L); does nothing if there are not enough"},
		{Name: OptStopTimeout, Type: spec.OptFloat, Default: DefaultStopTimeout,
			Help: "seconds a stopping replica (cancel, restart, another replica's failure) gets between SIGTERM to its process group and SIGKILL; 0 to 86400"},
		{Name: OptOnEnd, Type: spec.OptString, Default: "",
			Help: strings.Replace(alerts.OnEndHelp, "a shell command run", "a shell command the app's supervisor runs", 1)},
		{Name: alerts.OptOnAlarm, Type: spec.OptString, Help: alerts.OnAlarmHelp},
	}
}

func (s *Scheduler) defaultLogDir() string { return filepath.Join(s.cfg.StateDir, "logs") }

// appsDir holds one state directory per app, of both local schedulers.
func (s *Scheduler) appsDir() string { return filepath.Join(s.cfg.StateDir, "local", "apps") }

// appDir returns the state directory of an app, after checking that the id cannot
// walk out of the apps directory.
func (s *Scheduler) appDir(appID string) (string, error) {
	if err := spec.ValidateName("app id", appID); err != nil {
		return "", fmt.Errorf("%w: %v", sched.ErrNotFound, err)
	}
	return filepath.Join(s.appsDir(), appID), nil
}

// Close stops listening to the bells of the apps this process started; the apps keep
// running. The watcher releases what it holds when the last log iterator closes.
func (s *Scheduler) Close() error {
	s.chimes.closeAll()
	return nil
}
