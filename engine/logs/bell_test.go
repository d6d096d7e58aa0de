package logs

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/wick-dev/wick/engine/sched"
)

// bellPair returns a Recorder that rings a bell, and the chime of that bell.
func bellPair(t *testing.T) (*Recorder, *Bell, *Chime) {
	t.Helper()
	pr, pw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	bell, chime := newBell(t, pw), NewChime(pr)
	t.Cleanup(func() { bell.Close(); chime.Close() })
	rec := NewRecorder()
	rec.SetBell(bell)
	return rec, bell, chime
}

// newBell returns a bell of pw that rings at once (its report, empty, written).
func newBell(t *testing.T, pw *os.File) *Bell {
	t.Helper()
	b := NewReportBell(pw)
	if err := b.Report(""); err != nil {
		t.Fatal(err)
	}
	return b
}

// inotifyFDs counts this process's inotify instances.
func inotifyFDs(t *testing.T) int {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Skipf("no /proc/self/fd: %v", err)
	}
	n := 0
	for _, e := range ents {
		if target, _ := os.Readlink(filepath.Join("/proc/self/fd", e.Name())); target == "anon_inode:inotify" {
			n++
		}
	}
	return n
}

func TestChimeFollowsLinesAndBarsWithoutInotify(t *testing.T) {
	rec, bell, chime := bellPair(t)
	r := newReplicaLogs(t, rec)
	before := inotifyFDs(t)
	it, err := Open(Source{Dir: r.dir, Role: "echo", Chime: chime}, sched.LogOptions{Follow: true, Pending: true})
	if err != nil {
		t.Fatal(err)
	}
	defer it.Close()
	if n := inotifyFDs(t); n != before {
		t.Errorf("following through a chime opened %d inotify instances", n-before)
	}
	for i := range 3 {
		r.out.WriteString("line\n")
		if l := next(t, it); l.Text != "line" || l.Pending {
			t.Fatalf("line %d: %+v", i, l)
		}
	}
	r.out.WriteString("\r 50%|#####     |")
	if l := next(t, it); !l.Pending || l.Text != " 50%|#####     |" {
		t.Fatalf("progress bar: %+v", l)
	}
	r.out.WriteString(" done\n")
	if l := next(t, it); l.Pending || l.Text != "\r 50%|#####     | done" {
		t.Fatalf("committed bar: %+v", l)
	}
	r.stop()
	if err := r.w.End(); err != nil {
		t.Fatal(err)
	}
	// The supervisor closes its bell once every log is ended.
	bell.Close()
	if _, err := nextWithin(t, it, 10*time.Second); !errors.Is(err, io.EOF) {
		t.Fatalf("after the end: %v, want EOF", err)
	}
}

func TestChimeEndsWhenTheBellsWriterDies(t *testing.T) {
	rec, bell, chime := bellPair(t)
	r := newReplicaLogs(t, rec)
	r.write(sched.Stdout, "one\n")
	it, err := Open(Source{Dir: r.dir, Chime: chime}, sched.LogOptions{Follow: true})
	if err != nil {
		t.Fatal(err)
	}
	defer it.Close()
	r.write(sched.Stdout, "two\n")
	// A supervisor killed with SIGKILL: its end of the pipe closes, no end mark.
	bell.Close()
	for _, want := range []string{"one", "two"} {
		if l := next(t, it); l.Text != want {
			t.Fatalf("got %+v, want %q", l, want)
		}
	}
	if _, err := nextWithin(t, it, 10*time.Second); !errors.Is(err, io.EOF) {
		t.Fatalf("after the bell's writer died: %v, want EOF", err)
	}
}

func TestBellOfAFollowerThatLeftNeitherBlocksNorFails(t *testing.T) {
	pr, pw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	bell := newBell(t, pw)
	defer bell.Close()
	rec := NewRecorder()
	rec.SetBell(bell)
	r := newReplicaLogs(t, rec)
	// A launcher that holds its end and does not read (busy): more rings than a
	// pipe holds, and none blocks the writer.
	for range 100_000 {
		bell.Ring()
	}
	r.write(sched.Stdout, "one\n")
	// The launcher exited (wick run --detach): the bell closes itself.
	pr.Close()
	bell.Ring()
	r.write(sched.Stdout, "two\n")
	it, err := Open(Source{Dir: r.dir}, sched.LogOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer it.Close()
	for _, want := range []string{"one", "two"} {
		if l := next(t, it); l.Text != want {
			t.Fatalf("got %+v, want %q", l, want)
		}
	}
}

// readWithin reads what the pipe holds within d (nothing: "").
func readWithin(t *testing.T, r *os.File, d time.Duration) string {
	t.Helper()
	if err := r.SetReadDeadline(time.Now().Add(d)); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 64)
	n, err := r.Read(buf)
	if err != nil && !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatal(err)
	}
	return string(buf[:n])
}

// TestReportBellHoldsRingsUntilItsReport: the supervisor's bell is rung by its logs
// from the start, before its report of the start is written. The launcher reads the
// report first, so nothing comes before it; the rings before it come after it, once,
// so that a follower that read the files before those writes reads them. A bell that
// did not ring meanwhile adds nothing to the report.
func TestReportBellHoldsRingsUntilItsReport(t *testing.T) {
	for _, rang := range []int{0, 1, 3} {
		pr, pw, err := os.Pipe()
		if err != nil {
			t.Fatal(err)
		}
		bell := NewReportBell(pw)
		for range rang {
			bell.Ring()
		}
		if got := readWithin(t, pr, 50*time.Millisecond); got != "" {
			t.Errorf("rang %d times: %q before the report", rang, got)
		}
		if err := bell.Report("ok\n"); err != nil {
			t.Fatal(err)
		}
		want := "ok\n"
		if rang > 0 {
			want += "\x01"
		}
		if got := readWithin(t, pr, 5*time.Second); got != want {
			t.Errorf("rang %d times before the report: read %q, want %q", rang, got, want)
		}
		bell.Ring()
		if got := readWithin(t, pr, 5*time.Second); got != "\x01" {
			t.Errorf("a ring after the report: %q", got)
		}
		bell.Close()
		pr.Close()
	}
}

// TestReportBellClosedBeforeItsReport: a bell closed before its report (a supervisor
// that failed first) ends the pipe: the reader sees its end, nothing else.
func TestReportBellClosedBeforeItsReport(t *testing.T) {
	pr, pw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer pr.Close()
	bell := NewReportBell(pw)
	bell.Ring()
	bell.Close()
	if err := bell.Report("ok\n"); err == nil {
		t.Error("a report on a closed bell was written")
	}
	if err := pr.SetReadDeadline(time.Now().Add(5 * time.Second)); err != nil {
		t.Fatal(err)
	}
	if b, err := io.ReadAll(pr); err != nil || len(b) != 0 {
		t.Errorf("read %q, %v; want the pipe's end alone", b, err)
	}
}
