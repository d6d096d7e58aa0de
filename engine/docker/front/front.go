// Package front is local_docker as wick itself sees it: its name, its run options and
// its registration. The scheduler (engine/docker, on the Docker SDK) runs in the
// helper wick-docker, which wick starts on the first call that needs the Engine and
// talks to over its stdin and stdout (engine/kubernetes/remote), as it does
// wick-kubernetes: a program that links the SDK runs its package initialisers at every
// start (the regular expressions of distribution/reference and go-digest alone are
// 1.4 ms of a 6 ms `wick status` on a quiet machine), and wick's verbs for local apps,
// its supervisors and its queues need no Engine.
package front

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"

	"github.com/wick-dev/wick/engine/alerts"
	"github.com/wick-dev/wick/engine/kubernetes/remote"
	"github.com/wick-dev/wick/engine/sched"
	"github.com/wick-dev/wick/engine/spec"
)

// Name is the scheduler's registry name.
const Name = "local_docker"

// Helper is the name of the helper binary in which local_docker runs, which `make
// build` puts beside wick.
const Helper = "wick-docker"

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

// RunOpts lists the options of local_docker: TorchX's (copy_env, env, privileged,
// image_repo, quiet) plus network, shm_size, publish_ports, log_opts and stop_timeout,
// and the commands of engine/alerts (on_end, on_alarm).
func RunOpts() spec.RunOpts {
	return append(spec.RunOpts{
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
	}, alerts.RunOpts()...)
}

// Register adds local_docker to r, as a client of its helper.
func Register(r *sched.Registry) { r.Register(Name, New) }

// New makes the local_docker scheduler of wick: a client of the helper found beside
// wick's own binary (cfg.Self), else on PATH. It starts nothing.
func New(cfg sched.Config) (sched.Scheduler, error) {
	if cfg.Session == "" {
		cfg.Session = spec.DefaultSession
	}
	if cfg.StateDir != "" && !filepath.IsAbs(cfg.StateDir) {
		abs, err := filepath.Abs(cfg.StateDir)
		if err != nil {
			return nil, fmt.Errorf("state dir: %w", err)
		}
		cfg.StateDir = abs
	}
	c := remote.NewClient(Name, RunOpts(), cfg, func() ([]string, error) {
		path, err := findHelper(cfg.Self)
		if err != nil {
			return nil, err
		}
		return remote.HelperArgs(path, cfg), nil
	}, nil)
	return &scheduler{c}, nil
}

// scheduler is the helper's client with the capabilities of engine/docker's
// scheduler: kill, usage, host PIDs and exec.
type scheduler struct{ *remote.Client }

func (s *scheduler) Kill(ctx context.Context, appID string) error {
	return remote.Kill(ctx, s.Client, appID)
}

func (s *scheduler) Usage(ctx context.Context, appID string) (map[sched.ReplicaKey]sched.Usage, error) {
	return remote.Usage(ctx, s.Client, appID)
}

func (s *scheduler) HostPIDs(ctx context.Context, appID string) (map[sched.ReplicaKey]int, error) {
	return remote.HostPIDs(ctx, s.Client, appID)
}

func (s *scheduler) Exec(ctx context.Context, appID, role string, k int, req sched.ExecRequest) (sched.Command, error) {
	return remote.Exec(ctx, s.Client, appID, role, k, req)
}

// findHelper looks for the helper beside the wick binary self[0], then on PATH.
func findHelper(self []string) (string, error) {
	var beside string
	if len(self) > 0 && self[0] != "" {
		beside = filepath.Join(filepath.Dir(self[0]), Helper)
		if st, err := os.Stat(beside); err == nil && !st.IsDir() {
			return beside, nil
		}
	}
	if path, err := exec.LookPath(Helper); err == nil {
		return path, nil
	}
	where := "on PATH"
	if beside != "" {
		where = "at " + beside + " nor on PATH"
	}
	return "", errors.New("wick runs its Docker client in the helper " + Helper + ", which is not " + where + ": `make build` builds it beside wick (go install github.com/wick-dev/wick/cmd/" + Helper + " installs it on its own)")
}
