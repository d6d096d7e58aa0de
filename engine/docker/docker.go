// Package docker is wick's local_docker scheduler: every replica of an AppDef runs as a
// container on the Docker Engine, on a user-defined bridge network where replicas reach
// each other by name.
//
// The scheduler keeps no state of its own: every container carries labels (app id, role,
// replica, session, wick version and the submitted AppDef), so that describe, list, logs,
// cancel and delete work from any process that reaches the same Engine. It talks to the
// Engine through engine/docker/dockerapi, negotiating the API version down to Engine
// 20.10 (API 1.41).
package docker

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/wick-dev/wick/engine/docker/dockerapi"
	"github.com/wick-dev/wick/engine/sched"
	"github.com/wick-dev/wick/engine/spec"
)

// Name is the scheduler's registry name.
const Name = "local_docker"

// Label keys set on every container wick creates. The dev.wick.* keys are what wick
// reads back; the torchx.pytorch.org/* keys are TorchX's, so that torchx's own tools
// recognise the containers too.
const (
	LabelAppID     = "dev.wick.app-id"
	LabelRole      = "dev.wick.role"
	LabelReplicaID = "dev.wick.replica-id"
	LabelSession   = "dev.wick.session"
	LabelVersion   = "dev.wick.version"
	// LabelApp holds the submitted AppDef, run options and workspace as JSON. It is
	// left out of the dry run's printout.
	LabelApp = "dev.wick.app"
	// LabelHome identifies the WICK_HOME that launched the app (see homeID): a shared
	// Engine holds other homes' and users' apps, which lists leave out by default.
	LabelHome = "dev.wick.home"
	// LabelManaged marks networks and workspace images wick created.
	LabelManaged = "dev.wick.managed"

	LabelTorchXVersion   = "torchx.pytorch.org/version"
	LabelTorchXAppID     = "torchx.pytorch.org/app-id"
	LabelTorchXRoleName  = "torchx.pytorch.org/role-name"
	LabelTorchXReplicaID = "torchx.pytorch.org/replica-id"
)

// Run option names.
const (
	OptCopyEnv     = "copy_env"
	OptEnv         = "env"
	OptPrivileged  = "privileged"
	OptImageRepo   = "image_repo"
	OptNetwork     = "network"
	OptShmSize     = "shm_size"
	OptQuiet       = "quiet"
	OptStopTimeout = "stop_timeout"
	// OptPublishPorts publishes port_map on the host's loopback address.
	OptPublishPorts = "publish_ports"
	// OptLogOpts are options of the containers' json-file log.
	OptLogOpts = "log_opts"
)

// Defaults of the run options.
const (
	DefaultNetwork     = "wick"
	DefaultStopTimeout = 10
	// DefaultImageRepo names workspace images when image_repo is not set.
	DefaultImageRepo = "wick-workspace"
)

// ErrUnreachable is wrapped when the Docker Engine cannot be reached.
var ErrUnreachable = errors.New("cannot reach the Docker Engine")

// Scheduler is the local_docker scheduler. It is safe for concurrent use.
type Scheduler struct {
	cfg sched.Config

	mu     sync.Mutex // guards cli and pinged
	cli    *dockerapi.Client
	pinged bool

	errs errorCache
	// failures remembers what stopped torchrun nodes wrote of their failure.
	failures failuresCache
	// stats keeps containers' previous CPU samples (see Usage).
	stats statsCache
	// cleanupTimeout replaces the package's when set (tests of a rollback that
	// cannot finish).
	cleanupTimeout time.Duration
}

// New makes the local_docker scheduler. It does not contact the Engine: the first call
// that needs it connects, negotiating the API version.
func New(cfg sched.Config) (sched.Scheduler, error) {
	if cfg.Session == "" {
		cfg.Session = spec.DefaultSession
	}
	return &Scheduler{cfg: cfg}, nil
}

// Name returns "local_docker".
func (s *Scheduler) Name() string { return Name }

// RunOpts lists the options of local_docker: TorchX's (copy_env, env, privileged,
// image_repo, quiet) plus network, shm_size, publish_ports, log_opts and stop_timeout.
func (s *Scheduler) RunOpts() spec.RunOpts {
	return spec.RunOpts{
		{Name: OptCopyEnv, Type: spec.OptList, Help: "glob patterns (fnmatch) of host environment variables to copy into the containers, e.g. FOO_*,AWS_*"},
		{Name: OptEnv, Type: spec.OptMap, Help: "environment variables to set in every container, written K1:v1,K2:v2 (applied after copy_env, before the role's env)"},
		{Name: OptPrivileged, Type: spec.OptBool, Default: false, Help: "run the containers privileged (docker run --privileged)"},
		{Name: OptImageRepo, Type: spec.OptString, Help: "repository of the images built from a workspace (default " + DefaultImageRepo + "); they are tagged by content"},
		{Name: OptNetwork, Type: spec.OptString, Default: DefaultNetwork, Help: "user-defined bridge network the containers join (created when missing); replicas reach each other by container name on it"},
		{Name: OptShmSize, Type: spec.OptString, Help: "size of /dev/shm in each container, e.g. 2g or 512m (default: the role's memMB, as in TorchX; without one, the Engine's 64m)"},
		{Name: OptPublishPorts, Type: spec.OptBool, Default: false, Help: "publish each role's port_map on the host's 127.0.0.1 (replica 0 on the port itself, others on ephemeral ports); off, replicas reach each other by name on the network only, as in TorchX"},
		{Name: OptLogOpts, Type: spec.OptMap, Help: "options of the containers' json-file log, written max-size:100m,max-file:3 (default: none, and the log is never rotated, so that every line stays readable until the app is deleted; the Engine's follow skips and repeats lines where it rotates a log)"},
		{Name: OptQuiet, Type: spec.OptBool, Default: false, Help: "do not report the steps of workspace image builds"},
		{Name: OptStopTimeout, Type: spec.OptInt, Default: DefaultStopTimeout, Help: "seconds a cancelled replica gets between SIGTERM and SIGKILL; 0 to 86400"},
	}
}

// Close releases the Engine connection. Running containers are left alone.
func (s *Scheduler) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cli == nil {
		return nil
	}
	err := s.cli.Close()
	s.cli, s.pinged = nil, false
	return err
}

// engine returns a client that has reached the Engine once, connecting on first use.
func (s *Scheduler) engine(ctx context.Context) (*dockerapi.Client, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cli == nil {
		cli, err := dockerapi.FromEnv()
		if err != nil {
			return nil, fmt.Errorf("%w: DOCKER_HOST=%q: %v", ErrUnreachable, os.Getenv(dockerapi.EnvHost), err)
		}
		s.cli = cli
	}
	if !s.pinged {
		if err := s.cli.Ping(ctx); err != nil {
			return nil, s.engineErr(err)
		}
		s.pinged = true
	}
	return s.cli, nil
}

// engineErr turns a failure to reach the Engine into one line naming the socket or
// DOCKER_HOST; other errors are returned as they are.
func (s *Scheduler) engineErr(err error) error {
	if err == nil || !errors.Is(err, dockerapi.ErrUnreachable) && !isDialError(err) {
		return err
	}
	// The client takes its host from DOCKER_HOST, else the default.
	host := os.Getenv(dockerapi.EnvHost)
	fromEnv := host != ""
	if !fromEnv {
		host = dockerapi.DefaultHost
	}
	why := strings.Join(strings.Fields(rootCause(err)), " ")
	if network, addr, perr := dockerapi.ParseHost(host); perr == nil && network == "unix" {
		where := "socket " + addr
		if fromEnv {
			where = "DOCKER_HOST=" + host
		}
		if _, serr := os.Stat(addr); errors.Is(serr, os.ErrNotExist) {
			why = "the socket does not exist (is Docker running?)"
			if !fromEnv {
				return fmt.Errorf("%w: socket %s does not exist (is Docker running? set DOCKER_HOST to use another Engine)", ErrUnreachable, addr)
			}
		} else if strings.Contains(why, "connection refused") {
			why = "nothing answers there (is Docker running?)"
		}
		if !fromEnv {
			return fmt.Errorf("%w at %s: %s (set DOCKER_HOST to use another Engine)", ErrUnreachable, where, why)
		}
		return fmt.Errorf("%w at %s: %s", ErrUnreachable, where, why)
	}
	return fmt.Errorf("%w at DOCKER_HOST=%s: %s", ErrUnreachable, host, why)
}

func isDialError(err error) bool {
	var uerr *url.Error
	return errors.As(err, &uerr) && strings.Contains(uerr.Error(), "dial")
}

// rootCause returns the innermost message of a chain, which is the useful part of the
// client's connection errors ("connect: permission denied").
func rootCause(err error) string {
	for {
		next := errors.Unwrap(err)
		if next == nil {
			return err.Error()
		}
		err = next
	}
}

// version is wick's version, for labels.
func version() string { return spec.Version }
