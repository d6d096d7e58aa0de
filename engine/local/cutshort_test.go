package local

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
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
	// A process whose command line is a supervisor's of dir.
	sup := exec.Command("sh", "-c", "sleep 60; :", SuperviseVerb, dir)
	if err := sup.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sup.Process.Kill(); sup.Wait() })
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
