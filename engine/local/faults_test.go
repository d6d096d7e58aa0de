package local

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/wick-dev/wick/engine/logs"
	"github.com/wick-dev/wick/engine/sched"
	"github.com/wick-dev/wick/engine/spec"
	"github.com/wick-dev/wick/internal/testkit"
)

// groupMembers lists the live (not zombie) processes of a process group.
func groupMembers(t testing.TB, pgid int) []int {
	t.Helper()
	entries, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatal(err)
	}
	var pids []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		i := bytes.LastIndexByte(b, ')')
		f := strings.Fields(string(b[i+1:]))
		if len(f) > 3 && f[2] == strconv.Itoa(pgid) && f[0] != "Z" && f[0] != "X" {
			pids = append(pids, pid)
		}
	}
	return pids
}

// waitGone waits until no process of the groups is alive.
func waitGone(t testing.TB, pgids []int) {
	t.Helper()
	deadline := time.Now().Add(testkit.Scale(10 * time.Second))
	for {
		var left []int
		for _, g := range pgids {
			left = append(left, groupMembers(t, g)...)
		}
		if len(left) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("processes survive: %v", left)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// runningGroups waits until every replica runs with a grandchild, and returns their
// process groups.
func runningGroups(t testing.TB, s *Scheduler, id string) []int {
	t.Helper()
	st := waitState(t, s, id, allRunning)
	var pgids []int
	for _, r := range st.Roles {
		for _, rep := range r.Replicas {
			pgids = append(pgids, rep.PID)
		}
	}
	deadline := time.Now().Add(testkit.Scale(10 * time.Second))
	for _, g := range pgids {
		for len(groupMembers(t, g)) < 3 { // sh and two sleeps
			if time.Now().After(deadline) {
				t.Fatalf("group %d has %v", g, groupMembers(t, g))
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	return pgids
}

// family is a replica that leaves a grandchild behind: sh runs one sleep in the
// background and waits on another.
func family(n int) spec.Role {
	r := role("family", "sh", "-c", "sleep 100 & sleep 100")
	r.NumReplicas = n
	return r
}

func TestCancelStopsGrandchildren(t *testing.T) {
	s := testScheduler(t, false)
	id := start(t, s, appOf("cancel", family(2)), spec.Cfg{OptStopTimeout: 5.0})
	pgids := runningGroups(t, s, id)
	began := time.Now()
	if err := s.Cancel(context.Background(), id); err != nil {
		t.Fatal(err)
	}
	st := waitApp(t, s, id)
	if st.State != spec.Cancelled {
		t.Fatalf("state %s %s", st.State, st.Msg)
	}
	if d := time.Since(began); d > 3*time.Second {
		t.Errorf("cancel took %v: SIGTERM should have been enough", d)
	}
	for k := range 2 {
		if r := replicaOf(t, st, "family", k); r.State != spec.Cancelled || *r.ExitCode != 128+15 {
			t.Errorf("replica %d: %+v", k, r)
		}
	}
	waitGone(t, pgids)
	// Cancelling a terminal app does nothing.
	if err := s.Cancel(context.Background(), id); err != nil {
		t.Error(err)
	}
}

func TestCancelEscalatesToSIGKILL(t *testing.T) {
	s := testScheduler(t, false)
	// A replica that ignores SIGTERM: SIGKILL follows after stop_timeout.
	r := role("stubborn", "sh", "-c", "trap '' TERM; echo ready; while :; do sleep 0.05; done")
	id := start(t, s, appOf("stubborn", r), spec.Cfg{OptStopTimeout: 0.3})
	it, err := s.Logs(context.Background(), id, "stubborn", 0, sched.LogOptions{Follow: true})
	if err != nil {
		t.Fatal(err)
	}
	defer it.Close()
	if l, err := it.Next(context.Background()); err != nil || l.Text != "ready" {
		t.Fatalf("%v %v", l, err)
	}
	began := time.Now()
	s.Cancel(context.Background(), id)
	st := waitApp(t, s, id)
	if d := time.Since(began); d < 250*time.Millisecond || d > 5*time.Second {
		t.Errorf("stopped after %v, want about the 0.3 s stop timeout", d)
	}
	if rep := replicaOf(t, st, "stubborn", 0); st.State != spec.Cancelled || *rep.ExitCode != 128+9 {
		t.Errorf("%s %+v", st.State, rep)
	}
}

func TestKillingTheSupervisorLeavesNoReplica(t *testing.T) {
	s := testScheduler(t, false)
	id := start(t, s, appOf("orphans", family(2)), nil)
	pgids := runningGroups(t, s, id)
	dir, raw, err := s.load(id)
	if err != nil {
		t.Fatal(err)
	}
	follow, err := s.Logs(context.Background(), id, "family", 0, sched.LogOptions{Follow: true})
	if err != nil {
		t.Fatal(err)
	}
	defer follow.Close()
	waitReaper(t, raw.Supervisor.PID)
	if err := unix.Kill(raw.Supervisor.PID, unix.SIGKILL); err != nil {
		t.Fatal(err)
	}
	// Leaders die with the supervisor (Pdeathsig), their children with the reaper.
	waitGone(t, pgids)
	st := waitApp(t, s, id)
	if st.State != spec.Failed || st.Msg != reasonDied {
		t.Fatalf("app: %s %q", st.State, st.Msg)
	}
	for k := range 2 {
		if r := replicaOf(t, st, "family", k); r.State != spec.Failed || r.StructuredError != reasonDied {
			t.Errorf("replica %d: %+v", k, r)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), testkit.Scale(10*time.Second))
	defer cancel()
	if _, err := follow.Next(ctx); !errors.Is(err, io.EOF) {
		t.Errorf("follower after the supervisor died: %v", err)
	}
	// The reaper writes the verdict: no reader has to work it out. Readers do not
	// wait for it (they reconcile), so neither does the follower above.
	for deadline := time.Now().Add(testkit.Scale(10 * time.Second)); ; time.Sleep(5 * time.Millisecond) {
		onDisk, err := readState(dir)
		if err == nil && onDisk.State == spec.Failed {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("on disk: %v %v", onDisk.State, err)
		}
	}
}

func TestReconcileDeadSupervisorAndPidReuse(t *testing.T) {
	s := testScheduler(t, false)
	id := start(t, s, appOf("sleepy", role("s", "sleep", "100")), nil)
	waitState(t, s, id, allRunning)
	dir := filepath.Join(s.appsDir(), id)
	st, _ := readState(dir)
	real := st.Supervisor
	self, err := logs.Self()
	if err != nil {
		t.Fatal(err)
	}
	// The same pid with another start time is another process, and so is the same
	// pid and start time in another boot (a record from before a reboot): the app's
	// supervisor is gone, whatever runs under that pid now.
	for _, other := range []logs.Proc{
		{PID: os.Getpid(), Start: real.Start + 12345, Boot: self.Boot},
		{PID: os.Getpid(), Start: self.Start, Boot: "00000000-0000-4000-8000-000000000000"},
	} {
		st.Supervisor, st.Owner = other, other
		writeJSONAtomic(dir, stateFile, st)
		d, err := s.Describe(context.Background(), id)
		if err != nil {
			t.Fatal(err)
		}
		if d.Status.State != spec.Failed || d.Status.Msg != reasonDied || d.Status.Roles[0].Replicas[0].State != spec.Failed {
			t.Errorf("%+v: reconciled: %s %q %+v", other, d.Status.State, d.Status.Msg, d.Status.Roles)
		}
		apps, _ := s.List(context.Background())
		if len(apps) != 1 || apps[0].State != spec.Failed {
			t.Errorf("%+v: list: %+v", other, apps)
		}
	}
	// Give the real supervisor back its state and stop the app.
	st.Supervisor, st.Owner = real, real
	writeJSONAtomic(dir, stateFile, st)
	if d, _ := s.Describe(context.Background(), id); d.Status.State != spec.Running {
		t.Errorf("live supervisor reads %s", d.Status.State)
	}
	s.Cancel(context.Background(), id)
	waitApp(t, s, id)
}

func TestTwentyConcurrentLaunches(t *testing.T) {
	s := testScheduler(t, false)
	const n = 20
	ids := make([]string, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			r := role("echo", "sh", "-c", "echo app $WICK_APP_ID; echo err >&2")
			r.NumReplicas = 2
			info := dryRun(t, s, appOf(fmt.Sprintf("app%d", i), r), nil)
			if err := s.Schedule(context.Background(), info, nil); err != nil {
				t.Error(err)
				return
			}
			ids[i] = info.AppID
		})
	}
	wg.Wait()
	for _, id := range ids {
		if id == "" {
			t.FailNow()
		}
		st := waitApp(t, s, id)
		if st.State != spec.Succeeded {
			t.Errorf("%s: %s %s", id, st.State, st.Msg)
		}
		for k := range 2 {
			if got := lineTexts(logLines(t, s, id, "echo", k, sched.LogOptions{Streams: sched.Stdout})); got != "app "+id+"\n" {
				t.Errorf("%s/%d: %q", id, k, got)
			}
		}
	}
	apps, err := s.List(context.Background())
	if err != nil || len(apps) != n {
		t.Fatalf("list: %d apps, %v", len(apps), err)
	}
	for i := 1; i < len(apps); i++ {
		if apps[i].Created.After(apps[i-1].Created) {
			t.Error("list is not newest first")
		}
	}
}

func TestUnwritableLogDir(t *testing.T) {
	s := testScheduler(t, false)
	file := filepath.Join(t.TempDir(), "file")
	os.WriteFile(file, nil, 0o644)
	app := appOf("echo", role("echo", "echo", "hi"))
	for _, logDir := range []string{filepath.Join(file, "logs"), "/proc/wick-logs"} {
		resolved, _ := s.RunOpts().Resolve(spec.Cfg{OptLogDir: logDir})
		sub := sched.Submission{AppID: "echo-x", Session: "test", App: app, Cfg: resolved}
		_, derr := s.DryRun(context.Background(), sub)
		// Whatever the dry run could tell, Schedule refuses before starting anything.
		info := &sched.DryRunInfo{Scheduler: s.name, Submission: sub}
		req := *dryRun(t, s, app, nil).Request.(*Request)
		req.AppID, req.StateDir = "echo-x", filepath.Join(s.appsDir(), "echo-x")
		req.LogDir = filepath.Join(logDir, "test", "echo-x")
		for i := range req.Roles[0].Replicas {
			req.Roles[0].Replicas[i].LogDir = filepath.Join(req.LogDir, "echo", "0")
		}
		info.Request = &req
		serr := s.Schedule(context.Background(), info, nil)
		if serr == nil || !strings.Contains(serr.Error(), "log directory") || strings.Contains(serr.Error(), "\n") {
			t.Errorf("%s: Schedule: %v", logDir, serr)
		}
		if logDir != "/proc/wick-logs" && (derr == nil || !strings.Contains(derr.Error(), "not a directory")) {
			t.Errorf("%s: DryRun: %v", logDir, derr)
		}
		if _, err := os.Stat(s.appsDir()); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s: state written for an app that could not start", logDir)
		}
	}
}

func TestSupervisorThatCannotStart(t *testing.T) {
	s := testScheduler(t, false)
	s.cfg.Self = []string{"false"}
	info := dryRun(t, s, appOf("echo", role("echo", "echo")), nil)
	err := s.Schedule(context.Background(), info, nil)
	if err == nil || !strings.Contains(err.Error(), "supervisor exited before starting") {
		t.Fatalf("Schedule: %v", err)
	}
	d, derr := s.Describe(context.Background(), info.AppID)
	if derr != nil || d.Status.State != spec.Failed {
		t.Errorf("state after a failed start: %+v %v", d, derr)
	}
	s.cfg.Self = nil
	if err := s.Schedule(context.Background(), dryRun(t, s, appOf("echo", role("echo", "echo")), nil), nil); err == nil {
		t.Error("scheduled without a command to run the supervisor")
	}
}

func TestCancelBeforeTheSupervisorStarts(t *testing.T) {
	s := testScheduler(t, false)
	// A supervisor that starts late: the cancel lands while the launcher waits.
	s.cfg.Self = []string{"sh", "-c", `sleep 0.3; exec "$0" "$@"`, os.Args[0]}
	info := dryRun(t, s, appOf("late", role("late", "sleep", "100")), nil)
	errc := make(chan error, 1)
	go func() { errc <- s.Schedule(context.Background(), info, nil) }()
	testkit.Wait(t, 10*time.Second, "the app's state file", func() (bool, string) {
		_, err := os.Stat(filepath.Join(s.appsDir(), info.AppID, stateFile))
		return err == nil, fmt.Sprint(err)
	})
	if err := s.Cancel(context.Background(), info.AppID); err != nil {
		t.Fatal(err)
	}
	if err := <-errc; err != nil {
		t.Fatal(err)
	}
	st := waitApp(t, s, info.AppID)
	if r := replicaOf(t, st, "late", 0); st.State != spec.Cancelled || r.PID != 0 {
		t.Errorf("%s %+v", st.State, r)
	}
}

func TestDeleteRefusesRunningUnlessForced(t *testing.T) {
	s := testScheduler(t, false)
	id := start(t, s, appOf("del", family(1)), spec.Cfg{OptStopTimeout: 5.0})
	pgids := runningGroups(t, s, id)
	logDir := filepath.Dir(filepath.Dir(replicaLogDir(t, s, id, "family", 0)))
	if err := s.Delete(context.Background(), id, false); !errors.Is(err, sched.ErrRunning) {
		t.Fatalf("delete running: %v", err)
	}
	if err := s.Delete(context.Background(), id, true); err != nil {
		t.Fatal(err)
	}
	waitGone(t, pgids)
	if _, err := s.Describe(context.Background(), id); !errors.Is(err, sched.ErrNotFound) {
		t.Errorf("describe deleted: %v", err)
	}
	if _, err := os.Stat(logDir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("logs survive delete: %v", err)
	}
	// A finished app is deleted without force.
	id = start(t, s, appOf("done", role("e", "true")), nil)
	waitApp(t, s, id)
	if err := s.Delete(context.Background(), id, false); err != nil {
		t.Fatal(err)
	}
	if apps, _ := s.List(context.Background()); len(apps) != 0 {
		t.Errorf("list after delete: %+v", apps)
	}
}

func TestUnknownAppsAreNotFound(t *testing.T) {
	s := testScheduler(t, false)
	ctx := context.Background()
	for _, id := range []string{"nope-123", "../../etc", "", "a/b"} {
		_, err1 := s.Describe(ctx, id)
		err2 := s.Cancel(ctx, id)
		err3 := s.Delete(ctx, id, true)
		_, err4 := s.Logs(ctx, id, "r", 0, sched.LogOptions{})
		_, err5 := s.Wait(ctx, id)
		for i, err := range []error{err1, err2, err3, err4, err5} {
			if !errors.Is(err, sched.ErrNotFound) {
				t.Errorf("%q op %d: %v", id, i, err)
			}
		}
	}
	// An app of the other local scheduler is not this one's.
	id := start(t, s, appOf("e", role("e", "true")), nil)
	waitApp(t, s, id)
	other := &Scheduler{name: NameDir, dir: true, cfg: s.cfg, watcher: s.watcher}
	if _, err := other.Describe(ctx, id); !errors.Is(err, sched.ErrNotFound) {
		t.Errorf("local_dir sees a local_cwd app: %v", err)
	}
	if _, err := s.Logs(ctx, id, "nope", 0, sched.LogOptions{}); err == nil || !strings.Contains(err.Error(), `no role "nope"`) {
		t.Errorf("unknown role: %v", err)
	}
	if _, err := s.Logs(ctx, id, "e", 3, sched.LogOptions{}); err == nil || !strings.Contains(err.Error(), "no replica 3") {
		t.Errorf("unknown replica: %v", err)
	}
}

// waitReaper waits until the supervisor has started its reaper (after reaperDelay)
// and returns its pid.
// The tests that call it kill the supervisor: at the test's end, before its
// directories are removed, it waits for the reaper to have finished (it kills what is
// left, drains the pipes, ends the logs and saves the app's end there; a status read
// may have saved the end before it: CI's "TempDir RemoveAll cleanup: directory not
// empty" while it wrote).
func waitReaper(t testing.TB, supervisor int) int {
	t.Helper()
	deadline := time.Now().Add(testkit.Scale(10 * time.Second))
	for time.Now().Before(deadline) {
		entries, _ := os.ReadDir("/proc")
		for _, e := range entries {
			b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
			if err != nil {
				continue
			}
			f := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+1:]))
			if len(f) > 1 && f[1] == strconv.Itoa(supervisor) {
				cmd, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
				if bytes.Contains(cmd, []byte(SuperviseVerb)) {
					pid, _ := strconv.Atoi(e.Name())
					t.Cleanup(func() { waitProcGone(t, pid) })
					return pid
				}
			}
		}
		time.Sleep(5 * time.Millisecond)
	}
	t.Fatal("the supervisor started no reaper")
	return 0
}

// A cancel repeated while the app stops (a retry, or cancel then delete --force)
// keeps the stop timeout: the replica finishes saving its checkpoint.
func TestSecondCancelKeepsTheGrace(t *testing.T) {
	s := testScheduler(t, false)
	r := role("saver", "sh", "-c", "trap 'sleep 1; echo saved; exit 0' TERM; echo ready; while :; do sleep 0.05; done")
	id := start(t, s, appOf("saver", r), spec.Cfg{OptStopTimeout: 30.0})
	waitLine(t, s, id, "saver", "ready")
	for range 3 {
		if err := s.Cancel(context.Background(), id); err != nil {
			t.Fatal(err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	st := waitApp(t, s, id)
	if st.State != spec.Cancelled {
		t.Errorf("app %s", st.State)
	}
	if got := lineTexts(logLines(t, s, id, "saver", 0, sched.LogOptions{Streams: sched.Stdout})); got != "ready\nsaved\n" {
		t.Errorf("the replica was killed before it saved: %q", got)
	}
}

// Kill does not wait for the stop timeout.
func TestKillKillsAtOnce(t *testing.T) {
	s := testScheduler(t, false)
	r := role("stubborn", "sh", "-c", "trap '' TERM; echo ready; while :; do sleep 0.05; done")
	// A grace period longer than any scaled bound: an end within the bound is the kill's.
	id := start(t, s, appOf("stubborn", r), spec.Cfg{OptStopTimeout: 600.0})
	waitLine(t, s, id, "stubborn", "ready")
	began := time.Now()
	s.Cancel(context.Background(), id)
	time.Sleep(50 * time.Millisecond)
	if err := s.Kill(context.Background(), id); err != nil {
		t.Fatal(err)
	}
	st := waitApp(t, s, id)
	if d := time.Since(began); d > testkit.Scale(10*time.Second) || st.State != spec.Cancelled {
		t.Errorf("%s after %v", st.State, d)
	}
	if code := replicaOf(t, st, "stubborn", 0).ExitCode; code == nil || *code != 137 {
		t.Errorf("exit code %v, want 137", code)
	}
}

// waitLine waits until replica 0 of role has written a line with text.
func waitLine(t *testing.T, s *Scheduler, id, role, text string) {
	t.Helper()
	it, err := s.Logs(context.Background(), id, role, 0, sched.LogOptions{Follow: true})
	if err != nil {
		t.Fatal(err)
	}
	defer it.Close()
	ctx, cancel := context.WithTimeout(context.Background(), testkit.Scale(20*time.Second))
	defer cancel()
	for {
		l, err := it.Next(ctx)
		if err != nil {
			t.Fatalf("waiting for %q: %v", text, err)
		}
		if l.Text == text {
			return
		}
	}
}

func TestReplicasKeepDefaultSignals(t *testing.T) {
	s := testScheduler(t, false)
	// SigIgn in /proc/self/status: a bit mask of the ignored signals.
	id := start(t, s, appOf("sig", role("sig", "sh", "-c", "grep SigIgn /proc/self/status")), nil)
	waitApp(t, s, id)
	got := lineTexts(logLines(t, s, id, "sig", 0, sched.LogOptions{}))
	hex := strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(got), "SigIgn:"))
	mask, err := strconv.ParseUint(hex, 16, 64)
	if err != nil {
		t.Fatalf("reading %q: %v", got, err)
	}
	// Only the standard signals (1-31) are wick's to keep: the real-time ones are
	// inherited from whatever started the test (GNU make ignores 32 and 33), and Go
	// leaves 32, glibc's own, alone.
	if std := mask & (1<<31 - 1); std != 0 {
		t.Errorf("replica ignores standard signals: mask %#x (%q)", std, got)
	}
}

func TestInterruptedScheduleCancelsTheApp(t *testing.T) {
	s := testScheduler(t, false)
	s.cfg.Self = []string{"sh", "-c", `sleep 0.3; exec "$0" "$@"`, os.Args[0]}
	info := dryRun(t, s, appOf("late", role("late", "sleep", "100")), nil)
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	if err := s.Schedule(ctx, info, nil); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Schedule: %v", err)
	}
	if st := waitApp(t, s, info.AppID); st.State != spec.Cancelled {
		t.Errorf("interrupted start: %s %s", st.State, st.Msg)
	}
}

// TestInterruptedScheduleWhoseSupervisorDied: a Ctrl-C that reaches the supervisor
// between its fork and its setsid (it is still in the launcher's process group then)
// kills it before it takes the app over. The launcher, still the app's owner, ends
// the app CANCELLED; it was left to read as FAILED ("wick exited before the
// supervisor started"), its duration growing with every look. The supervisor here
// is a stand-in killed at that moment: the real window is a few microseconds wide.
func TestInterruptedScheduleWhoseSupervisorDied(t *testing.T) {
	s := testScheduler(t, false)
	s.cfg.Self = []string{"sh", "-c", `sleep 0.3; kill -KILL $$`}
	info := dryRun(t, s, appOf("late", role("late", "sleep", "100")), nil)
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	if err := s.Schedule(ctx, info, nil); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Schedule: %v", err)
	}
	d, err := s.Describe(context.Background(), info.AppID)
	if err != nil {
		t.Fatal(err)
	}
	st := d.Status
	if st.State != spec.Cancelled || st.Msg != "cancelled before it started" || st.Ended.IsZero() {
		t.Fatalf("interrupted start whose supervisor died: %s %q ended %v", st.State, st.Msg, st.Ended)
	}
	if r := replicaOf(t, &st, "late", 0); r.State != spec.Cancelled || r.PID != 0 {
		t.Errorf("replica: %+v", r)
	}
	// A second look: the end of an ended app stays where it was.
	if again, err := s.Describe(context.Background(), info.AppID); err != nil || !again.Status.Ended.Equal(st.Ended) {
		t.Errorf("ended %v, then %v (%v)", st.Ended, again.Status.Ended, err)
	}
}

// The stop timeout protects a replica's whole process group, not only its leader: a
// worker that saves a checkpoint after its agent died of SIGTERM (torchrun) finishes.
func TestStopTimeoutCoversTheGroup(t *testing.T) {
	s := testScheduler(t, false)
	worker := `trap 'sleep 1; echo worker saved; exit 0' TERM; echo worker up; while :; do sleep 0.05; done`
	r := role("agent", "sh", "-c", `sh -c "$0" & wait`, worker)
	id := start(t, s, appOf("agent", r), spec.Cfg{OptStopTimeout: 20.0})
	waitLine(t, s, id, "agent", "worker up")
	began := time.Now()
	if err := s.Cancel(context.Background(), id); err != nil {
		t.Fatal(err)
	}
	st := waitApp(t, s, id)
	if st.State != spec.Cancelled {
		t.Errorf("app %s", st.State)
	}
	if got := lineTexts(logLines(t, s, id, "agent", 0, sched.LogOptions{Streams: sched.Stdout})); got != "worker up\nworker saved\n" {
		t.Errorf("the worker was killed before it saved: %q", got)
	}
	if d := time.Since(began); d > 15*time.Second {
		t.Errorf("the app ended %v after the cancel: the group's end was not noticed", d)
	}
}

// A group that outlives its leader and ignores SIGTERM is killed when the stop
// timeout ends.
func TestLingeringGroupIsKilledAtTheStopTimeout(t *testing.T) {
	s := testScheduler(t, false)
	worker := `trap '' TERM; echo worker up; while :; do sleep 0.05; done`
	r := role("agent", "sh", "-c", `sh -c "$0" & wait`, worker)
	id := start(t, s, appOf("agent", r), spec.Cfg{OptStopTimeout: 1.0})
	waitLine(t, s, id, "agent", "worker up")
	began := time.Now()
	if err := s.Cancel(context.Background(), id); err != nil {
		t.Fatal(err)
	}
	st := waitApp(t, s, id)
	d := time.Since(began)
	if st.State != spec.Cancelled || d < 900*time.Millisecond || d > 15*time.Second {
		t.Errorf("app %s %v after the cancel", st.State, d)
	}
}

// waitProcGone waits until process pid has exited (gone, or a zombie nobody reaped).
func waitProcGone(t testing.TB, pid int) {
	t.Helper()
	testkit.Wait(t, 30*time.Second, fmt.Sprintf("process %d exits", pid), func() (bool, string) {
		st := procState(pid)
		return st == "gone" || st == "Z", st
	})
}
