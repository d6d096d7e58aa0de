package local

import (
	"bytes"
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

// TestManyReplicasKeepTheirReaper: an app of 128 replicas starts them all before its
// supervisor's loop would start the reaper, and their messages (two pipes and a
// process group each) fill the socket to it. The reaper is then started at once: the
// app runs to its end with no word of the reaper in supervisor.log. Before, the send
// waited out its one-second deadline and gave the reaper up ("reaper: resource
// temporarily unavailable"), and a SIGKILL of that supervisor would have left its
// replicas' children running.
func TestManyReplicasKeepTheirReaper(t *testing.T) {
	s := testScheduler(t, false)
	r := role("t", "true")
	r.NumReplicas = 128
	id := start(t, s, appOf("many", r), nil)
	if st := waitApp(t, s, id); st.State != spec.Succeeded {
		t.Fatalf("%s: %s", st.State, st.Msg)
	}
	log, err := os.ReadFile(filepath.Join(s.appsDir(), id, supervisorLog))
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	if strings.Contains(string(log), "reaper") {
		t.Fatalf("supervisor.log of an app of 128 replicas:\n%s", log)
	}
}

// TestSlowReaperLeavesTheAppRunning: a reaper that reads nothing for a while (here
// stopped; on a machine at load 1,000, starved) is not a dead supervisor. 200 replicas
// end at once while it is stopped: their messages fill the socket and the send waits
// out its deadline. The supervisor then kills the reaper and goes on; the replica
// still running keeps running, and the app ends as its cancel says. Before, the
// supervisor closed the socket: the reaper, running again, took the end for the
// supervisor's death, killed the app and recorded it FAILED, "supervisor died" (a
// wall soak of 1,024 replicas at load 1,500 lost its app so).
func TestSlowReaperLeavesTheAppRunning(t *testing.T) {
	s := testScheduler(t, false)
	fifo := filepath.Join(t.TempDir(), "go")
	if err := unix.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	many := role("many", "cat", fifo) // blocked in open until the fifo has a writer
	many.NumReplicas = 200
	id := start(t, s, appOf("slowreaper", many, role("long", "sleep", "600")), nil)
	_, raw, err := s.load(id)
	if err != nil {
		t.Fatal(err)
	}
	reaper := waitReaper(t, raw.Supervisor.PID)
	waitState(t, s, id, allRunning)
	if err := unix.Kill(reaper, unix.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = unix.Kill(reaper, unix.SIGCONT) }()
	w, err := os.OpenFile(fifo, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	w.Close() // every cat reads its end and exits 0
	logPath := filepath.Join(s.appsDir(), id, supervisorLog)
	testkit.Wait(t, time.Minute, "the supervisor to give its stopped reaper up", func() (bool, string) {
		b, _ := os.ReadFile(logPath)
		return strings.Contains(string(b), "reaper:"), string(b)
	})
	_ = unix.Kill(reaper, unix.SIGCONT)
	testkit.Wait(t, 30*time.Second, "the reaper to be gone", func() (bool, string) {
		b, err := os.ReadFile("/proc/" + strconv.Itoa(reaper) + "/stat")
		return err != nil || bytes.Contains(b, []byte(") Z")), string(b)
	})
	st := waitState(t, s, id, func(st *spec.AppStatus) bool {
		running, _ := st.Replicas()
		return st.State.Terminal() || running == 1
	})
	if st.State != spec.Running || replicaOf(t, st, "long", 0).State != spec.Running {
		b, _ := os.ReadFile(logPath)
		t.Fatalf("with its reaper given up the app is %s (%s), its long replica %s; want RUNNING; supervisor.log:\n%s", st.State, st.Msg, replicaOf(t, st, "long", 0).State, b)
	}
	if err := s.Cancel(context.Background(), id); err != nil {
		t.Fatal(err)
	}
	if st := waitApp(t, s, id); st.State != spec.Cancelled {
		t.Fatalf("after the cancel: %s (%s), want CANCELLED", st.State, st.Msg)
	}
}
