package local

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/wick-dev/wick/engine/sched"
	"github.com/wick-dev/wick/engine/spec"
)

func TestEchoRunsToSuccess(t *testing.T) {
	s := testScheduler(t, false)
	id := start(t, s, appOf("echo", role("echo", "echo", "hello", "world")), nil)
	st := waitApp(t, s, id)
	if st.State != spec.Succeeded {
		t.Fatalf("state %s (%s)", st.State, st.Msg)
	}
	rep := replicaOf(t, st, "echo", 0)
	if rep.State != spec.Succeeded || rep.ExitCode == nil || *rep.ExitCode != 0 || rep.PID <= 0 {
		t.Errorf("replica: %+v", rep)
	}
	if rep.Started.IsZero() || rep.Ended.Before(rep.Started) || st.Ended.IsZero() || st.Created.IsZero() {
		t.Errorf("times: %+v / app %v..%v", rep, st.Created, st.Ended)
	}
	if want := "local_cwd://test/" + id; st.Handle != want || st.AppID != id || st.Name != "echo" {
		t.Errorf("identity: %q %q %q", st.Handle, st.AppID, st.Name)
	}
	dir := replicaLogDir(t, s, id, "echo", 0)
	if got := readFile(t, filepath.Join(dir, "stdout.log")); got != "hello world\n" {
		t.Errorf("stdout.log = %q", got)
	}
	lines := logLines(t, s, id, "echo", 0, sched.LogOptions{Follow: true})
	if len(lines) != 1 || lines[0].Text != "hello world" || lines[0].Stream != sched.Stdout || lines[0].Role != "echo" {
		t.Errorf("lines: %+v", lines)
	}
	// TorchX's layout and summary.
	l, _ := readLaunch(filepath.Join(s.appsDir(), id))
	if want := filepath.Join(s.cfg.StateDir, "logs", "test", id); l.Request.LogDir != want {
		t.Errorf("log dir %s, want %s", l.Request.LogDir, want)
	}
	var success map[string]any
	if err := json.Unmarshal([]byte(readFile(t, filepath.Join(l.Request.LogDir, "SUCCESS"))), &success); err != nil || success["final_state"] != "SUCCEEDED" {
		t.Errorf("SUCCESS: %v %v", success, err)
	}
	d, err := s.Describe(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	if d.App == nil || d.App.Roles[0].Entrypoint != "echo" {
		t.Errorf("described app: %+v", d.App)
	}
	if v, ok := d.Cfg[OptStopTimeout].(float64); !ok || v != DefaultStopTimeout {
		t.Errorf("described cfg %#v", d.Cfg)
	}
	if v, ok := d.Cfg[OptPrependCwd].(bool); !ok || v {
		t.Errorf("described cfg %#v", d.Cfg)
	}
}

func TestReplicaEnvironmentAndMacros(t *testing.T) {
	s := testScheduler(t, false)
	r := role("worker", "sh", "-c", `echo "$WICK_APP_ID $WICK_ROLE $WICK_REPLICA_ID $TORCHX_RANK0_HOST $PYTHONUNBUFFERED"; echo "$TORCHELASTIC_ERROR_FILE"; echo "$PET_LOG_DIR"; echo "$1 $2 $3 $4"; echo "$FROM_ROLE"; pwd`,
		"sh", "${app_id}", "${replica_id}", "${img_root}", "${rank0_env}")
	r.NumReplicas = 2
	r.Env = map[string]string{"FROM_ROLE": "r-${replica_id}-$$"}
	id := start(t, s, appOf("env", r), nil)
	if st := waitApp(t, s, id); st.State != spec.Succeeded {
		t.Fatalf("state %s: %s", st.State, st.Msg)
	}
	cwd, _ := os.Getwd()
	l, _ := readLaunch(filepath.Join(s.appsDir(), id))
	for k := range 2 {
		dir := replicaLogDir(t, s, id, "worker", k)
		got := strings.Split(strings.TrimSpace(readFile(t, filepath.Join(dir, "stdout.log"))), "\n")
		want := []string{
			id + " worker " + itoa(k) + " localhost " + pyUnbuffered(),
			filepath.Join(dir, "error.json"),
			filepath.Join(l.Request.LogDir, "torchelastic", "worker"),
			id + " " + itoa(k) + " " + cwd + " TORCHX_RANK0_HOST",
			"r-" + itoa(k) + "-$",
			cwd,
		}
		if strings.Join(got, "|") != strings.Join(want, "|") {
			t.Errorf("replica %d:\n got %q\nwant %q", k, got, want)
		}
	}
}

func itoa(k int) string { return string(rune('0' + k)) }

func pyUnbuffered() string {
	if v, ok := os.LookupEnv("PYTHONUNBUFFERED"); ok {
		return v
	}
	return "x"
}

func TestDryRunHasNoSideEffectsAndPrintsInOrder(t *testing.T) {
	s := testScheduler(t, false)
	logDir := filepath.Join(t.TempDir(), "not", "yet")
	r := role("trainer", "python", "-m", "train", "--rank", "${replica_id}")
	r.NumReplicas = 2
	r.MaxRetries = 3
	r.RetryPolicy = spec.RetryReplica
	info := dryRun(t, s, appOf("train", r), spec.Cfg{OptLogDir: logDir, OptPrependCwd: true})
	req := info.Request.(*Request)
	if _, err := os.Stat(logDir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("dry run created the log dir: %v", err)
	}
	if entries, _ := os.ReadDir(s.cfg.StateDir); len(entries) != 0 {
		t.Errorf("dry run wrote state: %v", entries)
	}
	if req.LogDir != filepath.Join(logDir, "test", info.AppID) || req.StopTimeout != DefaultStopTimeout {
		t.Errorf("request: %+v", req)
	}
	rep := req.Roles[0].Replicas[1]
	if strings.Join(rep.Argv, " ") != "python -m train --rank 1" {
		t.Errorf("argv %q", rep.Argv)
	}
	cwd, _ := os.Getwd()
	if !strings.HasPrefix(rep.Env["PATH"], cwd+":") {
		t.Errorf("prepend_cwd: PATH=%s", rep.Env["PATH"])
	}
	if rep.Stdout != filepath.Join(req.LogDir, "trainer", "1", "stdout.log") || rep.Cwd != cwd {
		t.Errorf("replica: %+v", rep)
	}
	b, err := json.Marshal(req)
	if err != nil {
		t.Fatal(err)
	}
	keys := []string{`"app_id"`, `"session"`, `"log_dir"`, `"state_dir"`, `"stop_timeout"`, `"roles"`, `"max_retries"`, `"retry_policy"`, `"argv"`, `"env"`, `"cwd"`, `"stdout"`}
	last := -1
	for _, k := range keys {
		i := strings.Index(string(b), k)
		if i <= last {
			t.Errorf("%s out of order in %s", k, b)
		}
		last = i
	}
	// Without prepend_cwd the working directory still comes before the inherited PATH,
	// after the role's own PATH: TorchX's local_scheduler.py joins the role's PATH and
	// cwd, then appends os.environ's PATH (_to_popen_request, _get_replica_env), and
	// its test_prepend_cwd / test_append_cwd assert that order.
	r.Env = map[string]string{"PATH": "/role/bin"}
	info = dryRun(t, s, appOf("train", r), nil)
	if p, want := info.Request.(*Request).Roles[0].Replicas[0].Env["PATH"], "/role/bin:"+cwd+":"+os.Getenv("PATH"); p != want {
		t.Errorf("PATH=%s, want %s", p, want)
	}
}

func TestLocalDirImages(t *testing.T) {
	s := testScheduler(t, true)
	img := t.TempDir()
	os.WriteFile(filepath.Join(img, "run.sh"), []byte("#!/bin/sh\necho ran in $(pwd) with $1\n"), 0o755)
	os.Mkdir(filepath.Join(img, "bin"), 0o755)
	os.WriteFile(filepath.Join(img, "bin", "tool"), []byte("#!/bin/sh\necho tool\n"), 0o755)
	mk := func(image, entry string, args ...string) *spec.AppDef {
		r := spec.NewRole("r", image, entry, args...)
		return appOf("dir", r)
	}
	for _, image := range []string{"relative/dir", filepath.Join(img, "missing"), filepath.Join(img, "run.sh"), ""} {
		resolved, _ := s.RunOpts().Resolve(nil)
		_, err := s.DryRun(context.Background(), sched.Submission{AppID: "dir-x", Session: "test", App: mk(image, "run.sh"), Cfg: resolved})
		if err == nil || !strings.Contains(err.Error(), "local_dir") {
			t.Errorf("image %q: %v", image, err)
		}
	}
	for entry, want := range map[string]string{"run.sh": "ran in " + img + " with ${img_root}", "./run.sh": "ran in " + img + " with ${img_root}", "bin/tool": "tool"} {
		id := start(t, s, mk(img, entry, "${img_root}"), nil)
		st := waitApp(t, s, id)
		if st.State != spec.Succeeded {
			t.Fatalf("%s: %s %s", entry, st.State, st.Msg)
		}
		got := strings.TrimSpace(readFile(t, filepath.Join(replicaLogDir(t, s, id, "r", 0), "stdout.log")))
		if want = strings.ReplaceAll(want, "${img_root}", img); got != want {
			t.Errorf("%s: %q, want %q", entry, got, want)
		}
	}
	// A bare name the directory does not hold is looked up on PATH.
	id := start(t, s, mk(img, "echo", "plain"), nil)
	if st := waitApp(t, s, id); st.State != spec.Succeeded {
		t.Errorf("echo in local_dir: %s %s", st.State, st.Msg)
	}
}

func TestExitCodesAndFailFast(t *testing.T) {
	s := testScheduler(t, false)
	fail := role("fail", "sh", "-c", "sleep 0.1; exit 3")
	sleeper := role("sleeper", "sleep", "100")
	killed := role("killed", "sh", "-c", "kill -9 $$$$") // $$ is the macro escape for $
	cfg := spec.Cfg{OptStopTimeout: 5.0}
	id := start(t, s, appOf("codes", fail, sleeper), cfg)
	st := waitApp(t, s, id)
	if st.State != spec.Failed || st.Msg != "fail/0: exit code 3" {
		t.Fatalf("app: %s %q", st.State, st.Msg)
	}
	if r := replicaOf(t, st, "fail", 0); r.State != spec.Failed || *r.ExitCode != 3 {
		t.Errorf("fail: %+v", r)
	}
	// Fail fast: the sleeper was stopped with SIGTERM, long before its 100 s.
	if r := replicaOf(t, st, "sleeper", 0); r.State != spec.Cancelled || *r.ExitCode != 128+15 {
		t.Errorf("sleeper: %+v", r)
	}
	if d := st.Ended.Sub(st.Created); d > 5*time.Second {
		t.Errorf("app took %v", d)
	}
	id = start(t, s, appOf("killed", killed), cfg)
	st = waitApp(t, s, id)
	if r := replicaOf(t, st, "killed", 0); st.State != spec.Failed || r.State != spec.Failed || *r.ExitCode != 128+9 {
		t.Errorf("killed by SIGKILL: %s %+v", st.State, r)
	}
	if code, ok := st.ExitCode(); !ok || code != 137 {
		t.Errorf("app exit code %d %v", code, ok)
	}
}

func TestExecFailure(t *testing.T) {
	s := testScheduler(t, false)
	for _, entry := range []string{"no-such-program-wick", "/nonexistent/prog", "./missing-here"} {
		bad := role("bad", entry)
		good := role("good", "sleep", "100")
		id := start(t, s, appOf("exec", bad, good), spec.Cfg{OptStopTimeout: 5.0})
		st := waitApp(t, s, id)
		r := replicaOf(t, st, "bad", 0)
		if st.State != spec.Failed || r.State != spec.Failed || r.ExitCode == nil || *r.ExitCode != 127 {
			t.Errorf("%s: app %s, replica %+v", entry, st.State, r)
		}
		if !strings.Contains(r.StructuredError, "exec") || !strings.Contains(r.StructuredError, strings.TrimPrefix(entry, "./")) {
			t.Errorf("%s: structured error %q", entry, r.StructuredError)
		}
		if g := replicaOf(t, st, "good", 0); g.State != spec.Cancelled {
			t.Errorf("%s: the other replica: %+v", entry, g)
		}
	}
	// The retry policy applies to exec failures too.
	bad := role("bad", "no-such-program-wick")
	bad.MaxRetries, bad.RetryPolicy = 2, spec.RetryReplica
	id := start(t, s, appOf("exec", bad), nil)
	st := waitApp(t, s, id)
	if r := replicaOf(t, st, "bad", 0); st.State != spec.Failed || r.Restarts != 2 || st.NumRestarts != 2 {
		t.Errorf("retried exec failure: %s %+v (%d restarts)", st.State, r, st.NumRestarts)
	}
}

// flaky fails its first attempt (leaving a marker file) and succeeds after.
func flaky(name, marker string) spec.Role {
	return role(name, "sh", "-c", `if [ -e "$1" ]; then echo second; else touch "$1"; echo first; exit 1; fi`, "sh", marker)
}

// waitOn sleeps until the marker exists (it is first stopped by a restart).
func waitOn(name, marker string) spec.Role {
	return role(name, "sh", "-c", `if [ -e "$1" ]; then echo done; else sleep 100; fi`, "sh", marker)
}

func TestRetryReplica(t *testing.T) {
	s := testScheduler(t, false)
	tmp := t.TempDir()
	r := role("r", "sh", "-c", `if [ "$WICK_REPLICA_ID" = 1 ] && [ ! -e "$1" ]; then touch "$1"; echo boom; exit 1; fi; echo fine`, "sh", filepath.Join(tmp, "m"))
	r.NumReplicas, r.MaxRetries, r.RetryPolicy = 2, 1, spec.RetryReplica
	id := start(t, s, appOf("replica", r), nil)
	st := waitApp(t, s, id)
	if st.State != spec.Succeeded || st.NumRestarts != 1 {
		t.Fatalf("app %s, %d restarts (%s)", st.State, st.NumRestarts, st.Msg)
	}
	if r0, r1 := replicaOf(t, st, "r", 0), replicaOf(t, st, "r", 1); r0.Restarts != 0 || r1.Restarts != 1 {
		t.Errorf("restarts: %d %d", r0.Restarts, r1.Restarts)
	}
	lines := logLines(t, s, id, "r", 1, sched.LogOptions{})
	if len(lines) != 2 || lines[0].Text != "boom" || lines[0].Attempt != 0 || lines[1].Text != "fine" || lines[1].Attempt != 1 {
		t.Errorf("attempts in logs: %+v", lines)
	}
}

func TestRetryRole(t *testing.T) {
	s := testScheduler(t, false)
	mark := filepath.Join(t.TempDir(), "m")
	a0, a1 := waitOn("a", mark), flaky("a", mark)
	a := a0
	a.NumReplicas, a.MaxRetries, a.RetryPolicy = 2, 1, spec.RetryRole
	// Replica 1 of role a is flaky, replica 0 waits for it: one role, two programs.
	a.Entrypoint = "sh"
	a.Args = []string{"-c", `if [ "$WICK_REPLICA_ID" = 1 ]; then ` + a1.Args[1] + `; else ` + a0.Args[1] + `; fi`, "sh", mark}
	b := role("b", "sh", "-c", "sleep 0.5")
	id := start(t, s, appOf("role", a, b), spec.Cfg{OptStopTimeout: 5.0})
	st := waitApp(t, s, id)
	if st.State != spec.Succeeded || st.NumRestarts != 1 {
		t.Fatalf("app %s, %d restarts: %s", st.State, st.NumRestarts, st.Msg)
	}
	for k := range 2 {
		if r := replicaOf(t, st, "a", k); r.Restarts != 1 || r.State != spec.Succeeded {
			t.Errorf("a/%d: %+v", k, r)
		}
	}
	if r := replicaOf(t, st, "b", 0); r.Restarts != 0 {
		t.Errorf("b was restarted: %+v", r)
	}
	// Out of role restarts: FAILED, and the other role is stopped.
	bad := role("bad", "sh", "-c", "exit 5")
	bad.NumReplicas, bad.MaxRetries, bad.RetryPolicy = 2, 1, spec.RetryRole
	id = start(t, s, appOf("role", bad, role("b", "sleep", "100")), spec.Cfg{OptStopTimeout: 5.0})
	st = waitApp(t, s, id)
	if st.State != spec.Failed || st.NumRestarts != 1 || replicaOf(t, st, "bad", 1).Restarts != 1 || replicaOf(t, st, "b", 0).State != spec.Cancelled {
		t.Errorf("role exhausted: %s %d %+v", st.State, st.NumRestarts, st.Roles)
	}
}

func TestRetryApplication(t *testing.T) {
	s := testScheduler(t, false)
	mark := filepath.Join(t.TempDir(), "m")
	a := flaky("a", mark)
	a.MaxRetries = 1 // APPLICATION is the default policy
	b := waitOn("b", mark)
	id := start(t, s, appOf("app", a, b), spec.Cfg{OptStopTimeout: 5.0})
	st := waitApp(t, s, id)
	if st.State != spec.Succeeded || st.NumRestarts != 1 {
		t.Fatalf("app %s, %d restarts: %s", st.State, st.NumRestarts, st.Msg)
	}
	for _, name := range []string{"a", "b"} {
		if r := replicaOf(t, st, name, 0); r.Restarts != 1 || r.State != spec.Succeeded {
			t.Errorf("%s: %+v", name, r)
		}
	}
	if got := lineTexts(logLines(t, s, id, "a", 0, sched.LogOptions{})); got != "first\nsecond\n" {
		t.Errorf("a's logs across attempts: %q", got)
	}
	// Out of retries: FAILED after max_retries restarts.
	always := role("always", "sh", "-c", "exit 2")
	always.MaxRetries = 2
	id = start(t, s, appOf("app", always), nil)
	st = waitApp(t, s, id)
	if r := replicaOf(t, st, "always", 0); st.State != spec.Failed || st.NumRestarts != 2 || r.Restarts != 2 || *r.ExitCode != 2 {
		t.Errorf("exhausted: %s %d %+v", st.State, st.NumRestarts, r)
	}
}

func TestTorchelasticErrorFile(t *testing.T) {
	s := testScheduler(t, false)
	r := role("trainer", "sh", "-c", `printf '{"message": {"message": "RuntimeError: CUDA out of memory", "extraInfo": {"timestamp": "1700000000"}}}' > "$TORCHELASTIC_ERROR_FILE"; exit 1`)
	id := start(t, s, appOf("err", r), nil)
	st := waitApp(t, s, id)
	rep := replicaOf(t, st, "trainer", 0)
	if spec.ErrorMessage(rep.StructuredError) != "RuntimeError: CUDA out of memory" {
		t.Errorf("replica error %q", rep.StructuredError)
	}
	if st.StructuredError != rep.StructuredError || !strings.Contains(st.Msg, "CUDA out of memory") {
		t.Errorf("app: %q / %q", st.Msg, st.StructuredError)
	}
	// An error file left by an earlier attempt is not the error of a later one.
	mark := filepath.Join(t.TempDir(), "m")
	r = role("trainer", "sh", "-c", `if [ -e "$1" ]; then exit 4; fi; touch "$1"; echo '{"message": "first attempt"}' > "$TORCHELASTIC_ERROR_FILE"; exit 1`, "sh", mark)
	r.MaxRetries, r.RetryPolicy = 1, spec.RetryReplica
	id = start(t, s, appOf("err", r), nil)
	st = waitApp(t, s, id)
	// Its error is its own exit, not the earlier file.
	if rep := replicaOf(t, st, "trainer", 0); rep.Restarts != 1 || *rep.ExitCode != 4 || spec.ErrorMessage(rep.StructuredError) != "trainer/0: exit code 4" {
		t.Errorf("second attempt: %+v", rep)
	}
}

// TestAttemptsRecordEarlierRuns checks that every restart, under each retry policy,
// records the run that ended (exit code, times) in the replica's attempts, in
// state.json as in Describe, including the runs of replicas stopped only because
// their role or app restarted.
func TestAttemptsRecordEarlierRuns(t *testing.T) {
	for _, policy := range []spec.RetryPolicy{spec.RetryReplica, spec.RetryRole, spec.RetryApplication} {
		t.Run(string(policy), func(t *testing.T) {
			t.Parallel()
			s := testScheduler(t, false)
			fail := role("fail", "sh", "-c", "exit 3")
			fail.MaxRetries, fail.RetryPolicy = 2, policy
			// A bystander: in fail's role under ROLE, in another role otherwise. It is
			// stopped (SIGTERM) by each ROLE or APPLICATION restart, left alone by
			// REPLICA ones, and stopped at the end in every case.
			bystander := role("other", "sleep", "100")
			app := appOf("attempts", fail, bystander)
			by := "other"
			if policy == spec.RetryRole {
				fail.NumReplicas = 2
				fail.Args = []string{"-c", `if [ "$WICK_REPLICA_ID" = 1 ]; then exec sleep 100; fi; exit 3`}
				app, by = appOf("attempts", fail), "fail"
			}
			id := start(t, s, app, spec.Cfg{OptStopTimeout: 5.0})
			st := waitApp(t, s, id)
			if st.State != spec.Failed || st.NumRestarts != 2 {
				t.Fatalf("app %s, %d restarts: %s", st.State, st.NumRestarts, st.Msg)
			}
			d, err := s.Describe(context.Background(), id)
			if err != nil {
				t.Fatal(err)
			}
			disk, err := readState(filepath.Join(s.appsDir(), id))
			if err != nil {
				t.Fatal(err)
			}
			for src, st := range map[string]*spec.AppStatus{"wait": st, "describe": &d.Status, "state.json": &disk.AppStatus} {
				r := replicaOf(t, st, "fail", 0)
				if r.State != spec.Failed || r.Restarts != 2 || r.ExitCode == nil || *r.ExitCode != 3 {
					t.Errorf("%s: final run %+v", src, r)
				}
				checkAttempts(t, src+": fail/0", r, 2, 3)
				b := replicaOf(t, st, by, map[bool]int{true: 1, false: 0}[by == "fail"])
				if b.State != spec.Cancelled || b.ExitCode == nil || *b.ExitCode != 128+15 {
					t.Errorf("%s: bystander's final run %+v", src, b)
				}
				if policy == spec.RetryReplica {
					checkAttempts(t, src+": bystander", b, 0, 0)
				} else {
					checkAttempts(t, src+": bystander", b, 2, 128+15)
				}
			}
		})
	}
}

// checkAttempts checks that r recorded n earlier runs, numbered from 0, each ended
// with code, in time order and before the current run.
func checkAttempts(t *testing.T, what string, r spec.ReplicaStatus, n, code int) {
	t.Helper()
	if len(r.Attempts) != n {
		t.Errorf("%s: %d attempts, want %d: %+v", what, len(r.Attempts), n, r.Attempts)
		return
	}
	var prev time.Time
	for i, a := range r.Attempts {
		if a.Attempt != i || a.ExitCode == nil || *a.ExitCode != code {
			t.Errorf("%s: attempt %d: %+v, want number %d exit %d", what, i, a, i, code)
			continue
		}
		if a.Started.IsZero() || a.Ended.Before(a.Started) || a.Started.Before(prev) {
			t.Errorf("%s: attempt %d times %v..%v after %v", what, i, a.Started, a.Ended, prev)
		}
		prev = a.Ended
	}
	if r.Started.Before(prev) {
		t.Errorf("%s: current run started %v, before the last attempt ended %v", what, r.Started, prev)
	}
}

// TestPreviousExitWhileRunning checks that the exit code of the run before the
// current one reads the same whenever one looks, not only between the failure and
// the restart: the replica fails once with 3, then runs.
func TestPreviousExitWhileRunning(t *testing.T) {
	s := testScheduler(t, false)
	mark := filepath.Join(t.TempDir(), "m")
	r := role("r", "sh", "-c", `if [ -e "$1" ]; then exec sleep 100; fi; touch "$1"; echo '{"message": "boom"}' > "$TORCHELASTIC_ERROR_FILE"; exit 3`, "sh", mark)
	r.MaxRetries, r.RetryPolicy = 1, spec.RetryReplica
	id := start(t, s, appOf("again", r), spec.Cfg{OptStopTimeout: 5.0})
	st := waitState(t, s, id, func(st *spec.AppStatus) bool {
		rep := st.Roles[0].Replicas[0]
		return rep.State == spec.Running && rep.Restarts == 1
	})
	rep := replicaOf(t, st, "r", 0)
	if rep.ExitCode != nil || rep.StructuredError != "" || !rep.Ended.IsZero() {
		t.Errorf("the running attempt carries the last one's end: %+v", rep)
	}
	a, ok := rep.Attempt(0)
	if !ok || len(rep.Attempts) != 1 || a.ExitCode == nil || *a.ExitCode != 3 || spec.ErrorMessage(a.Error) != "boom" {
		t.Errorf("previous attempt: %+v (%v) of %+v", a, ok, rep.Attempts)
	}
	if err := s.Cancel(context.Background(), id); err != nil {
		t.Fatal(err)
	}
	st = waitApp(t, s, id)
	if rep := replicaOf(t, st, "r", 0); st.State != spec.Cancelled || len(rep.Attempts) != 1 || rep.ExitCode == nil || *rep.ExitCode != 128+15 {
		t.Errorf("after cancel: %s %+v", st.State, rep)
	}
}
