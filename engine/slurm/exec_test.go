package slurm

import (
	"bytes"
	"context"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/wick-dev/wick/internal/testkit"
)

// startWith starts a process that sleeps in dir with exactly env, ended at cleanup.
func startWith(t *testing.T, dir string, env ...string) {
	t.Helper()
	cmd := exec.Command("sleep", "120")
	cmd.Dir, cmd.Env = dir, env
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
}

// TestFindReplicaScript: the first step of wick exec, run as srun runs it on the node
// (here, on this machine), prints the working directory and environment of the
// replica's process. It is found by its app, role and replica id together; a peer
// replica, another app's replica of the same id, and this step's own processes
// (same job and step, with the caller's environment, which here is the replica's)
// are not it.
func TestFindReplicaScript(t *testing.T) {
	t.Parallel()
	replica := []string{"WICK_APP_ID=wick-7", "WICK_ROLE=trainer", "WICK_REPLICA_ID=1", "SLURM_JOB_ID=40", "SLURM_STEP_ID=1", "ONLY_HERE=yes"}
	ownDir, peerDir, otherDir, stepDir := t.TempDir(), t.TempDir(), t.TempDir(), t.TempDir()
	// Started first, so that a scan in pid order meets them before the replica.
	startWith(t, stepDir, "WICK_APP_ID=wick-7", "WICK_ROLE=trainer", "WICK_REPLICA_ID=1", "SLURM_JOB_ID=40", "SLURM_STEP_ID=5")
	startWith(t, peerDir, "WICK_APP_ID=wick-7", "WICK_ROLE=trainer", "WICK_REPLICA_ID=0", "SLURM_JOB_ID=40", "SLURM_STEP_ID=0")
	startWith(t, otherDir, "WICK_APP_ID=wick-8", "WICK_ROLE=trainer", "WICK_REPLICA_ID=1", "SLURM_JOB_ID=41", "SLURM_STEP_ID=1")
	startWith(t, ownDir, replica...)

	ctx, cancel := context.WithTimeout(context.Background(), testkit.Scale(time.Minute))
	defer cancel()
	cmd := exec.CommandContext(ctx, "/bin/sh", "-c", findReplica, "wick-find", "wick-7", "trainer", "1")
	cmd.Env = []string{"PATH=/usr/bin:/bin", "SLURM_JOB_ID=40", "SLURM_STEP_ID=5", "WICK_APP_ID=wick-7", "WICK_ROLE=trainer", "WICK_REPLICA_ID=1"}
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("the script: %v", err)
	}
	dir, environ, _ := bytes.Cut(out, []byte{0})
	env := strings.Split(strings.TrimSuffix(string(environ), "\x00"), "\x00")
	if string(dir) != ownDir || !slices.Equal(env, replica) {
		t.Errorf("found %q %q, want the replica's %q %q", dir, env, ownDir, replica)
	}
}

// TestFindReplicaScriptNone: with no process of the replica on the node (its peer's,
// and this step's own with the caller's environment, which here is the replica's, are
// not it), the script says so on stderr and fails, after looking for 10 s (its tasks
// may start late). Its app is not TestFindReplicaScript's, which may run beside it.
func TestFindReplicaScriptNone(t *testing.T) {
	t.Parallel()
	replica := []string{"WICK_APP_ID=wick-9", "WICK_ROLE=trainer", "WICK_REPLICA_ID=1"}
	step := append([]string{"PATH=/usr/bin:/bin", "SLURM_JOB_ID=40", "SLURM_STEP_ID=5"}, replica...)
	startWith(t, t.TempDir(), "WICK_APP_ID=wick-9", "WICK_ROLE=trainer", "WICK_REPLICA_ID=0", "SLURM_JOB_ID=40", "SLURM_STEP_ID=0")
	startWith(t, t.TempDir(), step...)
	ctx, cancel := context.WithTimeout(context.Background(), testkit.Scale(time.Minute))
	defer cancel()
	cmd := exec.CommandContext(ctx, "/bin/sh", "-c", findReplica, "wick-find", "wick-9", "trainer", "1")
	cmd.Env = step
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err == nil || len(out) != 0 || !strings.HasPrefix(stderr.String(), "no process of trainer/1 on ") || !strings.HasSuffix(stderr.String(), " (looked for 10 s)\n") {
		t.Errorf("no replica: %v, stdout %q, stderr %q", err, out, stderr.String())
	}
}
