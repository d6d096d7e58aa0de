package slurm

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/wick-dev/wick/engine/sched"
	"github.com/wick-dev/wick/internal/testkit"
)

// These tests read real files the way Slurm's are read: no cluster needed.

func readAll(t *testing.T, it sched.LogIterator) []sched.Line {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), testkit.Scale(30*time.Second))
	defer cancel()
	var out []sched.Line
	for {
		l, err := it.Next(ctx)
		if err == io.EOF {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, l)
	}
}

func TestFileIterOptions(t *testing.T) {
	path := filepath.Join(t.TempDir(), "slurm-1-r-0.out")
	long := strings.Repeat("x", maxLine+10)
	if err := os.WriteFile(path, []byte("a 1\r\nb 2\n"+long+"\nc 3\npartial"), 0o600); err != nil {
		t.Fatal(err)
	}
	never := func(context.Context) bool { return false }
	open := func(o sched.LogOptions) *fileIter { return newFileIter(path, sched.Stdout, "r", 0, o, never) }

	got := readAll(t, open(sched.LogOptions{}))
	if len(got) != 6 || got[0].Text != "a 1" || got[1].Text != "b 2" || len(got[2].Text) != maxLine || got[3].Text != "xxxxxxxxxx" ||
		got[4].Text != "c 3" || got[5].Text != "partial" || !got[5].Partial || got[4].Partial {
		t.Fatalf("lines: %d %+v", len(got), got[len(got)-1])
	}
	if got[0].Stream != sched.Stdout || got[0].Role != "r" || got[0].Time.IsZero() {
		t.Errorf("line %+v", got[0])
	}
	if got := readAll(t, open(sched.LogOptions{Tail: 2})); len(got) != 2 || got[0].Text != "c 3" {
		t.Errorf("tail 2: %+v", got)
	}
	if got := readAll(t, open(sched.LogOptions{Regex: regexp.MustCompile(`^[ab] `)})); len(got) != 2 {
		t.Errorf("regex: %+v", got)
	}
	// The ended lines carry the file's time (no index); the unended last one the time
	// it is read, which on a busy machine may be more than a second later.
	fi, _ := os.Stat(path)
	ended := func(lines []sched.Line) (n int) {
		for _, l := range lines {
			if !l.Partial {
				n++
			}
		}
		return n
	}
	if got := readAll(t, open(sched.LogOptions{Since: fi.ModTime().Add(time.Second)})); ended(got) != 0 {
		t.Errorf("since after the file's time: %d ended lines", ended(got))
	}
	if got := readAll(t, open(sched.LogOptions{Until: fi.ModTime().Add(time.Second)})); ended(got) != 5 {
		t.Errorf("until after the file's time: %d ended lines, want 5", ended(got))
	}
	// A file that does not exist (a job still pending) has no lines yet.
	if got := readAll(t, newFileIter(path+".none", sched.Stdout, "r", 0, sched.LogOptions{}, never)); len(got) != 0 {
		t.Errorf("missing file: %+v", got)
	}
}

// TestFileIterFollow: a follower sees a file appear and grow, lines split across
// writes joined, and ends once the job has ended and the rest is read.
func TestFileIterFollow(t *testing.T) {
	path := filepath.Join(t.TempDir(), "out")
	var ended atomic.Bool
	it := newFileIter(path, sched.Stderr, "r", 1, sched.LogOptions{Follow: true}, func(context.Context) bool { return ended.Load() })
	defer it.Close()
	if it.Ready() {
		t.Error("Ready before the file exists")
	}
	lines := make(chan sched.Line)
	errs := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), testkit.Scale(30*time.Second))
		defer cancel()
		for {
			l, err := it.Next(ctx)
			if err != nil {
				errs <- err
				close(lines)
				return
			}
			lines <- l
		}
	}()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	f.WriteString("one\ntw")
	if l := <-lines; l.Text != "one" || l.Stream != sched.Stderr || l.Replica != 1 {
		t.Errorf("first %+v", l)
	}
	time.Sleep(50 * time.Millisecond)
	f.WriteString("o\nlast")
	if l := <-lines; l.Text != "two" || l.Partial {
		t.Errorf("second %+v", l)
	}
	ended.Store(true)
	if l := <-lines; l.Text != "last" || !l.Partial {
		t.Errorf("third %+v", l)
	}
	if _, ok := <-lines; ok {
		t.Error("a line after the end")
	}
	if err := <-errs; err != io.EOF {
		t.Errorf("end: %v", err)
	}
}

// TestFileIterBoundedMemory: a large file is read a chunk at a time, never held whole.
func TestFileIterBoundedMemory(t *testing.T) {
	path := filepath.Join(t.TempDir(), "big")
	line := strings.Repeat("y", 99) + "\n"
	if err := os.WriteFile(path, []byte(strings.Repeat(line, 20000)), 0o600); err != nil { // 2 MB
		t.Fatal(err)
	}
	it := newFileIter(path, sched.Stdout, "r", 0, sched.LogOptions{}, func(context.Context) bool { return false })
	defer it.Close()
	n, most := 0, 0
	for {
		l, err := it.Next(context.Background())
		if err == io.EOF {
			break
		}
		if err != nil || len(l.Text) != 99 {
			t.Fatalf("line %d: %q %v", n, l.Text, err)
		}
		n++
		most = max(most, len(it.lines))
	}
	if n != 20000 || most > readChunk/100+1 {
		t.Errorf("%d lines, at most %d held (want at most a chunk's, %d)", n, most, readChunk/100+1)
	}
}
