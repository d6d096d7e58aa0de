package local

import (
	"bytes"
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/wick-dev/wick/engine/sched"
	"github.com/wick-dev/wick/engine/spec"
	"github.com/wick-dev/wick/internal/testkit"
)

// reaperOf returns the pid of the supervisor's reaper, once it has started.
func reaperOf(t *testing.T, supervisor int) int {
	t.Helper()
	waitReaper(t, supervisor)
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		f := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+1:]))
		cmd, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if len(f) > 1 && f[1] == strconv.Itoa(supervisor) && bytes.Contains(cmd, []byte(SuperviseVerb)) {
			pid, _ := strconv.Atoi(e.Name())
			return pid
		}
	}
	t.Fatal("no reaper")
	return 0
}

// warnings collects what a scheduler says through Warn.
type warnings struct {
	mu  sync.Mutex
	all []string
}

func (w *warnings) add(m string) { w.mu.Lock(); defer w.mu.Unlock(); w.all = append(w.all, m) }
func (w *warnings) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return strings.Join(w.all, "\n")
}

// orphanAfterDoubleKill starts a replica whose shell leaves a child that writes
// nothing, kills the reaper then the supervisor with SIGKILL, and returns the app and
// the pid of the child left running.
func orphanAfterDoubleKill(t *testing.T, s *Scheduler) (string, int) {
	t.Helper()
	id := start(t, s, appOf("left", role("w", "sh", "-c", "sleep 1000 & echo $! > child; wait")), nil)
	_, raw, err := s.load(id)
	if err != nil {
		t.Fatal(err)
	}
	reaper := reaperOf(t, raw.Supervisor.PID)
	var child int
	for deadline := time.Now().Add(testkit.Scale(10 * time.Second)); child == 0; time.Sleep(5 * time.Millisecond) {
		b, _ := os.ReadFile("child")
		child, _ = strconv.Atoi(strings.TrimSpace(string(b)))
		if time.Now().After(deadline) {
			t.Fatal("the replica started no child")
		}
	}
	t.Cleanup(func() { unix.Kill(child, unix.SIGKILL) })
	if err := unix.Kill(reaper, unix.SIGKILL); err != nil {
		t.Fatal(err)
	}
	if err := unix.Kill(raw.Supervisor.PID, unix.SIGKILL); err != nil {
		t.Fatal(err)
	}
	st := waitApp(t, s, id)
	if st.State != spec.Failed || st.Msg != reasonDied {
		t.Fatalf("after both kills: %s %q", st.State, st.Msg)
	}
	// The replica's shell dies with the supervisor (Pdeathsig): only its child is
	// left.
	waitDead(t, replicaOf(t, st, "w", 0).PID)
	if unix.Kill(child, 0) != nil {
		t.Fatal("the child died with the supervisor: nothing left to test")
	}
	// The status says what is left running.
	if st = waitApp(t, s, id); !slices.Contains(st.Warnings, "1 process of the app still running though its supervisor is gone: wick cancel stops them") {
		t.Errorf("status warnings %q, want the process left running", st.Warnings)
	}
	return id, child
}

// TestCancelAndDeleteStopWhatADeadSupervisorLeft: with the supervisor and its reaper
// both killed, a replica's child that writes nothing keeps running; cancel kills it
// and says so, and delete leaves no cgroup behind.
func TestCancelAndDeleteStopWhatADeadSupervisorLeft(t *testing.T) {
	t.Chdir(t.TempDir())
	var w warnings
	s := testScheduler(t, false)
	s.cfg.Warn = w.add
	id, child := orphanAfterDoubleKill(t, s)
	dir, _ := s.appDir(id)
	raw, err := readState(dir)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Cancel(context.Background(), id); err != nil {
		t.Fatal(err)
	}
	waitDead(t, child)
	if got := w.String(); !strings.HasPrefix(got, "cancel "+id+": its supervisor is gone; killed 1 process left in its ") {
		t.Errorf("cancel said %q", got)
	}
	if err := s.Delete(context.Background(), id, false); err != nil {
		t.Fatal(err)
	}
	if raw.Cgroup != "" {
		if _, err := os.Stat(raw.Cgroup); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("the app's cgroup %s is left: %v", raw.Cgroup, err)
		}
	}

	// delete --force alone does it too.
	var w2 warnings
	s.cfg.Warn = w2.add
	id, child = orphanAfterDoubleKill(t, s)
	if err := s.Delete(context.Background(), id, true); err != nil {
		t.Fatal(err)
	}
	waitDead(t, child)
	if got := w2.String(); !strings.HasPrefix(got, "delete "+id+": its supervisor is gone; killed 1 process left in its ") {
		t.Errorf("delete said %q", got)
	}
}

// TestCancelOfAStoppedSupervisor: a supervisor stopped with SIGSTOP cannot act on a
// cancel: cancel says so at once instead of leaving the caller to wait.
func TestCancelOfAStoppedSupervisor(t *testing.T) {
	s := testScheduler(t, false)
	id := start(t, s, appOf("frozen", role("s", "sleep", "100")), nil)
	waitState(t, s, id, allRunning)
	_, raw, err := s.load(id)
	if err != nil {
		t.Fatal(err)
	}
	if err := unix.Kill(raw.Supervisor.PID, unix.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(testkit.Scale(10 * time.Second)); !procStopped(raw.Supervisor.PID); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the supervisor did not stop")
		}
	}
	err = s.Cancel(context.Background(), id)
	want := "cancel " + id + ": its supervisor (pid " + strconv.Itoa(raw.Supervisor.PID) + ") is stopped, so it cannot stop the app: resume it (kill -CONT"
	if err == nil || !strings.HasPrefix(err.Error(), want) {
		t.Errorf("cancel: %v, want %q", err, want)
	}
	unix.Kill(raw.Supervisor.PID, unix.SIGCONT)
	// The SIGTERM sent while it was stopped is acted on once it resumes.
	if st := waitApp(t, s, id); st.State != spec.Cancelled {
		t.Errorf("after SIGCONT: %s", st.State)
	}
}

// TestDeletedAfterTheLookNeverStarts: a delete that read the state before the
// supervisor took over does not wait for it, and removes the app's directory, cancel
// request included; removed after the supervisor's first look, the app must still
// never start.
func TestDeletedAfterTheLookNeverStarts(t *testing.T) {
	s := testScheduler(t, false)
	marker := filepath.Join(t.TempDir(), "started")
	t.Setenv(envSwap, "vanish:"+s.appsDir())
	info := dryRun(t, s, appOf("gone", role("w", "sh", "-c", "touch "+marker+"; sleep 100")), nil)
	err := s.Schedule(context.Background(), info, nil)
	if err == nil || !strings.Contains(err.Error(), "deleted before it started") {
		t.Errorf("schedule: %v", err)
	}
	noFile(t, marker, 500*time.Millisecond)
}

// TestDeleteWithGarbageLaunch: an app whose launch.json is garbage is deleted with
// its logs, found from its state, and delete says what it did.
func TestDeleteWithGarbageLaunch(t *testing.T) {
	var w warnings
	s := testScheduler(t, false)
	s.cfg.Warn = w.add
	id := start(t, s, appOf("junk", role("w", "echo", "hi")), nil)
	waitApp(t, s, id)
	logDir := filepath.Dir(filepath.Dir(replicaLogDir(t, s, id, "w", 0)))
	dir, _ := s.appDir(id)
	if err := os.WriteFile(filepath.Join(dir, launchFile), []byte("\x00garbage{"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := s.Delete(context.Background(), id, false); err != nil {
		t.Fatal(err)
	}
	noFile(t, logDir, 0)
	noFile(t, dir, 0)
	if got := w.String(); !strings.HasPrefix(got, "delete "+id+": its launch.json cannot be read (") || !strings.HasSuffix(got, "; removed its logs from "+logDir) {
		t.Errorf("delete said %q", got)
	}
}

// TestReadersFollowNoSwappedLink: a replica that swaps its log directory for a
// symbolic link (to a directory of fake logs) does not redirect the readers: they open
// log paths as the writer does, following no link.
func TestReadersFollowNoSwappedLink(t *testing.T) {
	s := testScheduler(t, false)
	id := start(t, s, appOf("swap", role("w", "echo", "real")), nil)
	waitApp(t, s, id)
	logDir := replicaLogDir(t, s, id, "w", 0)
	fake := t.TempDir()
	for _, name := range []string{"combined.log", "stdout.log", "stderr.log"} {
		if err := os.WriteFile(filepath.Join(fake, name), []byte("fake\n"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	idx, err := os.ReadFile(filepath.Join(logDir, "lines.idx"))
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(fake, "lines.idx"), idx, 0o600)
	if err := os.Rename(logDir, logDir+".moved"); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(fake, logDir); err != nil {
		t.Fatal(err)
	}
	if rc, err := s.RawLog(context.Background(), id, "w", 0, ""); err == nil {
		rc.Close()
		t.Error("the raw log was read through the link")
	}
	if it, err := s.Logs(context.Background(), id, "w", 0, sched.LogOptions{}); err == nil {
		it.Close()
		t.Error("the lines were read through the link")
	} else if !strings.Contains(err.Error(), "not safe") {
		t.Errorf("error %v does not say why", err)
	}
}
