package local

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
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

// TestStarvedReaperCatchesUp: a reaper that reads nothing for a while (here stopped;
// on a machine at load 1,000, starved) neither stalls the supervisor nor is given up.
// 200 replicas end at once while it is stopped: their messages (a process group and
// two pipes each) overflow the socket and wait in the supervisor's queue, and the
// supervisor goes on, recording the 200 ends. Let run again, the reaper is still the
// app's: a SIGKILL of the supervisor then ends the family replica's grandchild, and
// the reaper records the app FAILED, "supervisor died". Before the queue, the
// supervisor waited a second on the full socket and gave the reaper up ("reaper: ...
// stopped" in supervisor.log), and the grandchild outlived its supervisor; before
// that, the socket was closed under the reaper, which took it for the supervisor's
// death and killed the live app (a wall soak of 1,024 replicas at load 1,500 lost its
// app so).
func TestStarvedReaperCatchesUp(t *testing.T) {
	s := testScheduler(t, false)
	fifo := filepath.Join(t.TempDir(), "go")
	if err := unix.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	many := role("many", "cat", fifo) // blocked in open until the fifo has a writer
	many.NumReplicas = 200
	id := start(t, s, appOf("starved", many, family(1)), nil)
	// A failure below would leave the supervisor and a cat blocked on the fifo running
	// for ever (CI once had them 39 minutes on): cancel the app whatever the outcome.
	t.Cleanup(func() {
		if t.Failed() {
			_ = s.Cancel(context.Background(), id)
		}
	})
	_, raw, err := s.load(id)
	if err != nil {
		t.Fatal(err)
	}
	reaper := waitReaper(t, raw.Supervisor.PID)
	fam := replicaOf(t, waitState(t, s, id, allRunning), "family", 0).PID
	testkit.Wait(t, 10*time.Second, "the family replica's grandchild", func() (bool, string) {
		m := groupMembers(t, fam)
		return len(m) >= 3, fmt.Sprint(m)
	})
	if err := unix.Kill(reaper, unix.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = unix.Kill(reaper, unix.SIGCONT) }()
	w, err := os.OpenFile(fifo, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	// A replica is RUNNING once started, not once its cat has opened the fifo: on a
	// busy machine the last ones reach their open later, and a cat that opens it
	// after the writer closed would wait for another writer forever (CI saw one).
	testkit.Wait(t, 30*time.Second, "every cat with the fifo open", func() (bool, string) {
		n := fifoReaders(fifo)
		return n == 200, fmt.Sprintf("%d of 200", n)
	})
	w.Close() // every cat reads its end and exits 0
	waitState(t, s, id, func(st *spec.AppStatus) bool {
		n := 0
		for _, r := range st.Roles[0].Replicas {
			if r.State == spec.Succeeded {
				n++
			}
		}
		return n == 200
	})
	_ = unix.Kill(reaper, unix.SIGCONT)
	logPath := filepath.Join(s.appsDir(), id, supervisorLog)
	if b, _ := os.ReadFile(logPath); strings.Contains(string(b), "reaper") {
		t.Fatalf("supervisor.log after the reaper's stall:\n%s", b)
	}
	if err := unix.Kill(raw.Supervisor.PID, unix.SIGKILL); err != nil {
		t.Fatal(err)
	}
	waitGone(t, []int{fam})
	st := waitApp(t, s, id)
	if st.State != spec.Failed || st.Msg != reasonDied {
		t.Fatalf("app: %s %q", st.State, st.Msg)
	}
	// Readers do not wait for the reaper's verdict (they reconcile); its word comes
	// once it has drained the pipes.
	testkit.Wait(t, 10*time.Second, "the reaper's word in supervisor.log", func() (bool, string) {
		b, _ := os.ReadFile(logPath)
		return strings.Contains(string(b), "the supervisor died"), string(b)
	})
}

// fifoReaders counts the processes other than this one that hold fifo open.
func fifoReaders(fifo string) int {
	self := fmt.Sprintf("/proc/%d/", os.Getpid())
	dirs, _ := filepath.Glob("/proc/[0-9]*/fd")
	n := 0
	for _, d := range dirs {
		if strings.HasPrefix(d, self) {
			continue
		}
		fds, _ := os.ReadDir(d)
		for _, fd := range fds {
			if l, err := os.Readlink(filepath.Join(d, fd.Name())); err == nil && l == fifo {
				n++
				break
			}
		}
	}
	return n
}
