package pycomp

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/wick-dev/wick/internal/testkit"
)

// TestAllocatingComponentStopsAtTheMemoryBound: a component that allocates in a loop
// meets the helper's memory bound (a MemoryError, said with the setting that raises
// it), long before the time limit.
func TestAllocatingComponentStopsAtTheMemoryBound(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "hog.py"), `import torchx.specs as specs

hog = []
while True:
    hog.append(bytearray(16 << 20))
`)
	b := newBridge(t, dir)
	b.Memory = 256 << 20
	_, _, err := b.Materialize(context.Background(), "hog.py:train", nil, nil)
	if err == nil || !strings.Contains(err.Error(), "hog.py:train raised hog.py:5: MemoryError") || !strings.Contains(err.Error(), "may allocate 256MiB: $WICK_PYTHON_MEMORY or [wick:python] memory sets more") {
		t.Fatalf("error %v, want a MemoryError at the bound", err)
	}
}

// pidDead reports whether pid has ended (gone, or a zombie not yet reaped by its new
// parent).
func pidDead(pid int) bool {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return true
	}
	_, rest, _ := strings.Cut(string(stat), ") ")
	return strings.HasPrefix(rest, "Z") || strings.HasPrefix(rest, "X")
}

// TestComponentChildrenDieWithTheHelper: a component that forks a child, and one that
// starts a process, and then answers: neither outlives the call.
func TestComponentChildrenDieWithTheHelper(t *testing.T) {
	dir := t.TempDir()
	pids := filepath.Join(dir, "pids")
	writeFile(t, filepath.Join(dir, "fork.py"), `import os, subprocess, time
import torchx.specs as specs

PIDS = `+strconv.Quote(pids)+`


def train() -> specs.AppDef:
    """Train."""
    if os.fork() == 0:
        with open(PIDS, "a") as f:
            f.write("%d\n" % os.getpid())
        time.sleep(600)
        os._exit(0)
    p = subprocess.Popen(["sleep", "600"])
    with open(PIDS, "a") as f:
        f.write("%d\n" % p.pid)
    while open(PIDS).read().count("\n") < 2:
        time.sleep(0.01)
    return specs.AppDef(name="fork", roles=[specs.Role(name="t", image="i", entrypoint="echo")])
`)
	b := newBridge(t, dir)
	_, app, err := b.Materialize(context.Background(), "fork.py:train", nil, nil)
	if err != nil || app.Name != "fork" {
		t.Fatalf("materialize: %v %+v", err, app)
	}
	raw, err := os.ReadFile(pids)
	if err != nil {
		t.Fatal(err)
	}
	f := strings.Fields(string(raw))
	if len(f) != 2 {
		t.Fatalf("pids %q, want the fork's and the Popen's", raw)
	}
	// SIGKILL was sent before Materialize returned; the processes end as the kernel
	// gets to them.
	deadline := time.Now().Add(testkit.Scale(10 * time.Second))
	for _, s := range f {
		pid, _ := strconv.Atoi(s)
		for !pidDead(pid) {
			if time.Now().After(deadline) {
				_ = killPid(pid)
				t.Fatalf("process %d the component started outlived the helper", pid)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
}

// TestSetsidChildDiesWithTheHelper: a process the component starts in a session of
// its own (setsid: out of the helper's process group, as a daemonizing library does)
// dies with the helper too, where the helper has a cgroup of its own.
func TestSetsidChildDiesWithTheHelper(t *testing.T) {
	if probe := joinCgroup(os.Getpid()); probe == nil {
		testkit.Missing(t, "no cgroup can be made here (cgroup v2 without delegation, or not root): the process group is all the helper has")
	} else {
		// The probe moved this test process; move it back where it was, then drop it.
		if err := os.WriteFile(filepath.Join(filepath.Dir(probe.dir), "cgroup.procs"), []byte(strconv.Itoa(os.Getpid())), 0); err != nil {
			t.Fatal(err)
		}
		if err := os.Remove(probe.dir); err != nil {
			t.Fatal(err)
		}
	}
	dir := t.TempDir()
	pids := filepath.Join(dir, "pids")
	writeFile(t, filepath.Join(dir, "daemon.py"), `import os, time
import torchx.specs as specs

PIDS = `+strconv.Quote(pids)+`


def train() -> specs.AppDef:
    """Train."""
    if os.fork() == 0:
        os.setsid()
        with open(PIDS, "a") as f:
            f.write("%d\n" % os.getpid())
        time.sleep(600)
        os._exit(0)
    while not os.path.exists(PIDS) or not open(PIDS).read().endswith("\n"):
        time.sleep(0.01)
    return specs.AppDef(name="daemon", roles=[specs.Role(name="t", image="i", entrypoint="echo")])
`)
	b := newBridge(t, dir)
	if _, app, err := b.Materialize(context.Background(), "daemon.py:train", nil, nil); err != nil || app.Name != "daemon" {
		t.Fatalf("materialize: %v %+v", err, app)
	}
	raw, err := os.ReadFile(pids)
	if err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(raw)))
	if err != nil {
		t.Fatalf("pid %q: %v", raw, err)
	}
	deadline := time.Now().Add(testkit.Scale(10 * time.Second))
	for !pidDead(pid) {
		if time.Now().After(deadline) {
			_ = killPid(pid)
			t.Fatalf("process %d, in a session of its own, outlived the helper", pid)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func killPid(pid int) error {
	p, err := os.FindProcess(pid)
	if err != nil {
		return err
	}
	return p.Kill()
}

// TestWhatTheInterpreterDid: every helper that gives no answer says what the
// interpreter did: how it ended, what it printed (escaped), its stderr's last line.
func TestWhatTheInterpreterDid(t *testing.T) {
	t.Run("/bin/true", func(t *testing.T) {
		b := &Bridge{Python: "/bin/true", Dir: t.TempDir()}
		_, err := b.Find(context.Background(), "utils.booth")
		want := "TorchX helper (/bin/true) exited 0 without an answer: is it Python with TorchX? It printed nothing"
		if err == nil || err.Error() != want {
			t.Errorf("got  %v\nwant %s", err, want)
		}
	})
	t.Run("not Python", func(t *testing.T) {
		b := &Bridge{Python: "/bin/sh", Dir: t.TempDir()}
		_, err := b.Find(context.Background(), "utils.booth")
		if err == nil || !strings.HasPrefix(err.Error(), "TorchX helper (/bin/sh) exited with status ") || !strings.Contains(err.Error(), "without an answer: is it Python with TorchX?") || !strings.Contains(err.Error(), "; stderr: \"") {
			t.Errorf("got %v", err)
		}
	})
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "quit.py"), `import os, sys
import torchx.specs as specs

print("building")
sys.stdout.flush()
os._exit(0)
`)
	// Random bytes, an OSC 0 title escape among them: quoted, never raw.
	writeFile(t, filepath.Join(dir, "noise.py"), `import os, sys
import torchx.specs as specs

sys.stdout.buffer.write(b"\x1b]0;pwned\x07\xff\xfe\x00\x9b" + bytes(range(200)))
sys.stdout.flush()
os._exit(0)
`)
	b := newBridge(t, dir)
	t.Run("os._exit(0)", func(t *testing.T) {
		_, _, err := b.Materialize(context.Background(), "quit.py:train", nil, nil)
		want := `TorchX helper (/usr/bin/python3) exited 0 without an answer: is it Python with TorchX? It printed 9 bytes: "building\n"`
		if err == nil || err.Error() != want {
			t.Errorf("got  %v\nwant %s", err, want)
		}
	})
	t.Run("random bytes", func(t *testing.T) {
		_, _, err := b.Materialize(context.Background(), "noise.py:train", nil, nil)
		if err == nil || !strings.Contains(err.Error(), `exited 0 without an answer: is it Python with TorchX? It printed 214 bytes: "\x1b]0;pwned\a\xff\xfe\x00\x9b\x00\x01\x02`) || !strings.HasSuffix(err.Error(), `"...`) {
			t.Errorf("got %v", err)
		}
		if strings.ContainsAny(err.Error(), "\x1b\x07\x00") {
			t.Errorf("raw control bytes in %q", err)
		}
	})
}
