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

// TestLinesOnlyInStdoutAreRead: with the disk full to the end, the lines combined.log
// could not take are read from stdout.log, which holds them, in their place: the
// views show every line written, and none is missing. (They were counted missing,
// and shown nowhere, though stdout.log held them.)
func TestLinesOnlyInStdoutAreRead(t *testing.T) {
	dir, w := fullDiskLogs(t, false)
	want := sixteen("a", 0, 256) + sixteen("b", 0, 100) + sixteen("c", 0, 10)
	checkLines(t, dir, want)
	if out, errb := w.Missing(); out != 0 || errb != 0 {
		t.Errorf("missing %d+%d, want none", out, errb)
	}
	if b := readFile(t, filepath.Join(dir, CombinedFile)); b != sixteen("a", 0, 256) {
		t.Errorf("combined.log holds %d bytes, want a's 4096 only (the disk stayed full)", len(b))
	}
	// The last lines, and the stream's alone, come from stdout.log too.
	tail := readAll(t, Source{Dir: dir}, sched.LogOptions{Tail: 15, Streams: sched.Stdout})
	if len(tail) != 15 || tail[0].Text != "b 0000000000095" || tail[14].Text != "c 0000000000009" {
		t.Errorf("-n 15: %d lines, %v", len(tail), tail)
	}
}

// lossyLogs writes a page of lines ("a"), then, with the disk full, a batch ("b")
// that neither stdout.log nor combined.log can take; then it frees one page (room
// for stdout.log, not combined.log) and writes "c" if onePage, and frees the disk
// (unless full) and writes "d". It returns the writer's dir and the writer, settled,
// ended and closed.
func lossyLogs(t *testing.T, onePage, full bool) (string, *Writer) {
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
	write(sixteen("a", 0, 256))
	waitFor(t, func() bool { return size(CombinedFile) == 4096 })
	filler := fillLeaving(t, disk)
	f, err := os.OpenFile(filler, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write(make([]byte, 4096)); err != nil { // the last page
		t.Fatal(err)
	}
	f.Close()
	write(sixteen("b", 0, 100))
	waitFor(t, func() bool { out, _ := w.Missing(); return out == 100 })
	if lost, _, _ := w.Lost(); lost != 1600 || size(StdoutFile) != 4096 {
		t.Fatalf("stdout.log lost %d bytes, holds %d: want b's 1600 lost", lost, size(StdoutFile))
	}
	if onePage {
		st, err := os.Stat(filler)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.Truncate(filler, st.Size()-4096); err != nil {
			t.Fatal(err)
		}
		write(sixteen("c", 0, 10))
		waitFor(t, func() bool { out, _ := w.Missing(); return out == 110 })
		if size(StdoutFile) != 4096+160 || size(CombinedFile) != 4096 {
			t.Fatalf("stdout.log %d bytes, combined.log %d: want stdout.log to take c and combined.log not", size(StdoutFile), size(CombinedFile))
		}
	}
	if !full {
		if err := os.Remove(filler); err != nil {
			t.Fatal(err)
		}
	}
	write(sixteen("d", 0, 10))
	pw.Close()
	if err := <-copied; err == nil || !strings.Contains(err.Error(), "no space left on device") {
		t.Errorf("copy: %v, want the full disk", err)
	}
	w.Settle()
	_ = w.End()
	_ = w.Close()
	return dir, w
}

// gap100 is the line the views show in place of b's 100 lines, lost by every file.
const gap100 = "[wick: 100 lines of stdout missing here: the log files could not take them]\n"

// checkLines checks that the views read exactly want, and stdout.log holds it less
// the lines that mark a gap.
func checkLines(t *testing.T, dir, want string) {
	t.Helper()
	got := readAll(t, Source{Dir: dir}, sched.LogOptions{})
	lines := strings.Split(strings.TrimSuffix(want, "\n"), "\n")
	if len(got) != len(lines) {
		t.Errorf("%d lines read, want %d", len(got), len(lines))
	}
	for i := range min(len(got), len(lines)) {
		if got[i].Text != lines[i] || got[i].Gap != strings.HasPrefix(lines[i], "[wick: ") {
			t.Errorf("line %d: %q (gap %v), want %q", i, got[i].Text, got[i].Gap, lines[i])
			break
		}
	}
	if b := readFile(t, filepath.Join(dir, StdoutFile)); b != strings.Replace(want, gap100, "", 1) {
		t.Errorf("stdout.log holds %d bytes, want %d", len(b), len(want))
	}
}

// TestLinesAfterAStreamLossAreRead: after stdout.log lost a batch to a full disk, the
// lines it takes once there is room are read as written, and every line written is
// read or counted missing, and marked where it was. (The file's offsets once ran on
// past what it had lost: the lines after were read back from past its end, as zeros,
// and counted nowhere.)
func TestLinesAfterAStreamLossAreRead(t *testing.T) {
	dir, w := lossyLogs(t, false, false)
	checkLines(t, dir, sixteen("a", 0, 256)+gap100+sixteen("d", 0, 10))
	if out, errb := w.Missing(); out != 100 || errb != 0 {
		t.Errorf("missing %d+%d, want b's 100", out, errb)
	}
}

// TestHeldBackLinesAfterAStreamLossReturn: lines that stdout.log took after losing a
// batch, and combined.log could not take, are written there in their place once it
// has room: only the batch neither file holds is missing.
func TestHeldBackLinesAfterAStreamLossReturn(t *testing.T) {
	dir, w := lossyLogs(t, true, false)
	checkLines(t, dir, sixteen("a", 0, 256)+gap100+sixteen("c", 0, 10)+sixteen("d", 0, 10))
	if out, errb := w.Missing(); out != 100 || errb != 0 {
		t.Errorf("missing %d+%d, want b's 100", out, errb)
	}
}

// TestGapMarkedOnAFullDisk: with the disk full to the end, lines neither stdout.log
// nor combined.log could take are marked in the views, in their place, by a line that
// counts them (the index keeps room for it); the losses of one stream recorded one
// after the other (b's and d's) are one marker that sums them, in the views and in
// -n alike.
func TestGapMarkedOnAFullDisk(t *testing.T) {
	dir, w := lossyLogs(t, false, true)
	got := readAll(t, Source{Dir: dir}, sched.LogOptions{})
	// b's gap is marked when d comes (the index has room), d's at the end.
	want := strings.Split(sixteen("a", 0, 256)+"[wick: 110 lines of stdout missing here: the log files could not take them]", "\n")
	if len(got) != len(want) {
		t.Fatalf("%d lines read, want %d", len(got), len(want))
	}
	for i, l := range got {
		if l.Text != want[i] || l.Gap != (i >= 256) {
			t.Fatalf("line %d: %q (gap %v), want %q", i, l.Text, l.Gap, want[i])
		}
	}
	if out, errb := w.Missing(); out != 110 || errb != 0 {
		t.Errorf("missing %d+%d, want b's 100 and d's 10", out, errb)
	}
	// -n counts a marker as the one line it is.
	for n := 1; n <= 3; n++ {
		tail := readAll(t, Source{Dir: dir}, sched.LogOptions{Tail: n})
		if len(tail) != n || tail[n-1].Text != want[256] {
			t.Errorf("-n %d: %v", n, tail)
			continue
		}
		for i, l := range tail {
			if l.Text != want[257-n+i] {
				t.Errorf("-n %d: line %d is %q, want %q", n, i, l.Text, want[257-n+i])
			}
		}
	}
	// One stream's view: the same marker.
	if out := readAll(t, Source{Dir: dir}, sched.LogOptions{Streams: sched.Stdout, Tail: 1}); len(out) != 1 || out[0].Text != want[256] {
		t.Errorf("stdout -n 1: %v", out)
	}
}

// TestHeldBackFinalLineKeepsItsRecord: a stream that ends inside a line while
// combined.log takes nothing gets that line back in its own record once there is
// room: a partial record is one line. (It was joined to the lines held back before
// it, in a partial record of 101 lines, which readers took for a damaged index.)
func TestHeldBackFinalLineKeepsItsRecord(t *testing.T) {
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
	if _, err := pw.WriteString(sixteen("a", 0, 256)); err != nil {
		t.Fatal(err)
	}
	waitFor(t, func() bool {
		st, err := os.Stat(filepath.Join(dir, CombinedFile))
		return err == nil && st.Size() == 4096
	})
	filler := fillLeaving(t, disk)
	if _, err := pw.WriteString(sixteen("b", 0, 100) + "unfinished"); err != nil {
		t.Fatal(err)
	}
	pw.Close()
	<-copied
	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	w.Settle()
	_ = w.End()
	_ = w.Close()
	var warned []string
	got := readAll(t, Source{Dir: dir, Warn: func(s string) { warned = append(warned, s) }}, sched.LogOptions{})
	want := strings.Split(sixteen("a", 0, 256)+sixteen("b", 0, 100)+"unfinished", "\n")
	if len(got) != len(want) || len(warned) > 0 {
		t.Fatalf("%d lines read, want %d; warnings %q", len(got), len(want), warned)
	}
	if l := got[len(got)-1]; l.Text != "unfinished" || !l.Partial {
		t.Errorf("last line %+v, want the partial line", l)
	}
	if out, _ := w.Missing(); out != 0 {
		t.Errorf("missing %d, want none", out)
	}
}

// TestIndexRoomReservedWhileWritten: the index keeps room allocated past its end
// while its writer runs (for the records of a full disk and the end mark), and gives
// it back when the writer is closed.
func TestIndexRoomReservedWhileWritten(t *testing.T) {
	dir := t.TempDir()
	w, err := NewRecorder().Create(dir)
	if err != nil {
		t.Fatal(err)
	}
	allocated := func() int64 {
		var st unix.Stat_t
		if err := unix.Stat(filepath.Join(dir, IndexFile), &st); err != nil {
			t.Fatal(err)
		}
		return st.Blocks * 512
	}
	if a := allocated(); a < idxReserve {
		w.Close()
		t.Skipf("the file system of %s reserves nothing (fallocate): %d bytes allocated", dir, a)
	}
	_ = w.End()
	_ = w.Close()
	if a := allocated(); a >= idxReserve {
		t.Errorf("%d bytes still allocated to the index after Close", a)
	}
}
