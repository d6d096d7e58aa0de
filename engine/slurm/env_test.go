package slurm

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/wick-dev/wick/engine/sched"
	"github.com/wick-dev/wick/engine/spec"
)

// TestCommandEnv: the user's SBATCH_*, SQUEUE_* and SLURM_CONF reach Slurm's commands
// (sbatch(1), "INPUT ENVIRONMENT VARIABLES"); inside a job, what Slurm set there
// (sbatch(1)/srun(1) "OUTPUT ENVIRONMENT VARIABLES") does not.
func TestCommandEnv(t *testing.T) {
	user := []string{
		"HOME=/home/u", "PATH=/usr/bin",
		"SBATCH_ACCOUNT=proj1", "SBATCH_PARTITION=gpu", "SBATCH_QOS=high", "SBATCH_TIMELIMIT=1:00:00",
		"SQUEUE_FORMAT=%i %j", "SQUEUE_SORT=-t", "SLURM_CONF=/etc/slurm/site.conf", "SLURM_CLUSTERS=c1",
		"SACCT_FEDERATION=1", "SLURM_TIME_FORMAT=relative", "SCANCEL_INTERACTIVE=1", "SCANCEL_VERBOSE=1",
	}
	want := []string{
		"HOME=/home/u", "PATH=/usr/bin",
		"SBATCH_ACCOUNT=proj1", "SBATCH_PARTITION=gpu", "SBATCH_QOS=high", "SBATCH_TIMELIMIT=1:00:00",
		"SQUEUE_FORMAT=%i %j", "SQUEUE_SORT=-t", "SLURM_CONF=/etc/slurm/site.conf", "SLURM_CLUSTERS=c1",
		"SACCT_FEDERATION=1", "SCANCEL_VERBOSE=1", "SLURM_TIME_FORMAT=standard",
	}
	if got := commandEnv(user); !slices.Equal(got, want) {
		t.Errorf("outside a job:\n got %q\nwant %q", got, want)
	}
	// Inside a job (sbatch's output variables, as a batch script sees them).
	job := append(slices.Clone(user),
		"SLURM_JOB_ID=42", "SLURM_JOBID=42", "SLURM_NTASKS=8", "SLURM_CPUS_PER_TASK=4",
		"SLURM_JOB_PARTITION=gpu", "SLURM_NODELIST=n[1-2]", "SLURM_SUBMIT_DIR=/home/u",
		"SLURM_UMASK=0022", "SBATCH_MEM_BIND=local", "SBATCH_MEM_BIND_TYPE=local", "SLURMD_NODENAME=n1",
	)
	want = append(slices.Clone(want[:len(want)-1]), "SLURM_UMASK=0022", "SLURMD_NODENAME=n1", "SLURM_TIME_FORMAT=standard")
	if got := commandEnv(job); !slices.Equal(got, want) {
		t.Errorf("inside a job:\n got %q\nwant %q", got, want)
	}
}

// TestControllerDown: each message Slurm prints for a controller that does not answer
// now is an outage; other failures are not. The stderr lines are as squeue, sbatch and
// scontrol print them: "<cmd>: error: <context>: " then slurm_strerror's text
// (SchedMD/slurm 284c3b95, src/common/slurm_errno.c; the line numbers are in env.go).
func TestControllerDown(t *testing.T) {
	for _, msg := range []string{
		"squeue: error: slurm_receive_msg: Zero Bytes were transmitted or received\nslurm_load_jobs error: Zero Bytes were transmitted or received",
		"sbatch: error: Batch job submission failed: Socket timed out on send/recv operation",
		"slurm_load_jobs error: Unable to contact slurm controller (connect failure)",
		"scontrol: error: Unable to contact slurm controller (receive failure)",
		"sbatch: error: Batch job submission failed: Rate limit exceeded, please retry later",
		"squeue: error: Slurm backup controller in standby mode",
		"scancel: error: Controller is in standby mode, try a different controller",
		"sacct: error: slurm_persist_conn_open_without_init: Connection timed out establishing",
		"squeue: error: slurm_send_recv_msg: Message receive failure",
	} {
		if !controllerDown(msg) {
			t.Errorf("not an outage: %q", msg)
		}
	}
	for _, msg := range []string{
		"sbatch: error: Batch job submission failed: Invalid partition name specified",
		"slurm_load_jobs error: Invalid job id specified",
		"sbatch: error: Batch job submission failed: Requested node configuration is not available",
		"sbatch: error: invalid account or account/partition combination specified",
	} {
		if controllerDown(msg) {
			t.Errorf("an outage: %q", msg)
		}
	}
}

// TestClusterSbatchEnv: SBATCH_PARTITION and SBATCH_ACCOUNT in the user's environment
// reach sbatch (the job runs in that partition, under that account), as sbatch(1)
// documents and TorchX leaves them; an SBATCH_PARTITION that names no partition is
// sbatch's refusal, which proves it was read. Not parallel: it sets the environment.
func TestClusterSbatchEnv(t *testing.T) {
	h := newHarness(t)
	app := &spec.AppDef{Name: "env", Roles: []spec.Role{testRole("env", 1, "sh", "-c", `echo "$SLURM_JOB_PARTITION $SLURM_JOB_ACCOUNT"`)}}
	t.Setenv("SBATCH_PARTITION", "nosuchpart")
	if _, err := h.trySubmit(app, nil); !errors.Is(err, ErrRejected) || !strings.Contains(err.Error(), "Invalid partition name specified") {
		t.Errorf("SBATCH_PARTITION=nosuchpart: err = %v, want sbatch's refusal", err)
	}
	t.Setenv("SBATCH_PARTITION", "debug")
	t.Setenv("SBATCH_ACCOUNT", "wickacct")
	id := h.submit(app, nil)
	if st := h.wait(id); st.State != spec.Succeeded {
		t.Fatalf("state %s: %+v", st.State, st)
	}
	if got := texts(h.lines(id, "env", 0, sched.LogOptions{})); got != "stdout:debug wickacct\n" {
		t.Errorf("the job saw %q, want partition debug and account wickacct", got)
	}
}
