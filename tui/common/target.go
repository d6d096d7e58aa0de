package common

import (
	"path/filepath"
	"strconv"

	"github.com/wick-dev/wick/engine/spec"
)

// Target is what a user command of config.toml acts on: an app, and the replica the
// view has selected (the wall's focused pane) or, from the app list, its first one.
type Target struct {
	Handle spec.Handle
	// Replica is the replica's status; its zero value (no Role) when none is known.
	Replica spec.ReplicaStatus
	// Rank is the global rank of a torchrun worker's pane, else -1.
	Rank int
}

// Targeter is a view that has a target for user commands.
type Targeter interface {
	Target() (Target, bool)
}

// Env is the target in WICK_* variables for a user command: WICK_HANDLE,
// WICK_APP_ID, WICK_SCHEDULER, WICK_SESSION, and where a replica is known
// WICK_ROLE, WICK_REPLICA, WICK_LOG_DIR (the replica's) and WICK_APP_LOG_DIR (the
// app's, TorchX's <log_dir>/<session>/<app_id>), WICK_HOST, WICK_PID,
// WICK_CONTAINER, and WICK_RANK for a rank's pane.
func (t Target) Env() []string {
	env := []string{
		"WICK_HANDLE=" + t.Handle.String(),
		"WICK_APP_ID=" + t.Handle.AppID,
		"WICK_SCHEDULER=" + t.Handle.Scheduler,
		"WICK_SESSION=" + t.Handle.Session,
	}
	r := t.Replica
	if r.Role == "" {
		return env
	}
	env = append(env, "WICK_ROLE="+r.Role, "WICK_REPLICA="+strconv.Itoa(r.ID))
	if r.LogDir != "" {
		env = append(env, "WICK_LOG_DIR="+r.LogDir, "WICK_APP_LOG_DIR="+filepath.Dir(filepath.Dir(r.LogDir)))
	}
	host := r.Hostname
	if host == "" && t.Handle.Scheduler != "slurm" && t.Handle.Scheduler != "kubernetes" {
		host = "localhost"
	}
	if host != "" {
		env = append(env, "WICK_HOST="+host)
	}
	if r.PID > 0 {
		env = append(env, "WICK_PID="+strconv.Itoa(r.PID))
	}
	if r.ContainerID != "" {
		env = append(env, "WICK_CONTAINER="+r.ContainerID)
	}
	if t.Rank >= 0 {
		env = append(env, "WICK_RANK="+strconv.Itoa(t.Rank))
	}
	return env
}
