package local

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/wick-dev/wick/engine/spec"
	"github.com/wick-dev/wick/internal/testkit"
)

// escaper is a replica that starts a process which leaves its session and process
// group twice over (a daemon's double fork), ignores TERM, HUP and PIPE, and writes
// its pid to pidFile; the replica itself then waits.
func escaper(t *testing.T, pidFile string) spec.Role {
	script := filepath.Join(t.TempDir(), "escape.sh")
	body := `#!/bin/sh
case "$1" in
daemon)
	trap '' TERM HUP PIPE
	echo $$ > "$2.tmp"; mv "$2.tmp" "$2"
	while :; do sleep 0.05; done ;;
middle)
	setsid "$0" daemon "$2" &
	exit 0 ;;
*)
	setsid "$0" middle "$1"
	while [ ! -e "$1" ]; do sleep 0.01; done
	echo up
	while :; do sleep 0.05; done ;;
esac
`
	if err := os.WriteFile(script, []byte(body), 0o755); err != nil {
		t.Fatal(err)
	}
	return role("esc", script, pidFile)
}

func readPID(t *testing.T, path string) int {
	t.Helper()
	for deadline := time.Now().Add(testkit.Scale(20 * time.Second)); ; time.Sleep(5 * time.Millisecond) {
		if b, err := os.ReadFile(path); err == nil {
			if pid, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil {
				return pid
			}
		}
		if time.Now().After(deadline) {
			t.Fatal("the escaper never started")
		}
	}
}

// waitDead waits until pid is gone (or a zombie), or fails.
func waitDead(t *testing.T, pid int) {
	t.Helper()
	for deadline := time.Now().Add(testkit.Scale(10 * time.Second)); ; time.Sleep(10 * time.Millisecond) {
		b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
		if err != nil || strings.Contains(string(b), ") Z ") {
			return
		}
		if time.Now().After(deadline) {
			unix.Kill(pid, unix.SIGKILL)
			t.Fatalf("process %d escaped the app", pid)
		}
	}
}

func needCgroup(t *testing.T) {
	t.Helper()
	cg, err := newCgroup("wick-test-probe-" + strconv.Itoa(os.Getpid()))
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Logf("no cgroup v2 here: %v", err)
		}
		t.Skipf("needs a writable cgroup v2 hierarchy: %v", err)
	}
	cg.remove()
}

// A process that escaped its replica's group and session twice over, and ignores
// TERM, dies with the app when it is cancelled.
func TestCancelKillsEscapedProcesses(t *testing.T) {
	needCgroup(t)
	s := testScheduler(t, false)
	pidFile := filepath.Join(t.TempDir(), "pid")
	id := start(t, s, appOf("esc", escaper(t, pidFile)), spec.Cfg{OptStopTimeout: 2.0})
	pid := readPID(t, pidFile)
	if err := s.Cancel(context.Background(), id); err != nil {
		t.Fatal(err)
	}
	if st := waitApp(t, s, id); st.State != spec.Cancelled {
		t.Errorf("app %s", st.State)
	}
	waitDead(t, pid)
}

// The same after kill -9 of the supervisor: the reaper kills the app's cgroup.
func TestKilledSupervisorLeavesNoEscapedProcess(t *testing.T) {
	needCgroup(t)
	s := testScheduler(t, false)
	pidFile := filepath.Join(t.TempDir(), "pid")
	id := start(t, s, appOf("esc", escaper(t, pidFile)), nil)
	pid := readPID(t, pidFile)
	_, raw, err := s.load(id)
	if err != nil {
		t.Fatal(err)
	}
	waitReaper(t, raw.Supervisor.PID)
	if err := unix.Kill(raw.Supervisor.PID, unix.SIGKILL); err != nil {
		t.Fatal(err)
	}
	waitDead(t, pid)
	// The reaper then saves the app's end: wait for it, so that the test's directory is
	// not removed while it writes there.
	if st := waitApp(t, s, id); !st.State.Terminal() {
		t.Errorf("the app after its supervisor's kill -9: %s", st.State)
	}
}
