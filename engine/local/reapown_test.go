package local

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/wick-dev/wick/engine/spec"
	"github.com/wick-dev/wick/internal/testkit"
)

// waitZombie waits until pid has exited and is not reaped yet.
func waitZombie(t *testing.T, pid int) {
	t.Helper()
	for deadline := time.Now().Add(testkit.Scale(10 * time.Second)); ; time.Sleep(5 * time.Millisecond) {
		b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
		if err != nil {
			t.Fatalf("process %d: %v", pid, err)
		}
		if strings.Contains(string(b), ") Z ") {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("process %d did not exit", pid)
		}
	}
}

// TestReapLeavesOthersChildren: the reaper collects the children it forked, and
// leaves a child that another part of the program started (an exec.Cmd in a process
// group of its own, as the on_end hook is) to its owner, whose Wait gets its exit
// code; the other child exiting first (waitid of any child finds it first) does not
// hide ours.
func TestReapLeavesOthersChildren(t *testing.T) {
	c := newChildren()
	other := exec.Command("sh", "-c", "exit 3")
	other.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := other.Start(); err != nil {
		t.Fatal(err)
	}
	waitZombie(t, other.Process.Pid)
	pid, exited, err := c.fork("/bin/sh", []string{"sh", "-c", "exit 7"},
		&syscall.ProcAttr{Sys: &syscall.SysProcAttr{Setpgid: true}})
	if err != nil {
		t.Fatal(err)
	}
	waitZombie(t, pid)
	c.reap()
	select {
	case ws := <-exited:
		if exitCode(ws) != 7 {
			t.Errorf("our child's exit code %d, want 7", exitCode(ws))
		}
	default:
		t.Error("our child was not collected")
	}
	err = other.Wait()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 3 {
		t.Errorf("the other child's Wait: %v, want exit status 3", err)
	}
}

// TestAdoptedOrphansReaped: what a replica left behind when it exited (a child in
// its process group, killed with the group; a daemon in a session of its own, which
// exits later) is adopted by the supervisor and reaped when it exits, while the app
// runs: neither is left a zombie.
func TestAdoptedOrphansReaped(t *testing.T) {
	s := testScheduler(t, false)
	tmp := t.TempDir()
	grouped, daemon := filepath.Join(tmp, "grouped"), filepath.Join(tmp, "daemon")
	app := appOf("orphans",
		role("left", "sh", "-c", `sleep 60 >/dev/null 2>&1 & echo $! >`+grouped+`.tmp; mv `+grouped+`.tmp `+grouped+`
setsid sh -c 'echo $$ >`+daemon+`.tmp; mv `+daemon+`.tmp `+daemon+`; sleep 1' >/dev/null 2>&1 &
while [ ! -e `+daemon+` ]; do sleep 0.01; done; exit 0`),
		role("stay", "sleep", "600"))
	id := start(t, s, app, nil)
	defer func() {
		if err := s.Cancel(context.Background(), id); err != nil {
			t.Error(err)
		}
		waitApp(t, s, id)
	}()
	waitState(t, s, id, func(st *spec.AppStatus) bool {
		return len(st.Roles) == 2 && len(st.Roles[0].Replicas) == 1 && st.Roles[0].Replicas[0].State == spec.Succeeded
	})
	for _, f := range []string{grouped, daemon} {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		pid := strings.TrimSpace(string(b))
		for deadline := time.Now().Add(testkit.Scale(20 * time.Second)); ; time.Sleep(20 * time.Millisecond) {
			stat, err := os.ReadFile("/proc/" + pid + "/stat")
			if err != nil {
				break // exited and reaped
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s's process %s is left: %s", filepath.Base(f), pid, stat)
			}
		}
	}
}
