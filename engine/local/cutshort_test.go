package local

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/wick-dev/wick/engine/logs"
	"github.com/wick-dev/wick/engine/sched"
	"github.com/wick-dev/wick/engine/spec"
)

// TestRelaunchAfterALaunchCutShort: a launch killed after it made the app's log
// directories (and its state directory) but before it wrote the app's state leaves
// an app no verb sees; launching the same app again (a sweep's queue resumed) makes
// them again and runs it. A log directory with anything in it stays refused.
func TestRelaunchAfterALaunchCutShort(t *testing.T) {
	s := testScheduler(t, false)
	app := appOf("echo", role("r", "sh", "-c", "echo hi"))
	info := dryRun(t, s, app, nil)
	req, err := requestOf(info.Request)
	if err != nil {
		t.Fatal(err)
	}
	// What the launch had made when it was killed.
	if err := makeLogDirs(req); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(req.StateDir, 0o700); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Describe(context.Background(), info.AppID); !errors.Is(err, sched.ErrNotFound) {
		t.Fatalf("the cut launch's app: %v, want not found", err)
	}
	again, err := s.DryRun(context.Background(), info.Submission)
	if err != nil {
		t.Fatalf("dry run after a cut launch: %v", err)
	}
	info.Request = again
	if err := s.Schedule(context.Background(), info, nil); err != nil {
		t.Fatalf("launch after a cut launch: %v", err)
	}
	if st := waitApp(t, s, info.AppID); st.State != spec.Succeeded {
		t.Errorf("the relaunched app: %s %s", st.State, st.Msg)
	}

	// Another app's log directory holds its logs: refused, untouched.
	other := appOf("other", role("r", "sh", "-c", "echo hi"))
	oinfo := dryRun(t, s, other, nil)
	oreq, _ := requestOf(oinfo.Request)
	if err := makeLogDirs(oreq); err != nil {
		t.Fatal(err)
	}
	kept := filepath.Join(oreq.LogDir, "r", "0", "combined.log")
	if err := os.WriteFile(kept, []byte("a line\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := s.DryRun(context.Background(), oinfo.Submission); err == nil || !strings.Contains(err.Error(), "already exists") {
		t.Errorf("a log directory with a log in it: %v", err)
	}
	if _, err := os.Stat(kept); err != nil {
		t.Errorf("the log was touched: %v", err)
	}
}

// TestSupervisorComingIsNotDead: an app whose launcher died after starting its
// supervisor, which has not taken it over yet, is not judged dead while that
// supervisor's process exists; once it is gone, it is.
func TestSupervisorComingIsNotDead(t *testing.T) {
	dir := t.TempDir()
	gone := exec.Command("true")
	if err := gone.Run(); err != nil {
		t.Fatal(err)
	}
	pending := func() *state {
		st := &state{Owner: logs.Proc{PID: gone.Process.Pid, Start: 1}}
		st.State, st.Created = spec.Pending, time.Now()
		return st
	}
	// A process whose command line is a supervisor's of dir. It waits on a builtin
	// read of a pipe, forking nothing: a child forked by sh carries sh's command line
	// until it execs, and outlived the kill below on a busy machine (CI read the
	// supervisor still coming after it was gone).
	sup := exec.Command("sh", "-c", "read line", SuperviseVerb, dir)
	hold, err := sup.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := sup.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { hold.Close(); sup.Process.Kill(); sup.Wait() })
	// Start returns once the exec has begun, a moment before the kernel has set the
	// new command line: wait for it to read as the supervisor's.
	waitCmdline(t, sup.Process.Pid, dir)
	if st := reconcile(dir, pending()); st.State != spec.Pending {
		t.Errorf("with its supervisor coming: %s %s", st.State, st.Msg)
	}
	// Launched long ago: not looked for.
	old := pending()
	old.Created = time.Now().Add(-2 * comingWindow)
	if st := reconcile(dir, old); st.State != spec.Failed {
		t.Errorf("launched %s ago, its supervisor still not there: %s", 2*comingWindow, st.State)
	}
	sup.Process.Kill()
	sup.Wait()
	if st := reconcile(dir, pending()); st.State != spec.Failed || st.Msg != reasonNoLaunch {
		t.Errorf("with no supervisor: %s %q", st.State, st.Msg)
	}
}

// TestDeadLaunchEndsOnce: a launcher killed after it wrote the app's state but before
// a supervisor took the app over leaves an app that reads FAILED. Its end is when the
// launcher last wrote the state, the same on every read (it was the time of the read,
// the duration growing with every list), and saved: private, terminal on disk.
func TestDeadLaunchEndsOnce(t *testing.T) {
	s := testScheduler(t, false)
	info := dryRun(t, s, appOf("dead", role("r", "sleep", "100")), nil)
	req, err := requestOf(info.Request)
	if err != nil {
		t.Fatal(err)
	}
	// The launcher: a real process, gone (its PID is not reused with its start time).
	launcher := exec.Command("true")
	if err := launcher.Run(); err != nil {
		t.Fatal(err)
	}
	// What the launch had written when it was killed, an hour ago, a second after it
	// began.
	began := time.Now().Add(-time.Hour).Truncate(time.Second)
	if err := makeLogDirs(req); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(req.StateDir, 0o700); err != nil {
		t.Fatal(err)
	}
	l := &launch{Version: storeVersion, Scheduler: s.name, Session: req.Session, AppID: req.AppID,
		Created: began, Self: []string{os.Args[0]}, App: info.App, Request: req}
	if err := writeJSONAtomic(req.StateDir, launchFile, l); err != nil {
		t.Fatal(err)
	}
	if err := newState(s.name, l, logs.Proc{PID: launcher.Process.Pid, Start: 1}).save(req.StateDir); err != nil {
		t.Fatal(err)
	}
	lastWrite := began.Add(time.Second)
	statePath := filepath.Join(req.StateDir, stateFile)
	if err := os.Chtimes(statePath, lastWrite, lastWrite); err != nil {
		t.Fatal(err)
	}

	var ends []time.Time
	for range 3 {
		d, err := s.Describe(context.Background(), info.AppID)
		if err != nil {
			t.Fatal(err)
		}
		st := d.Status
		if st.State != spec.Failed || st.Msg != reasonNoLaunch {
			t.Fatalf("dead launch: %s %q", st.State, st.Msg)
		}
		if got := st.Ended.Sub(st.Created); got != time.Second {
			t.Errorf("duration %v, want 1s (ended %v, created %v)", got, st.Ended, st.Created)
		}
		ends = append(ends, st.Ended)
	}
	apps, err := s.List(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range apps {
		if a.AppID == info.AppID {
			ends = append(ends, a.Ended)
		}
	}
	if len(ends) != 4 {
		t.Fatalf("the app is not listed: %+v", apps)
	}
	for _, e := range ends[1:] {
		if !e.Equal(ends[0]) {
			t.Errorf("the end moved between reads: %v", ends)
			break
		}
	}
	saved, err := readState(req.StateDir)
	if err != nil {
		t.Fatal(err)
	}
	if saved.State != spec.Failed || !saved.Ended.Equal(lastWrite) {
		t.Errorf("on disk: %s ended %v, want FAILED ended %v", saved.State, saved.Ended, lastWrite)
	}
	if fi, err := os.Stat(statePath); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("state file: %v %v", fi.Mode(), err)
	}

	// Died a moment ago: the same end on every read, not saved yet (a supervisor
	// forked just before may still take the app over, see launchSettle).
	info = dryRun(t, s, appOf("fresh", role("r", "sleep", "100")), nil)
	if req, err = requestOf(info.Request); err != nil {
		t.Fatal(err)
	}
	if err := makeLogDirs(req); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(req.StateDir, 0o700); err != nil {
		t.Fatal(err)
	}
	l = &launch{Version: storeVersion, Scheduler: s.name, Session: req.Session, AppID: req.AppID,
		Created: time.Now(), Self: []string{os.Args[0]}, App: info.App, Request: req}
	if err := writeJSONAtomic(req.StateDir, launchFile, l); err != nil {
		t.Fatal(err)
	}
	if err := newState(s.name, l, logs.Proc{PID: launcher.Process.Pid, Start: 1}).save(req.StateDir); err != nil {
		t.Fatal(err)
	}
	first, err := s.Describe(context.Background(), info.AppID)
	if err != nil {
		t.Fatal(err)
	}
	again, err := s.Describe(context.Background(), info.AppID)
	if err != nil {
		t.Fatal(err)
	}
	if first.Status.State != spec.Failed || first.Status.Ended.IsZero() || !again.Status.Ended.Equal(first.Status.Ended) {
		t.Errorf("a launch dead a moment ago: %s ended %v, then %v", first.Status.State, first.Status.Ended, again.Status.Ended)
	}
	if saved, err := readState(req.StateDir); err != nil || saved.State.Terminal() {
		t.Errorf("a launch dead a moment ago was saved ended: %+v %v", saved, err)
	}
}

// waitCmdline waits until the command line of process pid ends with dir.
func waitCmdline(t *testing.T, pid int, dir string) {
	t.Helper()
	path := "/proc/" + strconv.Itoa(pid) + "/cmdline"
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(time.Millisecond) {
		if b, _ := os.ReadFile(path); strings.HasSuffix(string(b), dir+"\x00") {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("process %d's command line never read as a supervisor's of %s", pid, dir)
		}
	}
}

// TestMkAppDirTakesOverOnlyARemnant: a state directory with neither launch file (a
// launcher killed between its mkdir and its first save) is made anew; one holding
// either file is an app, refused and left as it was.
func TestMkAppDirTakesOverOnlyARemnant(t *testing.T) {
	apps := t.TempDir()
	remnant := filepath.Join(apps, "remnant")
	if err := os.MkdirAll(filepath.Join(remnant, "tmp"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := mkAppDir(remnant); err != nil {
		t.Fatalf("a remnant: %v", err)
	}
	if left, _ := os.ReadDir(remnant); len(left) != 0 {
		t.Errorf("the remnant was not made anew: %d entries left", len(left))
	}
	for _, f := range []string{launchFile, stateFile} {
		app := filepath.Join(apps, "with-"+f)
		if err := os.MkdirAll(app, 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(app, f), []byte("{}\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := mkAppDir(app); !errors.Is(err, os.ErrExist) {
			t.Errorf("a directory with %s: %v, want it to exist", f, err)
		}
		if _, err := os.Stat(filepath.Join(app, f)); err != nil {
			t.Errorf("%s was touched: %v", f, err)
		}
	}
}
