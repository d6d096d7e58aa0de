package local

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/wick-dev/wick/engine/logs"
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
}

// RoleRequest is one role's replicas and retry rules.
type RoleRequest struct {
	Name        string           `json:"name"`
	MaxRetries  int              `json:"max_retries"`
	RetryPolicy spec.RetryPolicy `json:"retry_policy"`
	Replicas    []ReplicaRequest `json:"replicas"`
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
	app := sub.App
	if err := app.Validate(); err != nil {
		return nil, err
	}
	if err := spec.ValidateName("app id", sub.AppID); err != nil {
		return nil, err
	}
	session := sub.Session
	if session == "" {
		session = s.cfg.Session
	}
	if err := spec.ValidateName("session", session); err != nil {
		return nil, err
	}
	cfg, err := s.RunOpts().Resolve(sub.Cfg)
	if err != nil {
		return nil, err
	}
	logDir := cfg.String(OptLogDir)
	if logDir == "" {
		logDir = s.defaultLogDir()
	}
	if logDir, err = filepath.Abs(expandHome(logDir)); err != nil {
		return nil, fmt.Errorf("log_dir: %w", err)
	}
	stop := cfg.Float(OptStopTimeout)
	if stop < 0 {
		return nil, fmt.Errorf("%w: %s must not be negative (got %g)", spec.ErrInvalidRunOpt, OptStopTimeout, stop)
	}
	cwd := s.cfg.WorkDir
	if cwd == "" {
		if cwd, err = os.Getwd(); err != nil {
			return nil, fmt.Errorf("working directory: %w", err)
		}
	}
	appLogDir := filepath.Join(logDir, session, sub.AppID)
	if err := checkLogDir(appLogDir); err != nil {
		return nil, err
	}
	req := &Request{
		AppID:       sub.AppID,
		Session:     session,
		LogDir:      appLogDir,
		StateDir:    filepath.Join(s.appsDir(), sub.AppID),
		StopTimeout: stop,
	}
	gpus, warn := assignGPUs(ctx, app, cfg.Bool(OptAutoCuda))
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
			// TorchX puts the working directory on PATH. The seed's help says
			// prepend_cwd makes it take precedence over PATH, so without it, it
			// comes after the inherited PATH (TorchX put it before, by accident).
			if cfg.Bool(OptPrependCwd) {
				env["PATH"] = joinPath(imgRoot, env["PATH"], parentPath)
			} else {
				env["PATH"] = joinPath(env["PATH"], parentPath, imgRoot)
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
				Argv:     append([]string{entry}, r.Args...),
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

// checkLogDir tells, without creating anything, whether the app's log directory can
// be created: its nearest existing ancestor must be a writable directory, and it must
// not exist yet.
func checkLogDir(appLogDir string) error {
	if _, err := os.Lstat(appLogDir); err == nil {
		return fmt.Errorf("log directory %s already exists", appLogDir)
	}
	for p := filepath.Dir(appLogDir); ; p = filepath.Dir(p) {
		st, err := os.Stat(p)
		if errors.Is(err, fs.ErrNotExist) && p != filepath.Dir(p) {
			continue
		}
		if err != nil {
			return fmt.Errorf("log directory %s cannot be created: %w", appLogDir, err)
		}
		if !st.IsDir() {
			return fmt.Errorf("log directory %s cannot be created: %s is not a directory", appLogDir, p)
		}
		if err := unix.Access(p, unix.W_OK|unix.X_OK); err != nil {
			return fmt.Errorf("log directory %s cannot be created: %s is not writable (%v)", appLogDir, p, err)
		}
		return nil
	}
}

// assignGPUs hands out CUDA_VISIBLE_DEVICES as TorchX does: consecutive ranges of
// resource.gpu devices per replica, roles and replicas in order, when the option is on
// and there are enough GPUs. It returns role -> replica -> value, and a warning.
func assignGPUs(ctx context.Context, app *spec.AppDef, auto bool) (map[string][]string, string) {
	want := 0
	for _, r := range app.Roles {
		if r.Resource.GPU > 0 {
			want += r.NumReplicas * r.Resource.GPU
		}
	}
	if want == 0 {
		return nil, ""
	}
	if !auto {
		return nil, fmt.Sprintf("the app asks for %d GPUs but %s is off: replicas may share GPUs (-cfg %s=true gives each its own)", want, OptAutoCuda, OptAutoCuda)
	}
	have := countGPUs(ctx)
	if have < want {
		return nil, fmt.Sprintf("the app asks for %d GPUs but %d were found (nvidia-smi -L): CUDA_VISIBLE_DEVICES is not set", want, have)
	}
	out := map[string][]string{}
	next := 0
	for _, r := range app.Roles {
		if r.Resource.GPU <= 0 {
			continue
		}
		for range r.NumReplicas {
			ids := make([]string, r.Resource.GPU)
			for i := range ids {
				ids[i] = strconv.Itoa(next)
				next++
			}
			out[r.Name] = append(out[r.Name], strings.Join(ids, ","))
		}
	}
	return out, ""
}

// countGPUs counts the lines of `nvidia-smi -L`: zero when it is missing or fails.
func countGPUs(ctx context.Context) int {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, "nvidia-smi", "-L").Output()
	if err != nil {
		return 0
	}
	n := 0
	for _, line := range bytes.Split(out, []byte{'\n'}) {
		if len(bytes.TrimSpace(line)) > 0 {
			n++
		}
	}
	return n
}
