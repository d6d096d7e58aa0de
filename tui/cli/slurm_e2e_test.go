package cli

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/wick-dev/wick/engine/spec"
	"github.com/wick-dev/wick/internal/testkit"
)

// TestGoldenSlurm compares slurm dry runs with the files in testdata/golden: they need
// no Slurm on the machine.
func TestGoldenSlurm(t *testing.T) {
	h := newHarness(t)
	t.Setenv("PATH", "/nonexistent") // the dry run must not need Slurm's commands
	cases := []struct {
		file string
		args []string
	}{
		{"dryrun_echo_slurm.txt", []string{"run", "-s", "slurm", "--dryrun", "utils.echo", "--msg", "hi"}},
		{"dryrun_echo_slurm.json", []string{"run", "-s", "slurm", "--dryrun", "--json", "utils.echo", "--msg", "hi"}},
		{"dryrun_ddp_2x1_slurm.txt", []string{"run", "-s", "slurm", "-cfg", "partition=debug,time=10,comment=ddp test", "--dryrun", "dist.ddp", "-j", "2x1", "--script", "train.py"}},
	}
	for _, c := range cases {
		t.Run(c.file, func(t *testing.T) {
			r := h.run(c.args...)
			if r.code != 0 {
				t.Fatalf("exit %d: %s", r.code, r.stderr)
			}
			if strings.HasSuffix(c.file, ".json") && !json.Valid([]byte(r.stdout)) {
				t.Fatalf("not JSON:\n%s", r.stdout)
			}
			golden(t, c.file, h.normalize(r.stdout))
		})
	}
}

// TestSlurmBadRunOptions: run options are checked before anything is submitted, with
// a one-line error and exit code 2.
func TestSlurmBadRunOptions(t *testing.T) {
	h := newHarness(t)
	// An unknown key is skipped with a warning, as TorchX's cfg_from_str does.
	r := h.run("run", "-s", "slurm", "-cfg", "partion=debug", "--dryrun", "utils.echo")
	if want := `wick: warning: -cfg: unknown run option passed to scheduler: partion=debug (did you mean "partition"?); skipped, as TorchX does`; r.code != 0 || strings.TrimSpace(r.stderr) != want {
		t.Errorf("-cfg partion=debug: exit %d, stderr %q; want 0 and %q", r.code, r.stderr, want)
	}
	for _, c := range []struct{ cfg, want string }{
		{"time=2h", `time="2h": want minutes`},
		{"mail-type=ENDD", `unknown event "ENDD" (did you mean "END"?)`},
	} {
		r := h.run("run", "-s", "slurm", "-cfg", c.cfg, "--dryrun", "utils.echo")
		if r.code != 2 || !strings.Contains(r.stderr, c.want) || strings.Count(strings.TrimSpace(r.stderr), "\n") > 0 {
			t.Errorf("-cfg %s: exit %d, stderr %q; want 2 and %q on one line", c.cfg, r.code, r.stderr, c.want)
		}
	}
}

// slurmPort is the rendezvous port option of a DDP job on the test cluster: a free
// one, as the cluster's nodes are this machine, where other DDP jobs (other tests',
// another run's) may hold TorchX's fixed 29500.
func slurmPort(t *testing.T) []string {
	return []string{"--rdzv_port", strconv.Itoa(testkit.FreePort(t))}
}

// needSlurm points t at the test cluster `make slurm-up` started (testkit.NeedSlurm):
// without it t skips, or fails under CI=true.
func needSlurm(t *testing.T) {
	t.Helper()
	testkit.NeedSlurm(t)
}

// TestSlurmThroughTheVerbs runs the verbs on the slurm scheduler: an attached run to
// its result, a failing one, status, list, a detached app whose logs are followed from
// another directory and which is cancelled from there, and delete.
func TestSlurmThroughTheVerbs(t *testing.T) {
	t.Parallel()
	needSlurm(t)
	h := newHarness(t)

	r := h.exec("run", "-s", "slurm", "utils.echo", "--msg", "hello slurm")
	if r.code != 0 || !strings.Contains(r.stderr, "echo/0 hello slurm") || !strings.Contains(r.stderr, "SUCCEEDED") {
		t.Fatalf("attached run: exit %d\nstdout %s\nstderr %s", r.code, r.stdout, r.stderr)
	}
	echo := strings.TrimSpace(r.stdout)
	if !regexp.MustCompile(`^slurm://wick/[0-9]+$`).MatchString(echo) {
		t.Fatalf("handle %q, want slurm://wick/JOBID", echo)
	}
	if st := h.status(echo); st.State != spec.Succeeded || st.Roles[0].Replicas[0].ExitCode == nil || *st.Roles[0].Replicas[0].ExitCode != 0 {
		t.Errorf("status: %+v", st)
	}

	r = h.exec("run", "-s", "slurm", "utils.sh", "--", "sh", "-c", "echo bad >&2; exit 3")
	if r.code != ExitFailure || !strings.Contains(r.stderr, "FAILED") || !strings.Contains(r.stderr, "sh/0 bad") {
		t.Errorf("failing run: exit %d\n%s", r.code, r.stderr)
	}
	failed := strings.TrimSpace(r.stdout)
	if st := h.status(failed); st.State != spec.Failed || st.Roles[0].Replicas[0].ExitCode == nil || *st.Roles[0].Replicas[0].ExitCode != 3 {
		t.Errorf("failed status: %+v", st)
	}

	r = h.exec("run", "-s", "slurm", "--detach", "utils.sh", "--", "sh", "-c", "i=0; while :; do i=$((i+1)); echo tick $i; sleep 0.2; done")
	if r.code != 0 {
		t.Fatalf("detached run: %d %s", r.code, r.stderr)
	}
	ticker := strings.TrimSpace(r.stdout)
	t.Cleanup(func() { h.exec("cancel", ticker) })

	// From another directory: follow the logs, see ticks come, cancel, and the follow
	// ends once the job has.
	elsewhere := *h
	elsewhere.work = t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), testkit.Scale(90*time.Second))
	defer cancel()
	cmd := elsewhere.wickCmd(ctx, "log", "-f", ticker)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(stdout)
	var got []string
	for len(got) < 3 && sc.Scan() {
		got = append(got, sc.Text())
	}
	if len(got) < 3 || got[0] != "sh/0 tick 1" || got[2] != "sh/0 tick 3" {
		t.Fatalf("followed %q", got)
	}
	if r := elsewhere.exec("cancel", ticker); r.code != 0 {
		t.Fatalf("cancel: %d %s", r.code, r.stderr)
	}
	for sc.Scan() {
	}
	if err := cmd.Wait(); err != nil {
		t.Errorf("log -f after cancel: %v", err)
	}
	if st := elsewhere.status(ticker); st.State != spec.Cancelled {
		t.Errorf("after cancel: %s", st.State)
	}

	r = h.exec("list", "-s", "slurm")
	for _, handle := range []string{echo, failed, ticker} {
		if !strings.Contains(r.stdout, handle) {
			t.Errorf("list lacks %s:\n%s", handle, r.stdout)
		}
	}
	if r := h.exec("delete", echo); r.code != 0 {
		t.Errorf("delete: %d %s", r.code, r.stderr)
	}
	// Delete removes wick's record and the job's files; Slurm itself forgets the job
	// MinJobAge after it ended.
	id := echo[strings.LastIndexByte(echo, '/')+1:]
	if _, err := os.Stat(h.work + "/slurm-" + id + "-echo-0.out"); !os.IsNotExist(err) {
		t.Errorf("log file after delete: %v", err)
	}
	if r := h.exec("list", "-s", "slurm"); strings.Contains(r.stdout, echo+" ") {
		t.Errorf("list after delete:\n%s", r.stdout)
	}
}

// TestSlurmNotInstalled: without Slurm's commands, a launch on slurm fails with one line
// saying so, and list still works (it has no slurm job to show).
func TestSlurmNotInstalled(t *testing.T) {
	h := newHarness(t)
	t.Setenv("PATH", t.TempDir())
	r := h.run("run", "-s", "slurm", "utils.echo")
	if r.code != ExitUnreachable || !strings.Contains(r.stderr, "are not on PATH") || strings.Count(strings.TrimSpace(r.stderr), "\n") > 0 {
		t.Errorf("run: exit %d, stderr %q", r.code, r.stderr)
	}
	if r := h.run("list", "-s", "slurm"); r.code != 0 {
		t.Errorf("list: exit %d, stderr %q", r.code, r.stderr)
	}
	if r := h.run("status", "slurm://wick/123"); r.code == 0 || !strings.Contains(r.stderr, "not on PATH") {
		t.Errorf("status: exit %d, stderr %q", r.code, r.stderr)
	}
}

// TestSlurmDDP trains examples/ddp/train.py with real torch on two Slurm nodes: the
// two torchrun agents rendezvous at rank 0's host (TORCHX_RANK0_HOST, from
// SLURM_JOB_NODELIST_HET_GROUP_0), and each worker learns its global rank. It runs
// dist.ddp the way the README shows for torch 1.13 (--tee 1, PET_REDIRECTS=1).
func TestSlurmDDP(t *testing.T) {
	t.Parallel()
	needSlurm(t)
	h := ddpHarness(t)
	// torch starts slowly on a busy machine: a longer deadline than h.exec's minute.
	ctx, cancel := context.WithTimeout(context.Background(), testkit.Scale(4*time.Minute))
	defer cancel()
	args := append([]string{"run", "-s", "slurm", "dist.ddp", "-j", "2x1", "--tee", "1", "--env", "PET_REDIRECTS=1"}, slurmPort(t)...)
	cmd := h.wickCmd(ctx, append(args, "--script", "train.py")...)
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	r := result{0, stdout.String(), stderr.String()}
	if err != nil {
		r.code = -1
		if ee, ok := err.(*exec.ExitError); ok {
			r.code = ee.ExitCode()
		}
	}
	if r.code != 0 {
		t.Fatalf("exit %d\n%s", r.code, r.stderr)
	}
	for _, want := range []string{"[0]:rank 0 done", "[0]:rank 1 done", "SUCCEEDED"} {
		if !strings.Contains(r.stderr, want) {
			t.Errorf("output lacks %q:\n%s", want, r.stderr)
		}
	}
	// The nodes as slurmctld names them: while it is too busy to answer a ping, status
	// answers from wick's record and the exit files, which do not name them.
	var st spec.AppStatus
	testkit.Wait(t, time.Minute, "status names both replicas' nodes", func() (bool, string) {
		st = h.status(strings.TrimSpace(r.stdout))
		named := len(st.Roles) == 1 && len(st.Roles[0].Replicas) == 2
		for _, role := range st.Roles {
			for _, rep := range role.Replicas {
				named = named && rep.Hostname != ""
			}
		}
		return named, fmt.Sprintf("%+v", st)
	})
	if st.State != spec.Succeeded || st.Roles[0].Replicas[0].Hostname == st.Roles[0].Replicas[1].Hostname {
		t.Errorf("status %+v", st)
	}
}
