package local

import (
	"context"
	"errors"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/wick-dev/wick/engine/sched"
	"github.com/wick-dev/wick/engine/spec"
	"github.com/wick-dev/wick/internal/testkit"
)

// envSwap makes the test supervisor play the attacker of TestLogDirSwapAttack between
// the launcher's mkdir and its own open of each replica's log directory:
// "file:TARGET" plants stdout.log as a symbolic link to TARGET, "dir:TARGET" replaces
// the replica's directory by a symbolic link to the directory TARGET, "vanish:APPS"
// removes every app directory in APPS.
const envSwap = "WICK_TEST_SWAP"

func swapHook(spec string) func(dir string) {
	kind, target, ok := strings.Cut(spec, ":")
	if !ok {
		return nil
	}
	return func(dir string) {
		switch kind {
		case "file":
			_ = os.Symlink(target, filepath.Join(dir, "stdout.log"))
		case "dir":
			_ = os.Rename(dir, dir+".moved")
			_ = os.Symlink(target, dir)
		case "vanish":
			// A delete that does not wait for the supervisor removes the apps'
			// directories (TARGET) between its takeover and its start.
			entries, _ := os.ReadDir(target)
			for _, e := range entries {
				_ = os.RemoveAll(filepath.Join(target, e.Name()))
			}
		}
	}
}

// TestStateIsPrivateWhateverTheUmask: with umask 0, another user could read launch.json
// (a secret env value) and the replica's stdout. Everything wick creates under
// $WICK_HOME and the log dir must be 0700/0600.
func TestStateIsPrivateWhateverTheUmask(t *testing.T) {
	s := testScheduler(t, false)
	old := syscall.Umask(0)
	defer syscall.Umask(old)
	r := role("echo", "echo", "hello")
	r.Env = map[string]string{"API_TOKEN": "hunter2"}
	id := start(t, s, appOf("echo", r), nil)
	if st := waitApp(t, s, id); st.State != spec.Succeeded {
		t.Fatalf("state %s", st.State)
	}
	if err := s.Cancel(context.Background(), id); err != nil { // writes nothing: terminal
		t.Fatal(err)
	}
	n := 0
	err := filepath.WalkDir(s.cfg.StateDir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if path == s.cfg.StateDir {
			return nil // t.TempDir's, not wick's
		}
		info, err := d.Info()
		if errors.Is(err, fs.ErrNotExist) {
			// Removed since the directory was listed: the supervisor drops its
			// .state.reserve once the final state is written, and may still be
			// doing so when the app reads SUCCEEDED. A file gone leaks nothing.
			return nil
		}
		if err != nil {
			return err
		}
		want := fs.FileMode(0o600)
		if d.IsDir() {
			want = 0o700
		}
		if info.Mode().Perm() != want {
			t.Errorf("%s: mode %#o, want %#o", path, info.Mode().Perm(), want)
		}
		n++
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if n < 10 {
		t.Fatalf("only %d files under the state directory", n)
	}
}

// TestLogDirSwapAttack: a symbolic link put in place between the launcher's mkdir and
// the supervisor's open must not make the supervisor (root here) truncate or write a
// file it did not create.
func TestLogDirSwapAttack(t *testing.T) {
	for _, kind := range []string{"file", "dir"} {
		t.Run(kind, func(t *testing.T) {
			s := testScheduler(t, false)
			victim := t.TempDir()
			target := filepath.Join(victim, "stdout.log")
			if err := os.WriteFile(target, []byte("root's precious file\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			aim := target
			if kind == "dir" {
				aim = victim
			}
			t.Setenv(envSwap, kind+":"+aim)
			info := dryRun(t, s, appOf("echo", role("echo", "echo", "overwritten")), nil)
			err := s.Schedule(context.Background(), info, nil)
			if err == nil {
				t.Fatal("the app started on a swapped log directory")
			}
			if got := readFile(t, target); got != "root's precious file\n" {
				t.Fatalf("the target was written through the link: %q", got)
			}
			entries, _ := os.ReadDir(victim)
			if len(entries) != 1 {
				t.Fatalf("files created in the attacker's directory: %v", entries)
			}
			t.Logf("refused: %v", err)
		})
	}
}

// TestLogDirUnderUnsafeParents: a log_dir whose parents another user can write is
// refused before anything is created; a sticky /tmp-like parent is fine as long as
// what is below it is ours.
func TestLogDirUnderUnsafeParents(t *testing.T) {
	s := testScheduler(t, false)
	app := appOf("echo", role("echo", "echo", "hi"))
	plan := func(logDir string) error {
		cfg, err := s.RunOpts().Resolve(spec.Cfg{OptLogDir: logDir})
		if err != nil {
			t.Fatal(err)
		}
		_, err = s.DryRun(context.Background(), schedSub(app, s, cfg))
		return err
	}
	open := t.TempDir()
	if err := os.Chmod(open, 0o777); err != nil {
		t.Fatal(err)
	}
	if err := plan(filepath.Join(open, "logs")); err == nil || !strings.Contains(err.Error(), "other users can write it") {
		t.Fatalf("world-writable parent: %v", err)
	}
	sticky := t.TempDir()
	if err := os.Chmod(sticky, 0o777|os.ModeSticky); err != nil {
		t.Fatal(err)
	}
	if err := plan(filepath.Join(sticky, "logs")); err != nil {
		t.Fatalf("sticky parent: %v", err)
	}
	// Another user's directory in the sticky one: they could swap what is in it.
	theirs := filepath.Join(sticky, "theirs")
	if err := os.Mkdir(theirs, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(theirs, 54321, 54321); err != nil {
		t.Skipf("cannot chown to another user here: %v", err)
	}
	if err := plan(filepath.Join(theirs, "logs")); err == nil || !strings.Contains(err.Error(), "owned by another user") {
		t.Fatalf("another user's parent: %v", err)
	}
}

func schedSub(app *spec.AppDef, s *Scheduler, cfg spec.Cfg) sched.Submission {
	return sched.Submission{AppID: spec.MakeAppID(app.Name), Session: s.cfg.Session, App: app, Cfg: cfg}
}

// TestAbsurdRunOptions: stop_timeout=1e10 overflowed (cancel killed at once), nan and
// inf were accepted and then failed the launch half way.
func TestAbsurdRunOptions(t *testing.T) {
	s := testScheduler(t, false)
	app := appOf("echo", role("echo", "echo", "hi"))
	for _, v := range []string{"1e10", "86401", "nan", "inf", "-inf", "1e400", "-1"} {
		val, err := s.RunOpts().Cast(OptStopTimeout, v)
		if err == nil {
			var cfg spec.Cfg
			if cfg, err = s.RunOpts().Resolve(spec.Cfg{OptStopTimeout: val}); err == nil {
				_, err = s.DryRun(context.Background(), schedSub(app, s, cfg))
			}
		}
		if err == nil {
			t.Errorf("stop_timeout=%s accepted", v)
			continue
		}
		if !strings.Contains(err.Error(), "stop_timeout") {
			t.Errorf("stop_timeout=%s: error does not name the option: %v", v, err)
		}
	}
	// A float handed over directly (the UI's form) is checked too.
	if _, err := s.RunOpts().Resolve(spec.Cfg{OptStopTimeout: math.NaN()}); err == nil {
		t.Error("NaN accepted by Resolve")
	}
	cfg, _ := s.RunOpts().Resolve(spec.Cfg{OptStopTimeout: 86400.0})
	if _, err := s.DryRun(context.Background(), schedSub(app, s, cfg)); err != nil {
		t.Errorf("stop_timeout=86400: %v", err)
	}
}

// TestFailedLaunchLeavesNothing: a launch failing after the log directories are made
// must remove them (and the app's state directory), or they stay where no verb sees
// them.
func TestFailedLaunchLeavesNothing(t *testing.T) {
	s := testScheduler(t, false)
	info := dryRun(t, s, appOf("echo", role("echo", "echo", "hi")), nil)
	// The apps directory cannot be made: something else is in its place.
	if err := os.MkdirAll(filepath.Dir(s.appsDir()), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(s.appsDir(), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := s.Schedule(context.Background(), info, nil); err == nil {
		t.Fatal("launch succeeded")
	}
	req := info.Request.(*Request)
	if _, err := os.Lstat(req.LogDir); err == nil {
		t.Errorf("the failed launch left %s", req.LogDir)
	}
	// A request whose stop_timeout is absurd (a dry run read back) is refused before
	// anything is made.
	os.Remove(s.appsDir())
	req.StopTimeout = math.Inf(1)
	if err := s.Schedule(context.Background(), info, nil); err == nil || !strings.Contains(err.Error(), "stop_timeout") {
		t.Fatalf("schedule with stop_timeout=inf: %v", err)
	}
	if _, err := os.Lstat(req.LogDir); err == nil {
		t.Errorf("the refused launch left %s", req.LogDir)
	}
}

// TestCorruptStateIsListedAndDeletable: truncated or garbage state made apps vanish
// from list with no word, delete --force refused them, and a state file linked to
// /dev/zero crashed list.
func TestCorruptStateIsListedAndDeletable(t *testing.T) {
	s := testScheduler(t, false)
	corruptions := map[string]func(dir string) error{
		"truncated": func(dir string) error { return truncateHalf(filepath.Join(dir, stateFile)) },
		"garbage": func(dir string) error {
			return os.WriteFile(filepath.Join(dir, stateFile), []byte("\x00\xffgarbage"), 0o600)
		},
		"empty":  func(dir string) error { return os.WriteFile(filepath.Join(dir, stateFile), nil, 0o600) },
		"braces": func(dir string) error { return os.WriteFile(filepath.Join(dir, stateFile), []byte("{}"), 0o600) },
		"devzero": func(dir string) error {
			os.Remove(filepath.Join(dir, stateFile))
			return os.Symlink("/dev/zero", filepath.Join(dir, stateFile))
		},
		"chardev": func(dir string) error {
			os.Remove(filepath.Join(dir, stateFile))
			return syscall.Mknod(filepath.Join(dir, stateFile), syscall.S_IFCHR|0o600, 1<<8|5) // /dev/zero
		},
		"fifo": func(dir string) error {
			os.Remove(filepath.Join(dir, stateFile))
			return syscall.Mkfifo(filepath.Join(dir, stateFile), 0o600)
		},
		"both": func(dir string) error {
			if err := truncateHalf(filepath.Join(dir, launchFile)); err != nil {
				return err
			}
			return os.WriteFile(filepath.Join(dir, stateFile), []byte("nope"), 0o600)
		},
	}
	ids := map[string]string{}
	for what, corrupt := range corruptions {
		id := start(t, s, appOf(what, role("echo", "echo", what)), nil)
		waitApp(t, s, id)
		if err := corrupt(filepath.Join(s.appsDir(), id)); err != nil {
			t.Fatal(err)
		}
		ids[id] = what
	}
	healthy := start(t, s, appOf("healthy", role("echo", "echo", "ok")), nil)
	waitApp(t, s, healthy)

	ctx, cancel := context.WithTimeout(context.Background(), testkit.Scale(10*time.Second))
	defer cancel()
	apps, err := s.List(ctx)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]spec.AppStatus{}
	for _, a := range apps {
		seen[a.AppID] = a
	}
	if seen[healthy].State != spec.Succeeded {
		t.Errorf("the healthy app: %+v", seen[healthy])
	}
	for id, what := range ids {
		a, ok := seen[id]
		if !ok {
			t.Errorf("%s: the app vanished from the list", what)
			continue
		}
		if a.State != spec.UnknownState || !strings.HasPrefix(a.Msg, "corrupt state: ") {
			t.Errorf("%s: listed as %s %q", what, a.State, a.Msg)
		}
		t.Logf("%s: %s", what, a.Msg)
		if _, err := s.Describe(ctx, id); err == nil || !strings.Contains(err.Error(), "corrupt state") {
			t.Errorf("%s: describe: %v", what, err)
		}
		if err := s.Delete(ctx, id, false); err == nil {
			t.Errorf("%s: deleted without force", what)
		}
		logDir := filepath.Join(s.defaultLogDir(), s.cfg.Session, id)
		if _, err := os.Stat(logDir); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		if err := s.Delete(ctx, id, true); err != nil {
			t.Errorf("%s: delete --force: %v", what, err)
		}
		if _, err := os.Stat(logDir); err == nil {
			t.Errorf("%s: delete --force left the logs", what)
		}
		if _, err := os.Stat(filepath.Join(s.appsDir(), id)); err == nil {
			t.Errorf("%s: delete --force left the state", what)
		}
	}
	// local_dir shares the apps directory: it must not list them a second time.
	d := &Scheduler{name: NameDir, dir: true, cfg: s.cfg, watcher: s.watcher}
	if _, err := d.List(ctx); err != nil {
		t.Fatal(err)
	}
}

func truncateHalf(path string) error {
	fi, err := os.Stat(path)
	if err != nil {
		return err
	}
	return os.Truncate(path, fi.Size()/2)
}

// TestReplicaLimits: a million replicas grew the preview past 11 GB; 3500 failed half
// way with "too many open files" after the app had started. Both are refused before
// anything is planned or started.
func TestReplicaLimits(t *testing.T) {
	s := testScheduler(t, false)
	big := role("echo", "echo", "hi")
	big.NumReplicas = 1_000_000
	// The Runner validates the app before the scheduler plans it (sched.Scheduler.DryRun).
	if err := appOf("big", big).Validate(); !errors.Is(err, spec.ErrTooManyReplicas) {
		t.Errorf("a million replicas: %v", err)
	}
	if _, err := s.DryRun(context.Background(), schedSub(appOf("big", big), s, nil)); !errors.Is(err, spec.ErrReplicaBudget) {
		t.Errorf("the scheduler planned a million replicas: %v", err)
	}
	// Two roles that fit alone but not together.
	a, b := role("a", "true"), role("b", "true")
	a.NumReplicas, b.NumReplicas = spec.MaxReplicas, 1
	if err := appOf("two", a, b).Validate(); !errors.Is(err, spec.ErrTooManyReplicas) {
		t.Errorf("%d+1 replicas: %v", spec.MaxReplicas, err)
	}
	if err := fdBudget(3500, 20000); !errors.Is(err, spec.ErrReplicaBudget) || !strings.Contains(err.Error(), "at most 2492 fit") {
		t.Errorf("3500 replicas under 20000 files: %v", err)
	}
	if err := fdBudget(1000, 20000); err != nil {
		t.Errorf("1000 replicas under 20000 files: %v", err)
	}
}

// TestConcurrentDeletesAndAStoppedSupervisor: the loser of two deletes printed a raw
// rename error; delete --force of an app whose supervisor is stopped waited in silence.
func TestConcurrentDeletesAndAStoppedSupervisor(t *testing.T) {
	s := testScheduler(t, false)
	ctx, cancel := context.WithTimeout(context.Background(), testkit.Scale(30*time.Second))
	defer cancel()
	for range 5 {
		id := start(t, s, appOf("echo", role("echo", "echo", "hi")), nil)
		waitApp(t, s, id)
		errs := make(chan error, 2)
		for range 2 {
			go func() { errs <- s.Delete(ctx, id, false) }()
		}
		var failed []error
		for range 2 {
			if err := <-errs; err != nil {
				failed = append(failed, err)
			}
		}
		if len(failed) != 1 || !errors.Is(failed[0], sched.ErrNotFound) {
			t.Fatalf("two deletes: %v", failed)
		}
	}

	id := start(t, s, appOf("sleep", role("sleep", "sleep", "60")), nil)
	waitState(t, s, id, allRunning)
	_, raw, err := s.load(id)
	if err != nil {
		t.Fatal(err)
	}
	sup := raw.Supervisor.PID
	if err := syscall.Kill(sup, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	defer syscall.Kill(sup, syscall.SIGCONT)
	err = s.Delete(ctx, id, true)
	if err == nil || !strings.Contains(err.Error(), "is stopped") || !strings.Contains(err.Error(), "kill -CONT") {
		t.Fatalf("delete --force with a stopped supervisor: %v", err)
	}
	if _, err := s.Describe(ctx, id); err != nil {
		t.Fatalf("the refused delete removed the app: %v", err)
	}
	syscall.Kill(sup, syscall.SIGCONT)
	if err := s.Delete(ctx, id, true); err != nil {
		t.Fatalf("delete --force once resumed: %v", err)
	}
}
