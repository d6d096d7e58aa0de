package slurm

import (
	"context"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/wick-dev/wick/engine/sched"
	"github.com/wick-dev/wick/engine/spec"
	"github.com/wick-dev/wick/internal/testkit"
)

// These tests run against a real Slurm cluster: `make slurm-up` starts one on this
// machine. Without one they skip, and under CI=true they fail.

// needCluster points t at the test cluster (testkit.NeedSlurm): without it t skips,
// or fails under CI=true.
func needCluster(t testing.TB) {
	t.Helper()
	testkit.NeedSlurm(t)
}

// testTimeout bounds every wait on the cluster: a job starts in about a second here,
// but the machine is shared.
const testTimeout = 90 * time.Second

type harness struct {
	t     testing.TB
	s     *Scheduler
	state string
	work  string
}

func newHarness(t testing.TB) *harness {
	t.Helper()
	needCluster(t)
	state, work := t.TempDir(), t.TempDir()
	s, err := New(sched.Config{Session: "test", StateDir: state, WorkDir: work})
	if err != nil {
		t.Fatal(err)
	}
	return &harness{t: t, s: s.(*Scheduler), state: state, work: work}
}

func testRole(name string, n int, argv ...string) spec.Role {
	r := spec.NewRole(name, "unused", argv[0], argv[1:]...)
	r.NumReplicas = n
	r.Resource = spec.Resource{CPU: 1, GPU: 0, MemMB: 64}
	return r
}

// submit plans and submits app and returns its job id.
func (h *harness) submit(app *spec.AppDef, cfg spec.Cfg) string {
	h.t.Helper()
	id, err := h.trySubmit(app, cfg)
	if err != nil {
		h.t.Fatal(err)
	}
	h.t.Cleanup(func() { h.stop(id) })
	return id
}

// stop cancels a job and waits (bounded) for its end, so that Slurm has stopped
// writing to the test's directories before they are removed.
func (h *harness) stop(id string) {
	ctx, cancel := context.WithTimeout(context.Background(), testkit.Scale(30*time.Second))
	defer cancel()
	if h.s.Cancel(ctx, id) != nil {
		return
	}
	_, _ = h.s.Wait(ctx, id)
}

func (h *harness) trySubmit(app *spec.AppDef, cfg spec.Cfg) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), testkit.Scale(testTimeout))
	defer cancel()
	cfg, err := h.s.RunOpts().Resolve(cfg)
	if err != nil {
		return "", err
	}
	sub := sched.Submission{AppID: "placeholder", Session: "test", App: app, Cfg: cfg}
	req, err := h.s.DryRun(ctx, sub)
	if err != nil {
		return "", err
	}
	info := &sched.DryRunInfo{Scheduler: Name, Submission: sub, Request: req}
	if err := h.s.Schedule(ctx, info, nil); err != nil {
		return "", err
	}
	return info.AppID, nil
}

// wait waits for the job's end and returns its status as slurmctld tells it. Wait may
// answer from wick's record and the replicas' exit files while slurmctld, busy, does
// not answer a ping (Slurm controller unreachable): the end is right, but what only
// slurmctld knows (nodes, start) is missing; the tests check that too.
func (h *harness) wait(id string) *spec.AppStatus {
	h.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), testkit.Scale(testTimeout))
	defer cancel()
	st, err := h.s.Wait(ctx, id)
	if err != nil {
		h.t.Fatalf("waiting for job %s: %v (last status %+v)", id, err, st)
	}
	if fromSlurm(st) {
		return st
	}
	return h.waitFor(id, "told by slurmctld", fromSlurm)
}

// fromSlurm reports whether st is slurmctld's answer, not one from wick's record.
func fromSlurm(st *spec.AppStatus) bool {
	return !st.LastKnown && !strings.Contains(st.Msg, "Slurm no longer knows")
}

// waitFor polls the job's status until ok, within testTimeout.
func (h *harness) waitFor(id string, what string, ok func(*spec.AppStatus) bool) *spec.AppStatus {
	h.t.Helper()
	deadline := time.Now().Add(testkit.Scale(testTimeout))
	for {
		ctx, cancel := context.WithTimeout(context.Background(), testkit.Scale(20*time.Second))
		d, err := h.s.Describe(ctx, id)
		cancel()
		if err != nil {
			h.t.Fatal(err)
		}
		if ok(&d.Status) {
			return &d.Status
		}
		if time.Now().After(deadline) {
			h.t.Fatalf("job %s: not %s within %s: %+v", id, what, testTimeout, d.Status)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// lines reads every line of a replica (not following).
func (h *harness) lines(id, role string, k int, opts sched.LogOptions) []sched.Line {
	h.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), testkit.Scale(testTimeout))
	defer cancel()
	it, err := h.s.Logs(ctx, id, role, k, opts)
	if err != nil {
		h.t.Fatal(err)
	}
	defer it.Close()
	var out []sched.Line
	for {
		l, err := it.Next(ctx)
		if err == io.EOF {
			return out
		}
		if err != nil {
			h.t.Fatalf("logs of %s %s/%d: %v", id, role, k, err)
		}
		out = append(out, l)
	}
}

func texts(ls []sched.Line) string {
	var b strings.Builder
	for _, l := range ls {
		b.WriteString(string(l.Stream) + ":" + l.Text + "\n")
	}
	return b.String()
}

func replica(st *spec.AppStatus, role string, k int) *spec.ReplicaStatus {
	for i := range st.Roles {
		for j := range st.Roles[i].Replicas {
			r := &st.Roles[i].Replicas[j]
			if r.Role == role && r.ID == k {
				return r
			}
		}
	}
	return nil
}

func TestClusterEcho(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	app := &spec.AppDef{Name: "echo", Roles: []spec.Role{testRole("echo", 1, "echo", "hello slurm", "${app_id}")}}
	id := h.submit(app, nil)
	st := h.wait(id)
	if st.State != spec.Succeeded {
		t.Fatalf("state %s, want SUCCEEDED: %+v", st.State, st)
	}
	r := replica(st, "echo", 0)
	if r == nil || r.State != spec.Succeeded || r.ExitCode == nil || *r.ExitCode != 0 || !strings.HasPrefix(r.Hostname, "node") {
		t.Errorf("replica %+v", r)
	}
	if code, ok := st.ExitCode(); !ok || code != 0 {
		t.Errorf("exit code %d %v", code, ok)
	}
	got := texts(h.lines(id, "echo", 0, sched.LogOptions{}))
	if got != "stdout:hello slurm "+id+"\n" {
		t.Errorf("logs %q", got)
	}
	if _, err := os.Stat(filepath.Join(h.work, "slurm-"+id+"-echo-0.out")); err != nil {
		t.Errorf("TorchX's log file name: %v", err)
	}
	// The handle's job id is what describe, list and the record know it by.
	ctx := context.Background()
	apps, err := h.s.List(ctx)
	if err != nil || len(apps) != 1 || apps[0].AppID != id || apps[0].State != spec.Succeeded || apps[0].Handle != "slurm://test/"+id {
		t.Errorf("list: %+v, %v", apps, err)
	}
	d, err := h.s.Describe(ctx, id)
	if err != nil || d.App == nil || d.App.Name != "echo" || d.App.Roles[0].Args[0] != "hello slurm" {
		t.Errorf("describe: %+v, %v", d, err)
	}
}

// TestClusterFailingReplica: one replica exits 3; the app fails with that code and the
// other replica is stopped (srun --kill-on-bad-exit). Replica 1 fails once replica 0
// runs (it touches a file: the nodes are this machine): a task that fails before srun
// has launched them all escapes --kill-on-bad-exit (a Slurm 22.05 race seen here) and
// lives until --wait=60, as a second's head start did not prevent at load 30.
func TestClusterFailingReplica(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	up := filepath.Join(t.TempDir(), "replica 0 runs")
	role := testRole("train", 2, "sh", "-c", `echo "rank $WICK_REPLICA_ID"; if [ "$WICK_REPLICA_ID" = 1 ]; then while [ ! -e "$0" ]; do sleep 0.05; done; echo boom >&2; printf '{"message": {"message": "ValueError: boom", "extraInfo": {}}}' >"$TORCHELASTIC_ERROR_FILE"; exit 3; fi; touch "$0"; sleep 60`, up)
	id := h.submit(&spec.AppDef{Name: "fail", Roles: []spec.Role{role}}, nil)
	st := h.wait(id)
	if st.State != spec.Failed {
		t.Fatalf("state %s, want FAILED", st.State)
	}
	if code, ok := st.ExitCode(); !ok || code != 3 {
		t.Errorf("app exit code %d (%v), want 3: %+v", code, ok, st)
	}
	r1 := replica(st, "train", 1)
	if r1 == nil || r1.State != spec.Failed || r1.ExitCode == nil || *r1.ExitCode != 3 {
		t.Errorf("replica 1: %+v", r1)
	}
	if r0 := replica(st, "train", 0); r0 == nil || r0.State == spec.Succeeded || r0.State == spec.Running {
		t.Errorf("replica 0 should have been stopped: %+v", r0)
	}
	// The error torchelastic would write (TORCHELASTIC_ERROR_FILE) is the app's error.
	if st.StructuredError != "train/1: ValueError: boom" || r1.StructuredError != "ValueError: boom" {
		t.Errorf("structured error %q", st.StructuredError)
	}
	if got := texts(h.lines(id, "train", 1, sched.LogOptions{Streams: sched.Stderr})); got != "stderr:boom\n" {
		t.Errorf("stderr of replica 1: %q", got)
	}
	// Replica 0's own run (from its start: a busy cluster may keep the job pending
	// long), well short of its sleep 60.
	if r0 := replica(st, "train", 0); r0 == nil || r0.Started.IsZero() || r0.Ended.Sub(r0.Started) > 50*time.Second {
		t.Errorf("replica 0 was not stopped early: %+v", r0)
	}
}

func TestClusterCancel(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	id := h.submit(&spec.AppDef{Name: "sleep", Roles: []spec.Role{testRole("sleep", 1, "sleep", "300")}}, nil)
	h.waitFor(id, "RUNNING", func(st *spec.AppStatus) bool { return st.State == spec.Running })
	if err := h.s.Cancel(context.Background(), id); err != nil {
		t.Fatal(err)
	}
	st := h.wait(id)
	if st.State != spec.Cancelled {
		t.Fatalf("state %s, want CANCELLED", st.State)
	}
	if r := replica(st, "sleep", 0); r == nil || r.State != spec.Cancelled {
		t.Errorf("replica %+v", r)
	}
	// Cancelling again does nothing.
	if err := h.s.Cancel(context.Background(), id); err != nil {
		t.Errorf("second cancel: %v", err)
	}
}

func TestClusterTwoRoles(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	app := &spec.AppDef{Name: "pair", Roles: []spec.Role{
		testRole("server", 1, "sh", "-c", "echo server $WICK_ROLE/$WICK_REPLICA_ID"),
		testRole("client", 1, "sh", "-c", "echo client $WICK_ROLE/$WICK_REPLICA_ID"),
	}}
	id := h.submit(app, nil)
	st := h.wait(id)
	if st.State != spec.Succeeded || len(st.Roles) != 2 {
		t.Fatalf("status %+v", st)
	}
	nodes := map[string]bool{}
	for _, role := range []string{"server", "client"} {
		r := replica(st, role, 0)
		if r == nil || r.State != spec.Succeeded {
			t.Errorf("%s: %+v", role, r)
			continue
		}
		nodes[r.Hostname] = true
		if got := texts(h.lines(id, role, 0, sched.LogOptions{})); got != "stdout:"+role+" "+role+"/0\n" {
			t.Errorf("%s logs %q", role, got)
		}
	}
	if len(nodes) != 2 {
		t.Errorf("components on nodes %v, want two nodes (one per component)", nodes)
	}
}

// TestClusterFollowFromElsewhere follows a running replica's logs from another
// directory (and another Scheduler sharing only $WICK_HOME): the lines come while the
// job writes them, stdout and stderr both, and the iterator ends when the job does.
func TestClusterFollowFromElsewhere(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	role := testRole("talk", 1, "sh", "-c", `for i in 1 2 3 4 5; do echo "out $i"; echo "err $i" >&2; sleep 0.3; done; printf 'no newline'`)
	id := h.submit(&spec.AppDef{Name: "talk", Roles: []spec.Role{role}}, nil)

	other, err := New(sched.Config{Session: "test", StateDir: h.state, WorkDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), testkit.Scale(testTimeout))
	defer cancel()
	it, err := other.Logs(ctx, id, "talk", 0, sched.LogOptions{Follow: true})
	if err != nil {
		t.Fatal(err)
	}
	defer it.Close()
	var got []sched.Line
	for {
		l, err := it.Next(ctx)
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("after %q: %v", texts(got), err)
		}
		got = append(got, l)
	}
	var out, errs []string
	for _, l := range got {
		if l.Stream == sched.Stdout {
			out = append(out, l.Text)
		} else {
			errs = append(errs, l.Text)
		}
	}
	if strings.Join(out, "|") != "out 1|out 2|out 3|out 4|out 5|no newline" || strings.Join(errs, "|") != "err 1|err 2|err 3|err 4|err 5" {
		t.Errorf("followed lines:\n%s", texts(got))
	}
	if last := got[len(got)-1]; !last.Partial || last.Text != "no newline" {
		t.Errorf("last line %+v, want the partial line", last)
	}
	// Lines were read as they came: their times spread over the job's ~1.5 s.
	if spread := got[len(got)-1].Time.Sub(got[0].Time); spread < 500*time.Millisecond {
		t.Errorf("lines read within %s of each other: not followed live", spread)
	}
	// since/until work on those times.
	mid := got[4].Time
	after := h.lines(id, "talk", 0, sched.LogOptions{Since: mid})
	if len(after) == 0 {
		t.Errorf("since %s kept nothing", mid)
	}
}

func TestClusterErrors(t *testing.T) {
	h := newHarness(t)
	app := &spec.AppDef{Name: "e", Roles: []spec.Role{testRole("e", 1, "true")}}

	t.Run("unknown partition", func(t *testing.T) {
		_, err := h.trySubmit(app, spec.Cfg{OptPartition: "debgu"})
		if !errors.Is(err, ErrRejected) || !strings.Contains(err.Error(), "Invalid partition name specified") || !strings.Contains(err.Error(), `did you mean "debug"?`) {
			t.Errorf("error %v", err)
		}
	})
	t.Run("sbatch rejects", func(t *testing.T) {
		big := app.Clone()
		big.Roles[0].Resource.MemMB = 100 << 20 // 100 TB
		_, err := h.trySubmit(big, nil)
		if !errors.Is(err, ErrRejected) || !strings.Contains(err.Error(), "Memory specification can not be satisfied") {
			t.Errorf("error %v", err)
		}
	})
	t.Run("no slurm on PATH", func(t *testing.T) {
		t.Setenv("PATH", t.TempDir())
		_, err := h.trySubmit(app, nil)
		if !errors.Is(err, ErrNoSlurm) || !strings.Contains(err.Error(), "scontrol not found") {
			t.Errorf("error %v", err)
		}
		if _, err := h.s.Describe(context.Background(), "999999"); !errors.Is(err, ErrNoSlurm) {
			t.Errorf("describe: %v", err)
		}
	})
	t.Run("controller down", func(t *testing.T) {
		conf := downConf(t)
		t.Setenv("SLURM_CONF", conf)
		_, err := h.trySubmit(app, nil)
		if !errors.Is(err, ErrControllerDown) {
			t.Errorf("error %v", err)
		}
	})
	t.Run("cancel with the controller down", func(t *testing.T) {
		// A job of this home, running; then its controller goes down. A scheduler of
		// its own (its own memory of pings) over the same records: h.s must still reach
		// the cluster to stop the job at the end.
		id := h.submit(&spec.AppDef{Name: "c", Roles: []spec.Role{testRole("c", 1, "sleep", "60")}}, nil)
		h.waitFor(id, "RUNNING", func(st *spec.AppStatus) bool { return st.State == spec.Running })
		// Stopped once the controller is back (cleanups run last first: after Setenv's),
		// not at the end of TestClusterErrors: its CPU is wanted below.
		t.Cleanup(func() { h.stop(id) })
		s, err := New(sched.Config{Session: "test", StateDir: h.state, WorkDir: h.work})
		if err != nil {
			t.Fatal(err)
		}
		t.Setenv("SLURM_CONF", downConf(t))
		err = s.Cancel(context.Background(), id)
		if !errors.Is(err, ErrControllerDown) || !strings.Contains(err.Error(), "cannot cancel job "+id) {
			t.Errorf("cancel: %v, want the controller down", err)
		}
	})
	t.Run("pending reason", func(t *testing.T) {
		// More CPUs than any node has: Slurm accepts the job and keeps it PENDING.
		big := app.Clone()
		big.Roles[0].Resource.CPU = 512
		id := h.submit(big, nil)
		st := h.waitFor(id, "PENDING with a reason", func(st *spec.AppStatus) bool {
			return st.State == spec.Pending && st.Msg != ""
		})
		if st.Msg != "pending: PartitionConfig" {
			t.Errorf("msg %q", st.Msg)
		}
		if r := replica(st, "e", 0); r == nil || r.StructuredError != "pending: PartitionConfig" || !r.Started.IsZero() {
			t.Errorf("replica %+v, want pending, not started", r)
		}
		if err := h.s.Cancel(context.Background(), id); err != nil {
			t.Fatal(err)
		}
		// Cancelled before it ran: Slurm's exit code "0:0" is not the replica's (it
		// would read as a success), and it never started.
		st = h.wait(id)
		if r := replica(st, "e", 0); st.State != spec.Cancelled || r == nil || r.ExitCode != nil || !r.Started.IsZero() {
			t.Errorf("cancelled pending job: %s, replica %+v", st.State, r)
		}
		if code, ok := st.ExitCode(); ok {
			t.Errorf("cancelled pending job: exit code %d, want none", code)
		}
	})
	t.Run("pending for resources", func(t *testing.T) {
		// Two replicas that take every CPU of both nodes, then a job that must wait.
		hog := testRole("hog", 2, "sleep", "60")
		hog.Resource.CPU = nodeCPUs(t)
		first := h.submit(&spec.AppDef{Name: "hog", Roles: []spec.Role{hog}}, nil)
		h.waitFor(first, "RUNNING", func(st *spec.AppStatus) bool { return st.State == spec.Running })
		second := h.submit(app, nil)
		st := h.waitFor(second, "PENDING with a reason", func(st *spec.AppStatus) bool {
			return st.State == spec.Pending && st.Msg != ""
		})
		if st.Msg != "pending: Resources" && st.Msg != "pending: Priority" {
			t.Errorf("msg %q, want Slurm's reason (Resources)", st.Msg)
		}
		// Slurm's StartTime of a job waiting for resources is when it expects to start
		// it: the replica has not started.
		if r := replica(st, "e", 0); r == nil || !r.Started.IsZero() {
			t.Errorf("waiting replica %+v, want not started", r)
		}
		h.stop(first)
		if st := h.wait(second); st.State != spec.Succeeded {
			t.Errorf("the waiting job ended %s", st.State)
		}
	})
	t.Run("unknown job", func(t *testing.T) {
		if _, err := h.s.Describe(context.Background(), "999999"); !errors.Is(err, sched.ErrNotFound) {
			t.Errorf("describe: %v", err)
		}
		if err := h.s.Cancel(context.Background(), "999999"); !errors.Is(err, sched.ErrNotFound) {
			t.Errorf("cancel: %v", err)
		}
	})
}

// downConf writes a copy of the cluster's slurm.conf whose controller port nobody
// listens on: the commands then meet a controller that is down.
func downConf(t *testing.T) string {
	t.Helper()
	out, err := exec.Command("scontrol", "show", "config").Output()
	if err != nil {
		t.Fatal(err)
	}
	src := "/etc/slurm/slurm.conf"
	for _, l := range strings.Split(string(out), "\n") {
		if k, v, ok := strings.Cut(l, "="); ok && strings.TrimSpace(k) == "SLURM_CONF" {
			src = strings.TrimSpace(v)
		}
	}
	b, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	var lines []string
	for _, l := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(l, "SlurmctldPort=") {
			l = "SlurmctldPort=6999"
		}
		lines = append(lines, l)
	}
	path := filepath.Join(t.TempDir(), "slurm.conf")
	if err := os.WriteFile(path, []byte(strings.Join(lines, "\n")), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// rendezvous is a two-replica program without torch: rank 0 listens on rank 0's host
// (named by the env var that ${rank0_env} expands to), rank 1 connects there over TCP.
const rendezvous = `
import os, socket, sys, time
host = os.environ[sys.argv[1]]
port = int(sys.argv[2])
rank = int(os.environ["WICK_REPLICA_ID"])
if rank == 0:
    s = socket.socket()
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind((host, port))
    s.listen(1)
    s.settimeout(60)
    c, _ = s.accept()
    print("rank 0 on", host, "got:", c.recv(100).decode(), flush=True)
else:
    deadline = time.time() + 60
    while True:
        try:
            c = socket.create_connection((host, port), timeout=5)
            break
        except OSError:
            if time.time() > deadline:
                raise
            time.sleep(0.1)
    c.sendall(b"hello from rank 1")
    print("rank 1 reached", host, flush=True)
`

// TestClusterRendezvous: the replicas of a 2-node job find rank 0's host from the
// environment (${rank0_env}) and talk over TCP, as torchrun's c10d rendezvous does.
func TestClusterRendezvous(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	python := "/usr/bin/python3"
	if _, err := os.Stat(python); err != nil {
		t.Skipf("%s: %v", python, err)
	}
	port := strconv.Itoa(testkit.FreePort(t)) // the nodes are this machine
	role := testRole("node", 2, python, "-c", rendezvous, "${rank0_env}", port)
	id := h.submit(&spec.AppDef{Name: "rdzv", Roles: []spec.Role{role}}, nil)
	st := h.wait(id)
	r0 := texts(h.lines(id, "node", 0, sched.LogOptions{}))
	r1 := texts(h.lines(id, "node", 1, sched.LogOptions{}))
	if st.State != spec.Succeeded {
		t.Fatalf("state %s\nrank 0: %s\nrank 1: %s", st.State, r0, r1)
	}
	if !strings.Contains(r0, "got: hello from rank 1") || !strings.Contains(r1, "rank 1 reached") {
		t.Errorf("rank 0: %q\nrank 1: %q", r0, r1)
	}
	if a, b := replica(st, "node", 0), replica(st, "node", 1); a == nil || b == nil || a.Hostname == b.Hostname {
		t.Errorf("replicas on %+v and %+v: want two nodes", a, b)
	}
}

// TestClusterRetryRequeues: with max_retries, a failed attempt requeues the job, as in
// TorchX: it goes back to PENDING with a restart counted (Slurm holds a requeued job
// for about two minutes, reason BeginTime, before the next attempt).
func TestClusterRetryRequeues(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	role := testRole("flaky", 1, "sh", "-c", `echo "attempt ${SLURM_RESTART_COUNT:-0}"; [ "${SLURM_RESTART_COUNT:-0}" -ge 1 ] || exit 3`)
	role.MaxRetries = 1
	id := h.submit(&spec.AppDef{Name: "flaky", Roles: []spec.Role{role}}, nil)
	st := h.waitFor(id, "requeued", func(st *spec.AppStatus) bool {
		if st.State.Terminal() {
			t.Fatalf("job ended %s instead of being requeued: %+v", st.State, st)
		}
		return st.NumRestarts == 1 && st.State == spec.Pending
	})
	if r := replica(st, "flaky", 0); r == nil || r.State != spec.Pending || r.ExitCode != nil {
		t.Errorf("requeued replica: %+v", r)
	}
	if got := texts(h.lines(id, "flaky", 0, sched.LogOptions{})); got != "stdout:attempt 0\n" {
		t.Errorf("logs %q", got)
	}
}

// TestClusterForgottenJob: once slurmctld has purged a job (MinJobAge after its end)
// and there is no accounting, status answers from wick's record and the replicas' exit
// files, and never claims more than they say. The purge is stood in for by moving a
// finished job's record to a job id slurmctld has never known.
func TestClusterForgottenJob(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	app := &spec.AppDef{Name: "gone", Roles: []spec.Role{
		testRole("ok", 1, "true"),
		testRole("bad", 1, "sh", "-c", "sleep 1; exit 4"),
	}}
	id := h.submit(app, nil)
	if st := h.wait(id); st.State != spec.Failed {
		t.Fatalf("state %s", st.State)
	}
	forget := func(id, ghost string, keepExit bool) {
		t.Helper()
		rec, err := h.s.loadRecord(id)
		if err != nil || rec == nil {
			t.Fatal(err, rec)
		}
		rec.JobID = ghost
		for i := range rec.Replicas {
			if !keepExit {
				rec.Replicas[i].ExitFile += ".missing"
			}
		}
		if err := h.s.saveRecord(rec); err != nil {
			t.Fatal(err)
		}
	}
	ctx := context.Background()
	// With every exit status there: FAILED, with the failing replica's code.
	forget(id, "990000001", true)
	d, err := h.s.Describe(ctx, "990000001")
	if err != nil {
		t.Fatal(err)
	}
	if st := d.Status; st.State != spec.Failed || replica(&st, "bad", 0).ExitCode == nil || *replica(&st, "bad", 0).ExitCode != 4 {
		t.Errorf("forgotten failed job: %+v", st)
	}
	// A job last seen RUNNING whose replicas left no exit status: the batch log says
	// srun exited with code 4, so the job failed; which replica did is not known
	// (UNKNOWN, not a guess), and the message says why.
	rec, _ := h.s.loadRecord("990000001")
	rec.Last.State = spec.Running
	for i := range rec.Last.Roles {
		for j := range rec.Last.Roles[i].Replicas {
			rep := &rec.Last.Roles[i].Replicas[j]
			rep.State, rep.ExitCode, rep.Ended = spec.Running, nil, time.Time{}
		}
	}
	if err := h.s.saveRecord(rec); err != nil {
		t.Fatal(err)
	}
	forget("990000001", "990000002", false)
	d, err = h.s.Describe(ctx, "990000002")
	if err != nil {
		t.Fatal(err)
	}
	if st := d.Status; st.State != spec.Failed || !strings.Contains(st.Msg, "Slurm no longer knows the job: srun exited with code 4") ||
		replica(&st, "ok", 0).State != spec.UnknownState || replica(&st, "bad", 0).State != spec.UnknownState {
		t.Errorf("forgotten running job: %+v", st)
	}
	apps, err := h.s.List(ctx)
	if err != nil || len(apps) != 3 {
		t.Errorf("list: %d apps, %v", len(apps), err)
	}
}

// TestClusterAccounting: with accounting (make slurm-up WICK_SLURM_ACCOUNTING=1), sacct
// reports wick's jobs, and once slurmctld has purged a job status answers from sacct.
// Without accounting it skips: the cluster CI starts has none (sacct's absence is what
// the other tests cover).
func TestClusterAccounting(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	if out, err := exec.Command("sacct", "-n", "-X", "-j", "1").CombinedOutput(); err != nil {
		t.Skipf("no accounting on this cluster (sacct: %s); WICK_SLURM_ACCOUNTING=1 make slurm-up starts one with it", strings.TrimSpace(string(out)))
	}
	role := testRole("acct", 2, "sh", "-c", "exit 3")
	id := h.submit(&spec.AppDef{Name: "acct", Roles: []spec.Role{role}}, nil)
	if st := h.wait(id); st.State != spec.Failed {
		t.Fatalf("state %s", st.State)
	}
	ctx := context.Background()
	// sacct is eventually consistent: its records come a few seconds after the end.
	deadline := time.Now().Add(testkit.Scale(60 * time.Second))
	var comps []component
	for {
		var err error
		comps, err = sacctJob(ctx, id)
		if err == nil && len(comps) == 2 && comps[0].State != "RUNNING" && comps[1].State != "RUNNING" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("sacct never reported job %s's two components: %+v, %v", id, comps, err)
		}
		time.Sleep(200 * time.Millisecond)
	}
	for _, c := range comps {
		if StateOf(c.State) != spec.Failed || c.Leader != id || !strings.HasPrefix(c.Name, "wick:test:acct:acct:") || c.Nodes == "" {
			t.Errorf("sacct component %+v", c)
		}
		if code, ok := ParseExitCode(c.ExitCode); !ok || code != 3 {
			t.Errorf("sacct exit code %q", c.ExitCode)
		}
	}
	// Past MinJobAge slurmctld forgets the job; status then comes from sacct, not
	// from wick's record.
	out, err := exec.Command("scontrol", "show", "config").Output()
	if err != nil {
		t.Fatal(err)
	}
	age := -1
	for _, l := range strings.Split(string(out), "\n") {
		if k, v, ok := strings.Cut(l, "="); ok && strings.TrimSpace(k) == "MinJobAge" {
			age, _ = strconv.Atoi(strings.Fields(v)[0])
		}
	}
	if age < 0 || age > 30 {
		t.Logf("MinJobAge is %d s: not waiting for the purge (WICK_SLURM_MIN_JOB_AGE=10 makes it short)", age)
		return
	}
	deadline = time.Now().Add(time.Duration(age)*time.Second + testkit.Scale(120*time.Second))
	for {
		if _, err := scontrolJob(ctx, id); errors.Is(err, errGone) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("slurmctld kept job %s past MinJobAge=%d s", id, age)
		}
		time.Sleep(time.Second)
	}
	d, err := h.s.Describe(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	st := d.Status
	if st.State != spec.Failed || strings.Contains(st.Msg, "no longer knows") || len(st.Roles) != 1 || len(st.Roles[0].Replicas) != 2 {
		t.Errorf("status after the purge: %+v", st)
	}
	if r := replica(&st, "acct", 1); r == nil || r.Hostname == "" || r.ExitCode == nil || *r.ExitCode != 3 {
		t.Errorf("replica after the purge: %+v", r)
	}
}

// TestClusterReusedJobID: a record whose job id Slurm now gives another job (a cluster
// whose ids started over) answers from the record, not from the stranger.
func TestClusterReusedJobID(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	other := h.submit(&spec.AppDef{Name: "other", Roles: []spec.Role{testRole("x", 1, "true")}}, nil)
	h.wait(other)
	mine := h.submit(&spec.AppDef{Name: "mine", Roles: []spec.Role{testRole("y", 1, "sh", "-c", "exit 2")}}, nil)
	h.wait(mine)
	// Move mine's record onto other's id.
	rec, err := h.s.loadRecord(mine)
	if err != nil || rec == nil {
		t.Fatal(err)
	}
	if err := os.Remove(h.s.recordPath(other)); err != nil {
		t.Fatal(err)
	}
	rec.JobID = other
	if err := h.s.saveRecord(rec); err != nil {
		t.Fatal(err)
	}
	d, err := h.s.Describe(context.Background(), other)
	if err != nil {
		t.Fatal(err)
	}
	if d.Status.Name != "mine" || d.Status.State != spec.Failed || replica(&d.Status, "y", 0) == nil {
		t.Errorf("status %+v", d.Status)
	}
}

// TestClusterJobDir: job_dir, created when missing, holds the job's files even when its
// path has spaces and quotes; the job runs there.
func TestClusterJobDir(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	dir := filepath.Join(t.TempDir(), "it's a dir", "runs")
	id := h.submit(&spec.AppDef{Name: "where", Roles: []spec.Role{testRole("pwd", 1, "pwd")}}, spec.Cfg{OptJobDir: dir})
	if st := h.wait(id); st.State != spec.Succeeded {
		t.Fatalf("state %s: %+v", st.State, st)
	}
	if got := texts(h.lines(id, "pwd", 0, sched.LogOptions{})); got != "stdout:"+dir+"\n" {
		t.Errorf("pwd printed %q, want %q", got, dir)
	}
	for _, f := range []string{"slurm-" + id + "-pwd-0.out", "slurm-" + id + "-pwd-0.exit", "slurm-" + id + ".out"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			t.Errorf("%s: %v", f, err)
		}
	}
}

// TestClusterLineTimes: a finished job's lines, read by no one while it ran, carry the
// times they were written (from the replica's .times index, to its 200 ms sampling),
// so that the combined view interleaves stdout and stderr as written and since/until
// cut between them.
func TestClusterLineTimes(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	role := testRole("w", 1, "sh", "-c", `echo out 1; echo err 1 >&2; sleep 1; echo out 2; echo err 2 >&2; sleep 1; echo out 3`)
	id := h.submit(&spec.AppDef{Name: "times", Roles: []spec.Role{role}}, nil)
	if st := h.wait(id); st.State != spec.Succeeded {
		t.Fatalf("state %s", st.State)
	}
	got := h.lines(id, "w", 0, sched.LogOptions{})
	var order []string
	at := map[string]time.Time{}
	for _, l := range got {
		order = append(order, l.Text)
		at[l.Text] = l.Time
	}
	if len(order) != 5 || order[0][4:] != "1" || order[1][4:] != "1" || order[2][4:] != "2" || order[3][4:] != "2" || order[4] != "out 3" {
		t.Fatalf("combined order %q", order)
	}
	if d := at["out 3"].Sub(at["out 1"]); d < 1500*time.Millisecond || d > 10*time.Second {
		t.Errorf("out 1 -> out 3: %s, want about 2 s", d)
	}
	since := h.lines(id, "w", 0, sched.LogOptions{Since: at["out 2"].Add(-100 * time.Millisecond), Until: at["out 3"]})
	if len(since) != 2 || since[0].Text[4:] != "2" || since[1].Text[4:] != "2" {
		t.Errorf("since out 2, until out 3: %q", texts(since))
	}
}

// nodeCPUs is the CPU count of the cluster's nodes (they are alike).
func nodeCPUs(t *testing.T) int {
	t.Helper()
	out, err := exec.Command("sinfo", "-h", "-N", "-o", "%c").Output()
	if err != nil {
		t.Fatal(err)
	}
	n, err := strconv.Atoi(strings.TrimSpace(strings.Split(strings.TrimSpace(string(out)), "\n")[0]))
	if err != nil || n < 1 {
		t.Fatalf("sinfo CPUs %q: %v", out, err)
	}
	return n
}
