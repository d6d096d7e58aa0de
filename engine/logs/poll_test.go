package logs

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/wick-dev/wick/internal/testkit"
)

// TestWatchWithoutInotify: a user whose inotify instances are all taken (128 by
// default, reached by a dozen followers on a busy node) and a process out of
// descriptors still get their watches. The limits are reached for real, as user
// nobody in a child process, so that no other test of this machine loses its
// instances. Before: Add failed "inotify: too many open files" (a follow or a wait
// gave up), and WatchProc without a pidfd took a live process for an exited one.
func TestWatchWithoutInotify(t *testing.T) {
	if os.Getenv("WICK_POLL_CHILD") == "1" {
		watchWithoutInotify(t)
		return
	}
	if os.Geteuid() != 0 {
		testkit.Missing(t, "reaching user nobody's inotify limit needs root (to run a child as nobody)")
	}
	// The test binary's directory is root's alone: run a copy nobody may execute.
	dir := t.TempDir()
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(filepath.Dir(dir), 0o755); err != nil {
		t.Fatal(err)
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "logs.test")
	data, err := os.ReadFile(self)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bin, data, 0o755); err != nil {
		t.Fatal(err)
	}
	tmp := filepath.Join(dir, "tmp")
	if err := os.Mkdir(tmp, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(tmp, 65534, 65534); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "-test.run=^TestWatchWithoutInotify$", "-test.v", "-test.count=1")
	cmd.Env = append(os.Environ(), "WICK_POLL_CHILD=1", "TMPDIR="+tmp)
	cmd.Dir = tmp
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	cmd.WaitDelay = time.Second
	done := make(chan struct{})
	defer close(done)
	go func() {
		select {
		case <-done:
		case <-time.After(testkit.Scale(2 * time.Minute)):
			cmd.Process.Kill()
		}
	}()
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("as nobody: %v\n%s", err, out)
	}
	t.Logf("as nobody:\n%s", out)
}

func watchWithoutInotify(t *testing.T) {
	// Take every inotify instance this user may have.
	var held []int
	defer func() {
		for _, fd := range held {
			unix.Close(fd)
		}
	}()
	for len(held) < 1<<16 {
		fd, err := unix.InotifyInit1(unix.IN_CLOEXEC)
		if err != nil {
			if !errors.Is(err, unix.EMFILE) {
				t.Fatalf("inotify_init1 after %d instances: %v, want EMFILE", len(held), err)
			}
			break
		}
		held = append(held, fd)
	}
	t.Logf("took %d inotify instances", len(held))

	dir := t.TempDir()
	log := filepath.Join(dir, "combined.log")
	if err := os.WriteFile(log, []byte("step 1\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	w := NewWatcher()
	file, err := w.Add(log)
	if err != nil {
		t.Fatalf("watch a log with no inotify instance left: %v", err)
	}
	defer file.Close()
	states, err := w.Add(dir)
	if err != nil {
		t.Fatalf("watch a directory with no inotify instance left: %v", err)
	}
	defer states.Close()

	// A line appended wakes the log's watch.
	f, err := os.OpenFile(log, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString("step 2\n"); err != nil {
		t.Fatal(err)
	}
	f.Close()
	if got := waitEvents(t, file, Changed); got&Gone != 0 {
		t.Errorf("an appended log read as gone: %b", got)
	}
	// A state file renamed into the directory wakes the directory's watch.
	tmp := filepath.Join(dir, ".state.json.tmp")
	if err := os.WriteFile(tmp, []byte("{}"), 0o600); err != nil {
		t.Fatal(err)
	}
	waitEvents(t, states, Changed)
	if err := os.Rename(tmp, filepath.Join(dir, "state.json")); err != nil {
		t.Fatal(err)
	}
	waitEvents(t, states, Changed)
	// The log deleted: gone.
	if err := os.Remove(log); err != nil {
		t.Fatal(err)
	}
	waitEvents(t, file, Gone)

	// Out of descriptors: no pidfd can be had. A live process is not taken for
	// an exited one, and its exit is still seen.
	sleeper := exec.Command("sleep", "60")
	if err := sleeper.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { sleeper.Process.Kill(); sleeper.Wait() }()
	p, err := ProcOf(sleeper.Process.Pid)
	if err != nil {
		t.Fatal(err)
	}
	var lim unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_NOFILE, &lim); err != nil {
		t.Fatal(err)
	}
	low := lim
	low.Cur = 256
	if err := unix.Setrlimit(unix.RLIMIT_NOFILE, &low); err != nil {
		t.Fatal(err)
	}
	defer unix.Setrlimit(unix.RLIMIT_NOFILE, &lim)
	var fds []int
	for len(fds) < 256 {
		fd, err := unix.Open("/dev/null", unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err != nil {
			break
		}
		fds = append(fds, fd)
	}
	exited, stop := w.WatchProc(p)
	for _, fd := range fds {
		unix.Close(fd)
	}
	defer stop()
	select {
	case <-exited:
		t.Fatal("a live process, watched with no descriptor left for its pidfd, read as exited")
	default:
	}
	if err := sleeper.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	select {
	case <-exited:
	case <-time.After(testkit.Scale(10 * time.Second)):
		t.Fatal("the killed process's exit was not seen")
	}
}

// waitEvents waits for w to report all of want, and returns what it reported.
func waitEvents(t *testing.T, w *Watch, want uint32) uint32 {
	t.Helper()
	var got uint32
	deadline := time.After(testkit.Scale(10 * time.Second))
	for got&want != want {
		select {
		case <-w.C():
			got |= w.Events()
		case <-deadline:
			t.Fatalf("events %b, want %b", got, want)
		}
	}
	return got
}
