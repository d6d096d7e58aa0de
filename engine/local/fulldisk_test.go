package local

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/wick-dev/wick/engine/logs"
	"github.com/wick-dev/wick/engine/spec"
)

// smallDisk mounts a tmpfs of size bytes on a new directory and returns it; the test
// is skipped where mounting is not allowed (not root), and fails in CI.
func smallDisk(t *testing.T, size int) string {
	t.Helper()
	dir := t.TempDir()
	out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size="+strconv.Itoa(size), "tmpfs", dir).CombinedOutput()
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("CI must be able to mount a tmpfs: %v: %s", err, out)
		}
		t.Skipf("needs to mount a small tmpfs (root): %v: %s", err, out)
	}
	t.Cleanup(func() { _ = unix.Unmount(dir, unix.MNT_DETACH) })
	return dir
}

// fill writes to a file in dir until the disk is full.
func fill(t *testing.T, dir string) {
	t.Helper()
	f, err := os.Create(filepath.Join(dir, "filler"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	b := make([]byte, 4096)
	for {
		if _, err := f.Write(b); err != nil {
			if !errors.Is(err, unix.ENOSPC) {
				t.Fatal(err)
			}
			return
		}
	}
}

// With log_dir full, the app's status counts the output that could not be written
// and says why.
func TestFullLogDirIsReported(t *testing.T) {
	disk := smallDisk(t, 256<<10)
	s := testScheduler(t, false)
	const n = 20000 // 1,000,000 bytes
	id := start(t, s, appOf("full", role("full", os.Args[0], helperVerb, "lines", strconv.Itoa(n))), spec.Cfg{OptLogDir: disk})
	st := waitApp(t, s, id)
	if st.State != spec.Succeeded || len(st.Warnings) != 1 {
		t.Fatalf("app %s, warnings %q", st.State, st.Warnings)
	}
	m := regexp.MustCompile(`^full/0: (\d+) bytes of stdout not written: no space left on device$`).FindStringSubmatch(st.Warnings[0])
	if m == nil {
		t.Fatalf("warning %q", st.Warnings[0])
	}
	lost, _ := strconv.Atoi(m[1])
	info, err := os.Stat(filepath.Join(replicaLogDir(t, s, id, "full", 0), logs.StdoutFile))
	if err != nil {
		t.Fatal(err)
	}
	if int64(lost)+info.Size() != n*50 {
		t.Errorf("%d bytes lost + %d written != %d", lost, info.Size(), n*50)
	}
}

// With $WICK_HOME full when the app ends, its final state is still recorded.
func TestFullStateDirStillRecordsTheEnd(t *testing.T) {
	disk := smallDisk(t, 1<<20)
	s := testScheduler(t, false)
	s.cfg.StateDir = disk
	s2, err := newScheduler(NameCwd, false, s.cfg)
	if err != nil {
		t.Fatal(err)
	}
	s = s2
	gate := filepath.Join(t.TempDir(), "go")
	id := start(t, s, appOf("gated", role("gated", "sh", "-c", `while [ ! -e "$0" ]; do sleep 0.01; done`, gate)), spec.Cfg{OptLogDir: t.TempDir()})
	waitState(t, s, id, allRunning)
	fill(t, disk)
	if err := os.WriteFile(gate, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	st := waitApp(t, s, id)
	if st.State != spec.Succeeded {
		t.Errorf("app %s %q", st.State, st.Msg)
	}
	if onDisk, err := readState(filepath.Join(s.appsDir(), id)); err != nil || onDisk.State != spec.Succeeded {
		t.Errorf("on disk: %v", err)
	}
}
