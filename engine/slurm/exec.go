package slurm

import (
	"bytes"
	"context"
	"fmt"
	"os/exec"
	"strconv"
	"time"

	"github.com/wick-dev/wick/engine/sched"
)

// findReplica is the script a first step runs on the replica's node: it finds a
// process of the replica (the one whose environment has the replica's WICK_APP_ID,
// WICK_ROLE and WICK_REPLICA_ID, which the batch script gives it) and prints its
// working directory, a NUL, and its environment as /proc holds it (NUL-separated).
// Slurm says a job RUNNING once its nodes are allocated, and its step's tasks may
// start a moment later (seconds on a busy node): the look is made again every half
// second, 10 s at most, before it says there is none.
//
// One grep reads every process's environment (GNU grep's -z: NUL-ended records) and
// only the app's processes are looked at further. A fork per process, as this was
// first written, took tens of seconds on a busy node of a thousand processes and ran
// past the step's deadline. The processes of this very step (its shell, the grep) are
// left out by their step id: they carry the caller's environment, which may be a
// replica's.
const findReplica = `a=$1 r=$2 k=$3 i=0
while :; do
  for f in $(grep -lszFx -e "WICK_APP_ID=$a" /proc/[0-9]*/environ); do
    [ -n "$SLURM_STEP_ID" ] && grep -qszFx -e "SLURM_STEP_ID=$SLURM_STEP_ID" "$f" && grep -qszFx -e "SLURM_JOB_ID=$SLURM_JOB_ID" "$f" && continue
    grep -qszFx -e "WICK_ROLE=$r" "$f" && grep -qszFx -e "WICK_REPLICA_ID=$k" "$f" || continue
    p=${f%/environ}
    d=$(readlink "$p/cwd") || continue
    printf '%s\0' "$d"; cat "$f"; exit 0
  done
  i=$((i+1)); [ $i -ge 20 ] && break; sleep 0.5
done
echo "no process of $r/$k on $(hostname) (looked for 10 s)" >&2; exit 1`

// stepArgs are srun's arguments for a step in replica k of role's place: within its
// job (--overlap: beside its tasks), in its component of a heterogeneous job.
func (s *Scheduler) stepArgs(appID, role string, k int) ([]string, error) {
	rec, err := s.loadRecord(appID)
	if err != nil {
		return nil, err
	}
	group, groups := -1, map[int]bool{}
	if rec != nil {
		for _, r := range rec.Replicas {
			groups[r.HetGroup] = true
			if r.Role == role && r.Replica == k {
				group = r.HetGroup
			}
		}
	}
	if group < 0 {
		return nil, fmt.Errorf("%s/%d: job %s was not submitted by wick from here: its component is not known", role, k, appID)
	}
	step := []string{"--overlap", "--jobid=" + appID, "--quiet"}
	if len(groups) > 1 { // a heterogeneous job: the replica's component
		step = append(step, "--het-group="+strconv.Itoa(group))
	}
	return step, nil
}

// execShell opens the caller's shell ($0) where the node has it, else /bin/sh.
const execShell = `if [ -x "$0" ]; then exec "$0"; fi; exec /bin/sh`

// Exec runs req on the replica's node, within its job (srun --overlap into the
// replica's het group), in the replica's working directory and environment, read from
// its process by a first step. Slurm's own variables are the new step's.
func (s *Scheduler) Exec(ctx context.Context, appID, role string, k int, req sched.ExecRequest) (sched.Command, error) {
	d, err := s.Describe(ctx, appID)
	if err != nil {
		return nil, err
	}
	if _, err := sched.RunningReplica(d, role, k); err != nil {
		return nil, err
	}
	step, err := s.stepArgs(appID, role, k)
	if err != nil {
		return nil, err
	}
	out, err := command(ctx, nil, "srun", append(step, "/bin/sh", "-c", findReplica, "wick-find", appID, role, strconv.Itoa(k))...)
	if err != nil {
		return nil, fmt.Errorf("%s/%d's process: %w", role, k, err)
	}
	dir, environ, ok := bytes.Cut(out, []byte{0})
	if !ok || len(dir) == 0 {
		return nil, fmt.Errorf("%s/%d's process: srun printed no working directory", role, k)
	}
	var env []string
	for _, kv := range bytes.Split(environ, []byte{0}) {
		if len(kv) > 0 {
			env = append(env, string(kv))
		}
	}
	argv := req.Argv
	if len(argv) == 0 {
		sh := req.Shell
		if sh == "" {
			sh = "/bin/sh"
		}
		argv = []string{"/bin/sh", "-c", execShell, sh}
	}
	args := append(step, "--chdir="+string(dir))
	if req.TTY {
		args = append(args, "--pty")
	}
	path, err := exec.LookPath("srun")
	if err != nil {
		return nil, fmt.Errorf("%w (srun not found; install slurm-client, or run wick where Slurm is)", ErrNoSlurm)
	}
	cmd := exec.CommandContext(ctx, path, append(append(args, "--"), argv...)...)
	// The replica's environment reaches the step through srun's (--export=ALL, its
	// default), less what Slurm set in the replica's step: the new step's own.
	cmd.Env = commandEnv(env)
	cmd.WaitDelay = 500 * time.Millisecond
	return sched.ProcessCommand(cmd), nil
}
