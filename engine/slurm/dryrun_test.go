package slurm

import (
	"context"
	"errors"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/wick-dev/wick/engine/sched"
	"github.com/wick-dev/wick/engine/spec"
)

// These tests need no Slurm.

func plan(t *testing.T, app *spec.AppDef, cfg spec.Cfg) (*Request, error) {
	t.Helper()
	s, err := New(sched.Config{Session: "sess", WorkDir: "/work/dir"})
	if err != nil {
		t.Fatal(err)
	}
	cfg, err = s.RunOpts().Resolve(cfg)
	if err != nil {
		return nil, err
	}
	req, err := s.DryRun(context.Background(), sched.Submission{AppID: "trainer-bcd0123456789", Session: "sess", App: app, Cfg: cfg})
	if err != nil {
		return nil, err
	}
	return req.(*Request), nil
}

func twoRoles() *spec.AppDef {
	trainer := spec.NewRole("trainer", "img", "python", "-m", "train", "--id", "${app_id}", "--rank", "${replica_id}", "--master", "$${${rank0_env}}", "it's")
	trainer.NumReplicas = 2
	trainer.MaxRetries = 3
	trainer.Env = map[string]string{"JOB": "slurm://x/${app_id}", "COMMA": "a,b c"}
	trainer.Resource = spec.Resource{CPU: 4, GPU: 2, MemMB: 2048}
	ps := spec.NewRole("ps", "img", "redis-server")
	ps.MaxRetries = 1
	return &spec.AppDef{Name: "trainer", Roles: []spec.Role{trainer, ps}}
}

func TestDryRunHetJob(t *testing.T) {
	app := twoRoles()
	orig := app.Clone()
	req, err := plan(t, app, spec.Cfg{OptPartition: "gpu", OptTime: "1-02:00", OptComment: "my run", OptQOS: "high", OptMailType: "END,fail", OptMailUser: "me@x"})
	if err != nil {
		t.Fatal(err)
	}
	if app.Roles[0].Args[5] != orig.Roles[0].Args[5] {
		t.Error("DryRun changed the caller's AppDef")
	}
	wantCmd := []string{"sbatch", "--parsable", "--comment=my run", "--mail-user=me@x", "--mail-type=END,fail", "--chdir=/work/dir", "--output=/work/dir/slurm-%j.out"}
	if strings.Join(req.Cmd, "|") != strings.Join(wantCmd, "|") {
		t.Errorf("cmd %q, want %q", req.Cmd, wantCmd)
	}
	if len(req.Replicas) != 3 || req.MaxRetries != 1 || req.JobDir != "/work/dir" {
		t.Fatalf("request %+v", req)
	}
	r1 := req.Replicas[1]
	if r1.Role != "trainer" || r1.Replica != 1 || r1.HetGroup != 1 || r1.JobName != "wick:sess:trainer:trainer:1" ||
		r1.Stdout != "/work/dir/slurm-${SLURM_JOB_ID}-trainer-1.out" || r1.Stderr != "/work/dir/slurm-${SLURM_JOB_ID}-trainer-1.err" {
		t.Errorf("replica 1: %+v", r1)
	}
	script := strings.Join(req.Script, "\n")
	for _, want := range []string{
		"#SBATCH --job-name=wick:sess:trainer:trainer:0 --requeue --ntasks-per-node=1 --partition=gpu --time=1-02:00 --qos=high --cpus-per-task=4 --mem=2048 --gpus-per-node=2\n#SBATCH hetjob\n",
		"#SBATCH --job-name=wick:sess:trainer:ps:0 --requeue --ntasks-per-node=1 --partition=gpu --time=1-02:00 --qos=high\n",
		"export TORCHX_MAX_RETRIES=1\n",
		`--rank 1 --master '${TORCHX_RANK0_HOST}' 'it'\''s' \` + "\n  : ",
		`--id "$SLURM_JOB_ID"`,
		`JOB=slurm://x/"$SLURM_JOB_ID"`,
		`'COMMA=a,b c'`,
		`scontrol requeue "$SLURM_JOB_ID"`,
	} {
		if !strings.Contains(script, want) {
			t.Errorf("script lacks %q:\n%s", want, script)
		}
	}
	if strings.Count(script, "#SBATCH hetjob") != 2 || strings.Count(script, "\nsrun ") != 1 {
		t.Errorf("want 3 components and one srun:\n%s", script)
	}
}

// TestScriptIsBash checks the script with bash -n and runs the wrapper of a replica the
// way srun would, so that quoting and the exit file are real, not just printed.
func TestScriptIsBash(t *testing.T) {
	if _, err := exec.LookPath("bash"); err != nil {
		t.Skip("bash not on PATH")
	}
	req, err := plan(t, twoRoles(), nil)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("bash", "-n")
	cmd.Stdin = strings.NewReader(strings.Join(req.Script, "\n") + "\n")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("bash -n: %v\n%s", err, out)
	}

	dir := t.TempDir()
	exit := filepath.Join(dir, "x.exit")
	rep := req.Replicas[0].Command
	i := indexOf(rep, "/usr/bin/env")
	argv := []string{"/usr/bin/env", "WICK_EXIT_FILE=" + exit}
	for _, w := range rep[i+1:] {
		if strings.HasPrefix(w, "WICK_EXIT_FILE=") {
			continue
		}
		argv = append(argv, w)
	}
	// Run "sh -c 'exit 3'" in place of python.
	j := indexOf(argv, "python")
	argv = append(argv[:j], "sh", "-c", "printf '%s|' \"$0\" \"$@\"; exit 3")
	argv = append(argv, "${SLURM_JOB_ID}", "it's")
	out, err := exec.Command(argv[0], argv[1:]...).Output()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 3 {
		t.Fatalf("wrapper: %v, want exit 3", err)
	}
	if string(out) != "${SLURM_JOB_ID}|it's|" {
		t.Errorf("wrapper passed %q", out)
	}
	b, err := readBounded(exit, 64)
	if err != nil || strings.TrimSpace(string(b)) != "3" {
		t.Errorf("exit file %q, %v", b, err)
	}
}

func indexOf(list []string, s string) int {
	for i, v := range list {
		if v == s {
			return i
		}
	}
	return -1
}

func TestDryRunJobDir(t *testing.T) {
	for in, want := range map[string]string{"": "/work/dir", "runs/a": "/work/dir/runs/a", "/abs/x/../y": "/abs/y"} {
		req, err := plan(t, twoRoles(), spec.Cfg{OptJobDir: in})
		if err != nil {
			t.Fatal(err)
		}
		if req.JobDir != want || req.Replicas[0].Stdout != want+"/slurm-${SLURM_JOB_ID}-trainer-0.out" || req.Cmd[len(req.Cmd)-2] != "--chdir="+want || req.Cmd[len(req.Cmd)-1] != "--output="+want+"/slurm-%j.out" {
			t.Errorf("job_dir %q: %s, %s, %v", in, req.JobDir, req.Replicas[0].Stdout, req.Cmd)
		}
	}
	// A job_dir with spaces and quotes is quoted in the script.
	req, err := plan(t, twoRoles(), spec.Cfg{OptJobDir: "/tmp/it's here"})
	if err != nil {
		t.Fatal(err)
	}
	if script := strings.Join(req.Script, "\n"); !strings.Contains(script, `'--output=/tmp/it'\''s here/slurm-'"$SLURM_JOB_ID"-trainer-0.out`) || strings.Contains(script, "#SBATCH --output") {
		t.Errorf("script:\n%s", script)
	}
}

func TestDryRunBadOptions(t *testing.T) {
	for _, c := range []struct {
		cfg  spec.Cfg
		want string
	}{
		{spec.Cfg{OptTime: "2 hours"}, `time="2 hours"`},
		{spec.Cfg{OptTime: "1:2:3:4"}, "want minutes"},
		{spec.Cfg{OptMailType: "END,FIAL"}, `unknown event "FIAL" (did you mean "FAIL"?)`},
		{spec.Cfg{OptPartition: "a b"}, "no spaces"},
		{spec.Cfg{OptQOS: "x'y"}, "no spaces, quotes"},
		{spec.Cfg{"partion": "debug"}, `unknown key "partion" (did you mean "partition"?)`},
	} {
		_, err := plan(t, twoRoles(), c.cfg)
		if err == nil || !errors.Is(err, spec.ErrInvalidRunOpt) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: error %v, want %q", c.cfg, err, c.want)
		}
	}
	for _, ok := range []string{"10", "10:30", "1:00:00", "2-0", "2-1:30", "2-1:30:00", "UNLIMITED"} {
		if _, err := plan(t, twoRoles(), spec.Cfg{OptTime: ok}); err != nil {
			t.Errorf("time=%s: %v", ok, err)
		}
	}
}

func TestStates(t *testing.T) {
	for in, want := range map[string]spec.AppState{
		"RUNNING": spec.Running, "PENDING": spec.Pending, "COMPLETED": spec.Succeeded,
		"FAILED": spec.Failed, "CANCELLED by 0": spec.Cancelled, "CANCELLED+": spec.Cancelled,
		"TIMEOUT": spec.Failed, "OUT_OF_MEMORY": spec.Failed, "REQUEUED": spec.Pending,
		"NODE_FAIL": spec.Failed, "PREEMPTED": spec.Failed, "SUSPENDED": spec.Pending, "WHATEVER": spec.UnknownState, "": spec.UnknownState,
	} {
		if got := StateOf(in); got != want {
			t.Errorf("StateOf(%q) = %s, want %s", in, got, want)
		}
	}
	for in, want := range map[string]int{"3:0": 3, "0:15": 143, "0:0": 0, "1:9": 137} {
		if got, ok := ParseExitCode(in); !ok || got != want {
			t.Errorf("ParseExitCode(%q) = %d, %v; want %d", in, got, ok, want)
		}
	}
	if _, ok := ParseExitCode("x:y"); ok {
		t.Error("ParseExitCode(x:y) ok")
	}
}

func TestJobNames(t *testing.T) {
	n := JobName("sess", "my.app", "trainer", 12)
	sess, app, role, k, ok := parseJobName(n)
	if !ok || sess != "sess" || app != "my.app" || role != "trainer" || k != 12 {
		t.Errorf("parseJobName(%q) = %q %q %q %d %v", n, sess, app, role, k, ok)
	}
	for _, bad := range []string{"trainer-0", "wick:a:b:c", "wick:a:b:c:-1", "wick:a:b:c:x", "wick:a:b:c:1:2"} {
		if _, _, _, _, ok := parseJobName(bad); ok {
			t.Errorf("parseJobName(%q) ok", bad)
		}
	}
}

func TestScontrolFields(t *testing.T) {
	f := scontrolFields("JobId=7 HetJobId=7 HetJobOffset=0 JobName=wick:s:a b:r:0 JobState=PENDING Reason=Resources AllocNode:Sid=localhost:1 CPUs/Task=1 ExitCode=0:15 WorkDir=/tmp/a b")
	for k, want := range map[string]string{"JobId": "7", "JobName": "wick:s:a b:r:0", "JobState": "PENDING", "Reason": "Resources", "ExitCode": "0:15", "WorkDir": "/tmp/a b", "CPUs/Task": "1"} {
		if f[k] != want {
			t.Errorf("%s = %q, want %q", k, f[k], want)
		}
	}
}

func TestBadJobIDs(t *testing.T) {
	s, _ := New(sched.Config{StateDir: t.TempDir()})
	for _, id := range []string{"", "../etc", "12a", "echo-bcd0123456789"} {
		if _, err := s.Describe(context.Background(), id); !errors.Is(err, sched.ErrNotFound) {
			t.Errorf("Describe(%q) = %v, want ErrNotFound", id, err)
		}
	}
}
