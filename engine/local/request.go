package local

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/wick-dev/wick/engine/alerts"
	"github.com/wick-dev/wick/engine/gpus"
	"github.com/wick-dev/wick/engine/logs"
	"github.com/wick-dev/wick/engine/safefs"
	"github.com/wick-dev/wick/engine/sched"
	"github.com/wick-dev/wick/engine/spec"
)

// Env vars wick sets in every replica, besides TorchX's.
const (
	EnvAppID     = "WICK_APP_ID"
	EnvRole      = "WICK_ROLE"
	EnvReplicaID = "WICK_REPLICA_ID"
)

// TorchX's env vars set by the local scheduler.
const (
	envErrorFile   = "TORCHELASTIC_ERROR_FILE"
	envPetLogDir   = "PET_LOG_DIR"
	envUnbuffered  = "PYTHONUNBUFFERED"
	envCudaDevices = "CUDA_VISIBLE_DEVICES"
)

// errorFileName is the torchelastic error file in each replica's log directory.
const errorFileName = "error.json"

// Request is what local_cwd and local_dir submit: every replica's command line,
// environment, working directory and log files. The supervisor runs exactly this.
type Request struct {
	AppID   string `json:"app_id"`
	Session string `json:"session"`
	// LogDir is the app's log directory, <log_dir>/<session>/<app_id>.
	LogDir string `json:"log_dir"`
	// StateDir is the app's state directory.
	StateDir string `json:"state_dir"`
	// StopTimeout is the seconds between SIGTERM and SIGKILL when stopping a replica.
	StopTimeout float64       `json:"stop_timeout"`
	Roles       []RoleRequest `json:"roles"`
	// Warnings are things the user should know before launching (GPUs that cannot be
	// assigned).
	Warnings []string `json:"warnings,omitempty"`
	// Devices are the GPUs handed to the replicas (a sweep's pool, or those
	// auto_set_cuda_visible_devices chose), leased to the app machine-wide at launch
	// until it ends (devlease.go).
	Devices []string `json:"devices,omitempty"`
	// OnEnd is the on_end run option: a shell command the supervisor runs when the
	// app ends (onend.go).
	OnEnd string `json:"on_end,omitempty"`
}

// RoleRequest is one role's replicas and retry rules.
type RoleRequest struct {
	Name        string           `json:"name"`
	MaxRetries  int              `json:"max_retries"`
	RetryPolicy spec.RetryPolicy `json:"retry_policy"`
	// RdzvPort is the rendezvous port chosen for a multi-node torchrun role on the
	// default one (reserved at launch until the app ends), or 0.
	RdzvPort int              `json:"rdzv_port,omitempty"`
	Replicas []ReplicaRequest `json:"replicas"`
}

// ReplicaRequest is one replica's process.
type ReplicaRequest struct {
	ID int `json:"id"`
	// Argv is the entrypoint and its arguments, macros substituted. A bare entrypoint is
	// looked up in the PATH of Env when the replica starts.
	Argv []string `json:"argv"`
	// Env is what the replica gets on top of the supervisor's environment (which is
	// the launching command's): the role's env after macros plus the scheduler's.
	Env      map[string]string `json:"env"`
	Cwd      string            `json:"cwd"`
	LogDir   string            `json:"log_dir"`
	Stdout   string            `json:"stdout"`
	Stderr   string            `json:"stderr"`
	Combined string            `json:"combined"`
}

// replicas counts the replicas of the request.
func (r *Request) replicas() int {
	n := 0
	for _, role := range r.Roles {
		n += len(role.Replicas)
	}
	return n
}

// DryRun plans sub: it checks the app, the images (local_dir) and the log directory,
// and returns a *Request. It creates nothing.
func (s *Scheduler) DryRun(ctx context.Context, sub sched.Submission) (any, error) {
	return s.plan(ctx, sub)
}

func (s *Scheduler) plan(ctx context.Context, sub sched.Submission) (*Request, error) {
	if sub.App == nil {
		return nil, errors.New("no app to plan")
	}
	// The Runner has validated the app and the names and resolved the run options
	// (sched.Scheduler.DryRun).
	app, cfg := sub.App, sub.Cfg
	session := sub.Session // the Runner's (sched.Submission)
	var err error
	logDir := cfg.String(OptLogDir)
	if logDir == "" {
		logDir = s.defaultLogDir()
	}
	if logDir, err = filepath.Abs(expandHome(logDir)); err != nil {
		return nil, fmt.Errorf("log_dir: %w", err)
	}
	// Symbolic links are resolved once, here: below, the log directories are created
	// and opened following none.
	if logDir, err = safefs.Resolve(logDir); err != nil {
		return nil, fmt.Errorf("log_dir: %w", err)
	}
	stop := cfg.Float(OptStopTimeout)
	if stop < 0 || stop > MaxStopTimeout || math.IsNaN(stop) {
		return nil, fmt.Errorf("%w: %s must be between 0 and %g seconds (got %g)", spec.ErrInvalidRunOpt, OptStopTimeout, MaxStopTimeout, stop)
	}
	if err := checkFDBudget(app); err != nil {
		return nil, err
	}
	cwd := s.cfg.WorkDir
	if cwd == "" {
		if cwd, err = os.Getwd(); err != nil {
			return nil, fmt.Errorf("working directory: %w", err)
		}
	}
	appLogDir := filepath.Join(logDir, session, sub.AppID)
	stateDir := filepath.Join(s.appsDir(), sub.AppID)
	if err := checkLogDir(appLogDir, stateDir); err != nil {
		return nil, err
	}
	req := &Request{
		AppID:       sub.AppID,
		Session:     session,
		LogDir:      appLogDir,
		StateDir:    stateDir,
		StopTimeout: stop,
		OnEnd:       cfg.String(OptOnEnd),
	}
	if err := alerts.CheckCfg(cfg); err != nil {
		return nil, err
	}
	gpus, devs, warn, err := s.assignGPUs(ctx, sub.AppID, app, cfg.Bool(OptAutoCuda), sub.Devices)
	if err != nil {
		return nil, err
	}
	req.Devices = devs
	if warn != "" {
		req.Warnings = append(req.Warnings, warn)
	}
	parentPath := os.Getenv("PATH")
	_, parentUnbuffered := os.LookupEnv(envUnbuffered)
	for _, role := range app.Roles {
		imgRoot := cwd
		if s.dir {
			if imgRoot, err = imageDir(role); err != nil {
				return nil, err
			}
		}
		rr := RoleRequest{Name: role.Name, MaxRetries: role.MaxRetries, RetryPolicy: role.RetryPolicy}
		port := s.rendezvousPort(sub.AppID, role) // rdzvport.go
		rr.RdzvPort = port
		if rr.RetryPolicy == "" {
			rr.RetryPolicy = spec.RetryApplication
		}
		for k := range role.NumReplicas {
			m := spec.Macros{AppID: sub.AppID, ReplicaID: strconv.Itoa(k), ImgRoot: imgRoot, Rank0Env: spec.Rank0Env}
			r := m.Apply(role)
			dir := filepath.Join(appLogDir, role.Name, strconv.Itoa(k))
			env := r.Env
			if env == nil {
				env = map[string]string{}
			}
			env[spec.Rank0Env] = "localhost"
			setDefault(env, envErrorFile, filepath.Join(dir, errorFileName))
			setDefault(env, envPetLogDir, filepath.Join(appLogDir, "torchelastic", role.Name))
			if !parentUnbuffered {
				setDefault(env, envUnbuffered, "x")
			}
			// TorchX puts the working directory on PATH (local_scheduler.py
			// _to_popen_request: the role's PATH, then cwd, unless prepend_cwd puts
			// cwd first; _get_replica_env then appends the inherited PATH): so the
			// working directory comes before the inherited PATH either way, and a
			// ./train in the project runs rather than a train elsewhere on PATH.
			if cfg.Bool(OptPrependCwd) {
				env["PATH"] = joinPath(imgRoot, env["PATH"], parentPath)
			} else {
				env["PATH"] = joinPath(env["PATH"], imgRoot, parentPath)
			}
			if g := gpus[role.Name]; g != nil {
				env[envCudaDevices] = g[k]
			}
			env[EnvAppID] = sub.AppID
			env[EnvRole] = role.Name
			env[EnvReplicaID] = strconv.Itoa(k)
			entry := role.Entrypoint
			if s.dir {
				entry = resolveInDir(imgRoot, entry)
			}
			rr.Replicas = append(rr.Replicas, ReplicaRequest{
				ID:       k,
				Argv:     argvWithPort(append([]string{entry}, r.Args...), port),
				Env:      env,
				Cwd:      imgRoot,
				LogDir:   dir,
				Stdout:   filepath.Join(dir, logs.StdoutFile),
				Stderr:   filepath.Join(dir, logs.StderrFile),
				Combined: filepath.Join(dir, logs.CombinedFile),
			})
		}
		req.Roles = append(req.Roles, rr)
	}
	return req, nil
}

func setDefault(env map[string]string, k, v string) {
	if _, ok := env[k]; !ok {
		env[k] = v
	}
}

// joinPath joins PATH lists, skipping empty ones.
func joinPath(parts ...string) string {
	var keep []string
	for _, p := range parts {
		if p != "" {
			keep = append(keep, p)
		}
	}
	return strings.Join(keep, string(filepath.ListSeparator))
}

func expandHome(p string) string {
	if p == "~" || strings.HasPrefix(p, "~/") {
		if home, err := os.UserHomeDir(); err == nil {
			return filepath.Join(home, p[1:])
		}
	}
	return p
}

// imageDir checks a local_dir image: an absolute path to an existing directory.
func imageDir(role spec.Role) (string, error) {
	bad := func(why string) error {
		return fmt.Errorf("role %q: image %q %s (local_dir runs replicas in the directory named by the image)", role.Name, role.Image, why)
	}
	if role.Image == "" {
		return "", bad("is empty")
	}
	if !filepath.IsAbs(role.Image) {
		return "", bad("is not an absolute path")
	}
	st, err := os.Stat(role.Image)
	if err != nil {
		return "", bad("does not exist")
	}
	if !st.IsDir() {
		return "", bad("is not a directory")
	}
	return filepath.Clean(role.Image), nil
}

// resolveInDir resolves a relative entrypoint against a local_dir image: a path with
// a slash always; a bare name when the directory holds an executable of that name (a
// bare name it does not hold, such as python, is looked up on PATH).
func resolveInDir(dir, entry string) string {
	if filepath.IsAbs(entry) {
		return entry
	}
	if strings.ContainsRune(entry, '/') {
		return filepath.Join(dir, entry)
	}
	if p := filepath.Join(dir, entry); isExecutable(p) {
		return p
	}
	return entry
}

func isExecutable(path string) bool {
	st, err := os.Stat(path)
	return err == nil && st.Mode().IsRegular() && unix.Access(path, unix.X_OK) == nil
}

// fdsPerReplica is what one replica costs the supervisor in open files: four log files
// and the two pipe read ends it keeps, plus the write ends it holds while forking
// (measured: about 6 a replica at rest).
const fdsPerReplica = 8

// fdReserve is the supervisor's own files: state, logs, the reaper, the runtime.
const fdReserve = 64

// checkFDBudget refuses, before anything starts, an app whose replicas would run the
// supervisor out of file descriptors half way through starting them. The supervisor
// raises its soft limit to the hard one (Go does at start), so the hard limit counts.
func checkFDBudget(app *spec.AppDef) error {
	n := 0
	for _, r := range app.Roles {
		n += r.NumReplicas
	}
	var rl unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_NOFILE, &rl); err != nil || rl.Max == unix.RLIM_INFINITY {
		return nil
	}
	return fdBudget(n, rl.Max)
}

// fdBudget checks n replicas against a limit of open files.
func fdBudget(n int, limit uint64) error {
	need := uint64(n)*fdsPerReplica + fdReserve
	if need > limit {
		fit := (limit - min(limit, fdReserve)) / fdsPerReplica
		return fmt.Errorf("%w: %d replicas need about %d open files, more than the limit of %d (ulimit -Hn): at most %d fit", spec.ErrReplicaBudget, n, need, limit, fit)
	}
	return nil
}

// checkLogDir tells, without creating anything, whether the app's log directory can
// be created: it must not exist yet (unless a launch of the app cut short left it:
// cutShort), every existing directory above it must be safe from other users (owned
// by root or us, and writable by nobody else unless sticky: see package safefs), and
// the nearest one must be writable.
func checkLogDir(appLogDir, appDir string) error {
	if _, err := os.Lstat(appLogDir); err == nil && !cutShort(appLogDir, appDir) {
		return fmt.Errorf("log directory %s already exists", appLogDir)
	}
	if err := safefs.CheckPath(appLogDir); err != nil {
		return fmt.Errorf("log directory %s cannot be created: %w", appLogDir, err)
	}
	return nil
}

// assignGPUs decides each replica's CUDA_VISIBLE_DEVICES; it returns role -> replica
// -> value, the devices handed out (leased to the app at launch), and a warning. An
// app given its pool (sched.Submission.Devices: a sweep's queue chose them) hands it
// out whatever the option says, every replica its own slice (gpus.Replicas), and it
// is an error when the pool is too small, or when another running app of this
// machine holds one of its devices (a *gpus.BusyError: the queue waits). Otherwise,
// with auto_set_cuda_visible_devices on, it does as TorchX does over this machine's
// pool (gpus.Pool: the entries of the launcher's CUDA_VISIBLE_DEVICES, else the GPUs
// nvidia-smi lists) less the devices running apps hold: consecutive ranges of
// resource.gpu devices per replica of the roles that ask for GPUs, roles and
// replicas in order. Too few devices on the machine is a warning, as in TorchX; too
// few free ones an error naming who holds them.
func (s *Scheduler) assignGPUs(ctx context.Context, appID string, app *spec.AppDef, auto bool, given []string) (map[string][]string, []string, string, error) {
	if len(given) > 0 {
		parts, err := gpus.Replicas(app, given)
		if err != nil {
			return nil, nil, "", fmt.Errorf("%w: %w", spec.ErrInvalidRunOpt, err)
		}
		if err := s.leases().Busy(appID, given); err != nil {
			return nil, nil, "", err
		}
		out := make(map[string][]string, len(parts))
		for role, reps := range parts {
			for _, devs := range reps {
				out[role] = append(out[role], strings.Join(devs, ","))
			}
		}
		return out, given, "", nil
	}
	want := 0
	var need []int
	for _, r := range app.Roles {
		if r.Resource.GPU > 0 {
			want += r.NumReplicas * r.Resource.GPU
			for range r.NumReplicas {
				need = append(need, r.Resource.GPU)
			}
		}
	}
	if want == 0 {
		return nil, nil, "", nil
	}
	if !auto {
		return nil, nil, fmt.Sprintf("the app asks for %d GPUs but %s is off: replicas may share GPUs (-cfg %s=true gives each its own)", want, OptAutoCuda, OptAutoCuda), nil
	}
	pool := gpus.Pool(ctx)
	if _, ok := gpus.Split(pool, need); !ok {
		return nil, nil, fmt.Sprintf("the app asks for %d GPUs but %d were found (%s, else nvidia-smi): CUDA_VISIBLE_DEVICES is not set", want, len(pool), gpus.EnvVisible), nil
	}
	free := s.leases().Free(pool)
	parts, ok := gpus.Split(free, need)
	if !ok {
		return nil, nil, "", fmt.Errorf("the app asks for %d GPUs and %d of this machine's %d are free (%s=true gives each replica its own; wait for those apps to end): %w",
			want, len(free), len(pool), OptAutoCuda, s.leases().Busy(appID, pool))
	}
	out := map[string][]string{}
	var devs []string
	i := 0
	for _, r := range app.Roles {
		if r.Resource.GPU <= 0 {
			continue
		}
		for range r.NumReplicas {
			out[r.Name] = append(out[r.Name], strings.Join(parts[i], ","))
			devs = append(devs, parts[i]...)
			i++
		}
	}
	return out, devs, "", nil
}

// cutShort says whether the app's log directory is what a launch of it killed before
// it wrote the app's state left behind (kill -9 of a sweep's queue, which then
// launches the app again when resumed): no state file (without it the app does not
// exist: Describe says not found), and in the log directory nothing but the empty
// directories of roles and replicas. Anything else is refused as another app's.
func cutShort(logDir, appDir string) bool {
	if _, err := os.Lstat(filepath.Join(appDir, stateFile)); !errors.Is(err, fs.ErrNotExist) {
		return false
	}
	_, ok := emptyTree(logDir)
	return ok
}

// emptyTree lists the directories of logDir (itself, its roles', their replicas'),
// deepest last, and says whether that is all it holds: no file, no link, nothing in
// a replica's directory.
func emptyTree(logDir string) ([]string, bool) {
	dirs := []string{logDir}
	for depth, level := 0, []string{logDir}; len(level) > 0; depth++ {
		var next []string
		for _, d := range level {
			ents, err := os.ReadDir(d)
			if err != nil || (depth == 2 && len(ents) > 0) {
				return nil, false
			}
			for _, e := range ents {
				if !e.IsDir() || len(dirs) > maxCutShortDirs {
					return nil, false
				}
				next = append(next, filepath.Join(d, e.Name()))
			}
		}
		dirs = append(dirs, next...)
		level = next
	}
	return dirs, true
}

// maxCutShortDirs bounds the directories emptyTree reads: more than an app's replicas.
const maxCutShortDirs = 1 << 16

// removeCutShort removes what a launch cut short left (cutShort), deepest first; a
// directory that is no longer empty stops it.
func removeCutShort(logDir string) error {
	dirs, ok := emptyTree(logDir)
	if !ok {
		return fmt.Errorf("log directory %s already exists", logDir)
	}
	for i := len(dirs) - 1; i >= 0; i-- {
		if err := os.Remove(dirs[i]); err != nil {
			return err
		}
	}
	return nil
}
