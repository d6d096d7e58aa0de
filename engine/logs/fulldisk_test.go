package logs

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/wick-dev/wick/engine/sched"
)

// tinyDisk mounts a tmpfs of size bytes on a new directory; it skips where mounting
// is not allowed (not root), and fails in CI.
func tinyDisk(t *testing.T, size int) string {
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

// fillLeaving fills the disk of dir and then frees one page: the next file to grow
// by a page gets it, and the one after meets ENOSPC. It returns the filler.
func fillLeaving(t *testing.T, dir string) string {
	t.Helper()
	path := filepath.Join(dir, "filler")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	b := make([]byte, 4096)
	size := int64(0)
	for {
		n, err := f.Write(b)
		size += int64(n)
		if err != nil {
			break
		}
	}
	if err := f.Truncate(size - size%4096 - 4096); err != nil {
		t.Fatal(err)
	}
	return path
}

// sixteen is n lines of 16 bytes each ("x 0000000000001\n"), numbered from first.
func sixteen(tag string, first, n int) string {
	var b strings.Builder
	for i := first; i < first+n; i++ {
		fmt.Fprintf(&b, "%s %013d\n", tag, i)
	}
	return b.String()
}

// fullDiskLogs writes a page of lines, then, with one page left on the disk, a batch
// that stdout.log takes and combined.log cannot; then free (or not) the disk and
// write a last batch. It returns the writer's dir and the writer, ended and closed.
func fullDiskLogs(t *testing.T, free bool) (string, *Writer) {
	disk := tinyDisk(t, 1<<20)
	dir := filepath.Join(disk, "r")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	w, err := NewRecorder().Create(dir)
	if err != nil {
		t.Fatal(err)
	}
	pr, pw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	copied := make(chan error, 1)
	go func() { copied <- w.Copy(sched.Stdout, 0, pr); pr.Close() }()
	write := func(s string) {
		if _, err := pw.WriteString(s); err != nil {
			t.Fatal(err)
		}
	}
	size := func(name string) int64 {
		st, err := os.Stat(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		return st.Size()
	}
	write(sixteen("a", 0, 256)) // a page of each file
	waitFor(t, func() bool { return size(CombinedFile) == 4096 })
	filler := fillLeaving(t, disk)
	write(sixteen("b", 0, 100))
	waitFor(t, func() bool { out, _ := w.Missing(); return out == 100 })
	if size(StdoutFile) != 4096+1600 || size(CombinedFile) != 4096 {
		t.Fatalf("stdout.log %d bytes, combined.log %d: want stdout.log to take the batch and combined.log not", size(StdoutFile), size(CombinedFile))
	}
	if free {
		if err := os.Remove(filler); err != nil {
			t.Fatal(err)
		}
	}
	write(sixteen("c", 0, 10))
	pw.Close()
	if err := <-copied; err == nil || !strings.Contains(err.Error(), "no space left on device") {
		t.Errorf("copy: %v, want the full disk", err)
	}
	_ = w.End()
	_ = w.Close()
	return dir, w
}

// TestHeldBackLinesReturnInPlace: lines that combined.log could not take while the
// disk was full are written there, in their place, once it has room: what the views
// read is what stdout.log holds, and nothing is missing.
func TestHeldBackLinesReturnInPlace(t *testing.T) {
	dir, w := fullDiskLogs(t, true)
	got := readAll(t, Source{Dir: dir}, sched.LogOptions{})
	want := strings.Split(strings.TrimSuffix(sixteen("a", 0, 256)+sixteen("b", 0, 100)+sixteen("c", 0, 10), "\n"), "\n")
	if len(got) != len(want) {
		t.Fatalf("%d lines read, want %d", len(got), len(want))
	}
	for i, l := range got {
		if l.Text != want[i] {
			t.Fatalf("line %d: %q, want %q", i, l.Text, want[i])
		}
	}
	if out, errb := w.Missing(); out != 0 || errb != 0 {
		t.Errorf("missing %d, %d; want none", out, errb)
	}
	if b := readFile(t, filepath.Join(dir, StdoutFile)); b != strings.Join(want, "\n")+"\n" {
		t.Errorf("stdout.log is not every line")
	}
}

// TestMissingLinesAreCounted: with the disk full to the end, Missing counts every line
// of stdout that the views do not read (and stdout.log holds).
func TestMissingLinesAreCounted(t *testing.T) {
	dir, w := fullDiskLogs(t, false)
	got := readAll(t, Source{Dir: dir}, sched.LogOptions{})
	out, errb := w.Missing()
	inStdout := strings.Count(readFile(t, filepath.Join(dir, StdoutFile)), "\n")
	if len(got) != 256 || out != 110 || errb != 0 || inStdout < 356 {
		t.Errorf("%d lines read, missing %d+%d, stdout.log %d lines: want 256 read and 110 missing (b's 100, c's 10)", len(got), out, errb, inStdout)
	}
	if int64(len(got))+out != 366 {
		t.Errorf("read %d + missing %d != 366 lines written", len(got), out)
	}
}
