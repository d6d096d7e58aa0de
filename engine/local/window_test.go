package local

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/wick-dev/wick/engine/sched"
	"github.com/wick-dev/wick/internal/testkit"
)

// waitSupervisor waits until the supervisor has taken the app in appDir over.
func waitSupervisor(t *testing.T, appDir string) {
	t.Helper()
	deadline := time.Now().Add(testkit.Scale(20 * time.Second))
	for time.Now().Before(deadline) {
		if st, err := readState(appDir); err == nil && !st.Supervisor.IsZero() {
			return
		}
		time.Sleep(2 * time.Millisecond)
	}
	t.Fatal("the supervisor never took the app over")
}

// noFile fails if path exists now or appears within d.
func noFile(t *testing.T, path string, d time.Duration) {
	t.Helper()
	for deadline := time.Now().Add(d); ; {
		if _, err := os.Stat(path); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("%s exists (%v)", path, err)
			return
		}
		if time.Now().After(deadline) {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// A delete --force that read the app's state just before the supervisor took it over
// (so it neither signals nor waits for it) removes the app; the supervisor must then
// start nothing and recreate nothing.
func TestDeletedInTheLaunchWindowNeverStarts(t *testing.T) {
	t.Setenv(envTestHandoverDelay, "500ms")
	s := testScheduler(t, false)
	marker := filepath.Join(t.TempDir(), "ran")
	info := dryRun(t, s, appOf("ghost", role("ghost", "touch", marker)), nil)
	appDir := filepath.Join(s.appsDir(), info.AppID)
	done := make(chan error, 1)
	go func() { done <- s.Schedule(context.Background(), info, nil) }()
	waitSupervisor(t, appDir)
	logDir := replicaLogDir(t, s, info.AppID, "ghost", 0)
	appLogs := filepath.Dir(filepath.Dir(logDir))
	// What that Delete does after its read: the cancel request, then the logs and
	// the state go.
	if err := os.WriteFile(filepath.Join(appDir, cancelFile), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.RemoveAll(appLogs); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(appDir, appDir+".deleted"); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if err == nil {
			t.Error("Schedule reported a start")
		}
	case <-time.After(20 * time.Second):
		t.Fatal("Schedule never returned")
	}
	noFile(t, marker, 500*time.Millisecond)
	noFile(t, appLogs, 0)
}

// A real delete --force in the same window leaves no app, no logs, and nothing run.
func TestDeleteForceDuringLaunch(t *testing.T) {
	t.Setenv(envTestHandoverDelay, "300ms")
	s := testScheduler(t, false)
	marker := filepath.Join(t.TempDir(), "ran")
	info := dryRun(t, s, appOf("ghost", role("ghost", "sh", "-c", "sleep 0.5; touch "+marker)), nil)
	appDir := filepath.Join(s.appsDir(), info.AppID)
	done := make(chan error, 1)
	go func() { done <- s.Schedule(context.Background(), info, nil) }()
	waitSupervisor(t, appDir)
	logDir := replicaLogDir(t, s, info.AppID, "ghost", 0)
	ctx, cancel := context.WithTimeout(context.Background(), testkit.Scale(20*time.Second))
	defer cancel()
	if err := s.Delete(ctx, info.AppID, true); err != nil {
		t.Fatal(err)
	}
	<-done
	noFile(t, marker, time.Second)
	noFile(t, filepath.Dir(filepath.Dir(logDir)), 0)
	noFile(t, appDir, 0)
}

// A follower opened while the app is being launched (before its supervisor took it
// over and created its logs) follows the app to its end.
func TestFollowerOpenedDuringLaunch(t *testing.T) {
	t.Setenv(envTestTakeoverDelay, "300ms")
	s := testScheduler(t, false)
	info := dryRun(t, s, appOf("early", role("early", "sh", "-c", "echo one; sleep 0.2; echo two")), nil)
	appDir := filepath.Join(s.appsDir(), info.AppID)
	done := make(chan error, 1)
	go func() { done <- s.Schedule(context.Background(), info, nil) }()
	for deadline := time.Now().Add(testkit.Scale(20 * time.Second)); ; time.Sleep(2 * time.Millisecond) {
		if _, err := readState(appDir); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("no app state")
		}
	}
	got := lineTexts(logLines(t, s, info.AppID, "early", 0, sched.LogOptions{Follow: true}))
	if got != "one\ntwo\n" {
		t.Errorf("follower opened during launch read %q", got)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}
