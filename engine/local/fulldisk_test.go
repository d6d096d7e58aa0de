package local

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/wick-dev/wick/engine/logs"
	"github.com/wick-dev/wick/engine/sched"
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
// and says why; the views show every line a log file holds, and mark where the others
// were.
func TestFullLogDirIsReported(t *testing.T) {
	disk := smallDisk(t, 256<<10)
	s := testScheduler(t, false)
	const n = 20000 // 1,000,000 bytes
	id := start(t, s, appOf("full", role("full", os.Args[0], helperVerb, "lines", strconv.Itoa(n))), spec.Cfg{OptLogDir: disk})
	st := waitApp(t, s, id)
	if st.State != spec.Succeeded || len(st.Warnings) < 1 || len(st.Warnings) > 2 {
		t.Fatalf("app %s, warnings %q; want what stdout.log lost and what the views lack", st.State, st.Warnings)
	}
	m := regexp.MustCompile(`^full/0: (\d+) bytes of stdout not written: no space left on device$`).FindStringSubmatch(st.Warnings[0])
	if m == nil {
		t.Fatalf("warning %q", st.Warnings[0])
	}
	// What the views show lacks every line the warning counts, and no other: every
	// line the replica wrote is read, or counted (none, if the disk had room again
	// for what stdout.log lost). Lines are read in order, once, and a line marks each
	// place where lines are missing.
	missing := 0
	if len(st.Warnings) == 2 {
		mv := regexp.MustCompile(`^full/0: (\d+) lines of stdout missing from what wick log and the views show: no space left on device$`).FindStringSubmatch(st.Warnings[1])
		if mv == nil {
			t.Fatalf("warning %q", st.Warnings[1])
		}
		missing, _ = strconv.Atoi(mv[1])
	}
	var read []string
	marked := 0
	gap := regexp.MustCompile(`^\[wick: (\d+) lines? of stdout missing here: the log files could not take them\]$`)
	for _, l := range logLines(t, s, id, "full", 0, sched.LogOptions{}) {
		if m := gap.FindStringSubmatch(l.Text); l.Gap && m != nil {
			k, _ := strconv.Atoi(m[1])
			marked += k
			continue
		}
		read = append(read, l.Text)
	}
	t.Logf("%d lines read, %d missing (%d marked), stdout.log lost %s bytes", len(read), missing, marked, m[1])
	if len(read)+missing != n || marked > missing {
		t.Errorf("%d lines read + %d counted missing != %d written (%d marked)", len(read), missing, n, marked)
	}
	for i := 1; i < len(read); i++ {
		if read[i] <= read[i-1] {
			t.Fatalf("line %q read after %q", read[i], read[i-1])
		}
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

// gated is a replica that waits for the file gate, at most about 30 seconds, and exits 0.
func gated(gate string) spec.Role {
	return role("gated", "sh", "-c", `i=0; while [ ! -e "$0" ] && [ $i -lt 3000 ]; do sleep 0.01; i=$((i+1)); done`, gate)
}

// open releases a gated replica.
func open(t *testing.T, gate string) {
	t.Helper()
	if err := os.WriteFile(gate, nil, 0o600); err != nil {
		t.Fatal(err)
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
	id := start(t, s, appOf("gated", gated(gate)), spec.Cfg{OptLogDir: t.TempDir()})
	waitState(t, s, id, allRunning)
	fill(t, disk)
	open(t, gate)
	st := waitApp(t, s, id)
	if st.State != spec.Succeeded {
		t.Errorf("app %s %q", st.State, st.Msg)
	}
	if onDisk, err := readState(filepath.Join(s.appsDir(), id)); err != nil || onDisk.State != spec.Succeeded {
		t.Errorf("on disk: %v", err)
	}
}

// readOnly makes dir unwritable, as a directory on a file system remounted read-only
// (root: a read-only bind mount of dir on itself), or as one whose mode forbids
// writing (anyone else: mode 0500). Files already open stay writable. It returns what
// a write in dir then fails with.
func readOnly(t *testing.T, dir string) string {
	t.Helper()
	if os.Geteuid() != 0 {
		if err := os.Chmod(dir, 0o500); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = os.Chmod(dir, 0o700) })
		return "permission denied"
	}
	// Mode bits do not stop root.
	err := unix.Mount(dir, dir, "", unix.MS_BIND, "")
	if err == nil {
		t.Cleanup(func() { _ = unix.Unmount(dir, unix.MNT_DETACH) })
		err = unix.Mount("", dir, "", unix.MS_REMOUNT|unix.MS_BIND|unix.MS_RDONLY, "")
	}
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("CI must be able to bind-mount a directory read-only: %v", err)
		}
		t.Skipf("needs a read-only bind mount: %v", err)
	}
	return "read-only file system"
}

// checkUnsaved checks the status of an app whose supervisor could not write the end
// of its one replica, which exited 0: FAILED, saying why and what the end was, the
// same on every read.
func checkUnsaved(t *testing.T, s *Scheduler, id, why string) {
	t.Helper()
	st := waitApp(t, s, id)
	want := "supervisor could not write its state: " + why + " (the app had ended SUCCEEDED; exit codes: gated/0 0)"
	if st.State != spec.Failed || st.Msg != want || st.StructuredError != want {
		t.Errorf("app %s, msg %q, error %q; want FAILED %q", st.State, st.Msg, st.StructuredError, want)
	}
	r := replicaOf(t, st, "gated", 0)
	if r.State != spec.Succeeded || r.ExitCode == nil || *r.ExitCode != 0 || r.Ended.IsZero() {
		t.Errorf("replica %s, exit %v, ended %v", r.State, r.ExitCode, r.Ended)
	}
	// The end is the supervisor's, not the time of the read.
	time.Sleep(20 * time.Millisecond)
	d, err := s.Describe(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	if d.Status.Msg != want || !d.Status.Ended.Equal(st.Ended) || st.Ended.IsZero() {
		t.Errorf("describe: %q, ended %v then %v", d.Status.Msg, st.Ended, d.Status.Ended)
	}
	apps, err := s.List(context.Background())
	if err != nil || len(apps) != 1 || apps[0].Msg != want {
		t.Errorf("list: %+v %v", apps, err)
	}
}

// When the app's state directory turns unwritable before the app ends, the status
// says that the supervisor could not write the final state, why, and how the app
// ended, rather than "supervisor died".
func TestUnwritableStateDirIsReported(t *testing.T) {
	s := testScheduler(t, false)
	gate := filepath.Join(t.TempDir(), "go")
	id := start(t, s, appOf("gated", gated(gate)), spec.Cfg{OptLogDir: t.TempDir()})
	waitState(t, s, id, allRunning)
	why := readOnly(t, filepath.Join(s.appsDir(), id))
	open(t, gate)
	checkUnsaved(t, s, id, why)
}

// With $WICK_HOME too full for the reservation at the start, and full at the end, the
// status says the state could not be written for lack of space.
func TestFullStateDirWithoutReserveIsReported(t *testing.T) {
	disk := smallDisk(t, 1<<20)
	s := testScheduler(t, false)
	s.cfg.StateDir = disk
	// Room for the app's small files, not for the reservation (minReserve).
	fill(t, disk)
	filler := filepath.Join(disk, "filler")
	info, err := os.Stat(filler)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(filler, info.Size()-48<<10); err != nil {
		t.Fatal(err)
	}
	gate := filepath.Join(t.TempDir(), "go")
	id := start(t, s, appOf("gated", gated(gate)), spec.Cfg{OptLogDir: t.TempDir()})
	waitState(t, s, id, allRunning)
	if log := readFile(t, filepath.Join(s.appsDir(), id, supervisorLog)); !strings.Contains(log, "no space reserved for the final state: ") {
		t.Fatalf("the reservation was made: supervisor.log %q", log)
	}
	fill(t, disk)
	open(t, gate)
	checkUnsaved(t, s, id, "no space left on device")
}

// The message of an unsaved end names the verdict, a failure's message, and at most
// maxExitCodesShown exit codes.
func TestUnsavedReason(t *testing.T) {
	code := func(c int) *int { return &c }
	u := &unsaved{Reason: "no space left on device", State: spec.Failed, Msg: "w/3 failed with exit code 1"}
	for k := range 10 {
		u.Replicas = append(u.Replicas, unsavedReplica{Role: "w", ID: k, State: spec.Cancelled, ExitCode: code(143)})
	}
	u.Replicas[3].ExitCode = code(1)
	u.Replicas[9].ExitCode = nil // never started
	want := "supervisor could not write its state: no space left on device (the app had ended FAILED: w/3 failed with exit code 1; " +
		"exit codes: w/0 143, w/1 143, w/2 143, w/3 1, w/4 143, w/5 143, w/6 143, w/7 143, and 1 more)"
	if got := unsavedReason(u); got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
	u = &unsaved{Reason: "read-only file system", State: spec.Cancelled, Msg: "cancelled"}
	if got, want := unsavedReason(u), "supervisor could not write its state: read-only file system (the app had ended CANCELLED)"; got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
}
