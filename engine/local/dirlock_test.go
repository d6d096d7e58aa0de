package local

import (
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/wick-dev/wick/engine/logs"
	"github.com/wick-dev/wick/engine/spec"
	"github.com/wick-dev/wick/internal/testkit"
)

// TestVerdictNeverOverATakeover: a reader that judged an app's launch dead (launcher
// gone, no supervisor, the state's last write long ago) saves its FAILED verdict under
// the app's lock, and only if the state is still the one it judged. Here a supervisor
// holds the lock, taking the app over, while the reader comes to save: the reader
// waits, finds the takeover, and leaves it. And a supervisor that comes after a
// verdict was saved does not take the app over.
func TestVerdictNeverOverATakeover(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "app-bcdfghjklmnp")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	dead := logs.Proc{PID: 1 << 22, Start: 1} // no such process
	st := &state{Version: 1, Owner: dead}
	st.Scheduler, st.AppID, st.State, st.Created = NameCwd, filepath.Base(dir), spec.Pending, time.Now().Add(-time.Hour)
	if err := st.save(dir); err != nil {
		t.Fatal(err)
	}
	old := time.Now().Add(-time.Hour)
	if err := os.Chtimes(filepath.Join(dir, stateFile), old, old); err != nil {
		t.Fatal(err)
	}

	unlock, err := lockApp(dir) // the supervisor, taking over
	if err != nil {
		t.Fatal(err)
	}
	judged := make(chan *state, 1)
	go func() {
		read, err := readState(dir)
		if err != nil {
			t.Error(err)
		}
		judged <- reconcile(dir, read) // judges, and saves under the lock
	}()
	// The reader has judged (the verdict is what it returns) only once it has saved
	// or not: it waits on the lock now, or will.
	self := logs.Proc{PID: os.Getpid(), Start: 2}
	taken := *st
	taken.Owner, taken.Supervisor = self, self
	// The race itself: the reader is blocked in flock(2), having judged the app dead,
	// when the supervisor saves its takeover and lets go.
	testkit.Wait(t, 10*time.Second, "the reader waiting on the app's lock", func() (bool, string) {
		return inFlock(), "no thread of this process in flock(2)"
	})
	if err := taken.save(dir); err != nil {
		t.Fatal(err)
	}
	unlock()
	if v := <-judged; v.State != spec.Failed && v.State != spec.Pending {
		t.Errorf("the reader judged %s", v.State)
	}
	onDisk, err := readState(dir)
	if err != nil {
		t.Fatal(err)
	}
	if onDisk.State != spec.Pending || onDisk.Supervisor != self {
		t.Errorf("on disk: %s, supervisor %+v; want the takeover, not the verdict", onDisk.State, onDisk.Supervisor)
	}

	// A verdict saved first stands: saveVerdict writes it, the state is FAILED.
	if err := st.save(dir); err != nil {
		t.Fatal(err)
	}
	v := *st
	markDead(&v, reasonNoLaunch)
	saveVerdict(dir, &v)
	if onDisk, err = readState(dir); err != nil || onDisk.State != spec.Failed {
		t.Errorf("verdict not saved: %v %+v", err, onDisk)
	}
}

// inFlock says whether a thread of this process is blocked in flock(2): the first
// field of /proc/self/task/TID/syscall is the number of the system call it is in
// (proc(5)); flock's is 73 on amd64 and 32 on arm64.
func inFlock() bool {
	want := map[string]string{"amd64": "73", "arm64": "32"}[runtime.GOARCH]
	tasks, _ := filepath.Glob("/proc/self/task/*/syscall")
	for _, p := range tasks {
		b, err := os.ReadFile(p)
		if f := strings.Fields(string(b)); err == nil && len(f) > 0 && f[0] == want {
			return true
		}
	}
	return false
}
