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
	bell, chime := NewBell(pw), NewChime(pr)
	t.Cleanup(func() { bell.Close(); chime.Close() })
	rec := NewRecorder()
	rec.SetBell(bell)
	return rec, bell, chime
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
	bell := NewBell(pw)
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
