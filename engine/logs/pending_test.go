package logs

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/wick-dev/wick/engine/sched"
	"github.com/wick-dev/wick/internal/testkit"
)

// next returns the next line within a generous deadline.
func next(t *testing.T, it sched.LogIterator) sched.Line {
	t.Helper()
	l, err := nextWithin(t, it, 10*time.Second)
	if err != nil {
		t.Fatalf("Next: %v", err)
	}
	return l
}

func TestPendingLineFollowsProgressBar(t *testing.T) {
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	clock := &fakeClock{t: t0}
	rec := NewRecorder()
	rec.now = clock.now
	r := newReplicaLogs(t, rec)
	it, err := Open(Source{Dir: r.dir, Role: "trainer", Replica: 1}, sched.LogOptions{Follow: true, Pending: true})
	if err != nil {
		t.Fatal(err)
	}
	defer it.Close()

	// Copy stamps a chunk once it is in stdout.log, where the follower may see it
	// first: the clock moves only after the first chunk's read of it.
	before := clock.readCount()
	for i, step := range []struct{ write, want string }{
		{"\r  10%|#         |", "  10%|#         |"},
		{"\r  20%|##        |", "  20%|##        |"},
		// A bar drawn as "text\r" shows its last text.
		{"\r  30%|###       |\r", "  30%|###       |"},
	} {
		if i == 1 {
			// The first chunk is stamped before the clock moves on: the line began
			// at t0, then grew for a minute.
			clock.readsAfter(t, before)
			clock.set(t0.Add(time.Minute))
		}
		r.out.WriteString(step.write)
		l := next(t, it)
		if !l.Pending || l.Text != step.want || l.Stream != sched.Stdout || l.Role != "trainer" || l.Replica != 1 {
			t.Fatalf("step %d: got %+v, want pending %q", i, l, step.want)
		}
	}
	if it.Ready() {
		t.Fatal("ready with nothing new")
	}
	r.out.WriteString(" done\n")
	l := next(t, it)
	if l.Pending || l.Text != "\r  10%|#         |\r  20%|##        |\r  30%|###       |\r done" {
		t.Fatalf("committed line: %+v", l)
	}
	// The line began a minute before it ended: its time is its first byte's.
	if !l.Time.Equal(t0) {
		t.Fatalf("committed line time %v, want %v (its first byte)", l.Time, t0)
	}
	r.err.WriteString("\ra stderr bar")
	if l := next(t, it); !l.Pending || l.Text != "a stderr bar" || l.Stream != sched.Stderr {
		t.Fatalf("stderr pending line: %+v", l)
	}
	r.err.WriteString("\n")
	if l := next(t, it); l.Pending || l.Text != "\ra stderr bar" || l.Stream != sched.Stderr {
		t.Fatalf("stderr line: %+v", l)
	}
	r.out.WriteString("next line begins")
	if l := next(t, it); !l.Pending || l.Text != "next line begins" {
		t.Fatalf("new pending line: %+v", l)
	}
	r.out.WriteString(" and ends\nsecond\n")
	if l := next(t, it); l.Pending || l.Text != "next line begins and ends" {
		t.Fatalf("after pending: %+v", l)
	}
	if l := next(t, it); l.Pending || l.Text != "second" {
		t.Fatalf("second: %+v", l)
	}
	if _, err := nextWithin(t, it, 50*time.Millisecond); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("a pending line was yielded with none written: %v", err)
	}
}

func TestPendingOffByDefault(t *testing.T) {
	r := newReplicaLogs(t, nil)
	it, err := Open(Source{Dir: r.dir}, sched.LogOptions{Follow: true})
	if err != nil {
		t.Fatal(err)
	}
	defer it.Close()
	r.out.WriteString("\r 50%")
	r.out.WriteString("\nwhole\n")
	for _, want := range []string{"\r 50%", "whole"} {
		if l := next(t, it); l.Pending || l.Text != want {
			t.Fatalf("got %+v, want committed %q", l, want)
		}
	}
}

func TestPendingIsBounded(t *testing.T) {
	r := newReplicaLogs(t, nil)
	it, err := Open(Source{Dir: r.dir}, sched.LogOptions{Follow: true, Pending: true, Streams: sched.Stdout})
	if err != nil {
		t.Fatal(err)
	}
	defer it.Close()
	// 4 MB of \r updates, then one segment four times the cap, no newline.
	update := "\r" + strings.Repeat("=", 999)
	for range 4096 {
		r.out.WriteString(update)
	}
	long := strings.Repeat("x", 4*MaxPending)
	r.out.WriteString("\r" + long)
	deadline := time.Now().Add(testkit.Scale(10 * time.Second))
	for {
		l := next(t, it)
		if !l.Pending || len(l.Text) > MaxPending {
			t.Fatalf("pending line of %d bytes (cap %d): pending %v", len(l.Text), MaxPending, l.Pending)
		}
		if strings.HasPrefix(l.Text, "x") {
			// The segment arrives in pieces; once past the cap it is cut.
			if !strings.HasPrefix(long, l.Text) || l.Cut && len(l.Text) != MaxPending {
				t.Fatalf("long segment: cut %v, %d bytes", l.Cut, len(l.Text))
			}
			if l.Cut {
				break
			}
			continue
		}
		if l.Cut || l.Text != update[1:] {
			t.Fatalf("update: cut %v, %d bytes", l.Cut, len(l.Text))
		}
		if time.Now().After(deadline) {
			t.Fatal("the long segment never came")
		}
	}
	r.out.WriteString("\n")
	// The committed line is longer than MaxLine: its start, cut, with its length.
	if l := next(t, it); l.Pending || !l.Cut || len(l.Text) != MaxLine || l.Size != 4096*1000+1+int64(len(long)) {
		t.Fatalf("committed line: pending %v, cut %v, %d bytes of %d", l.Pending, l.Cut, len(l.Text), l.Size)
	}
}

func TestPendingAfterTail(t *testing.T) {
	r := newReplicaLogs(t, nil)
	for i := range 5 {
		r.write(sched.Stdout, strings.Repeat("o", i+1)+"\n")
		r.write(sched.Stderr, strings.Repeat("e", i+1)+"\n")
	}
	r.write(sched.Stderr, "\rerr bar 1\rerr bar 2")
	r.write(sched.Stdout, "half a line")
	it, err := Open(Source{Dir: r.dir}, sched.LogOptions{Follow: true, Pending: true, Tail: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer it.Close()
	var got []string
	for range 3 {
		l := next(t, it)
		got = append(got, string(l.Stream)+":"+l.Text+map[bool]string{true: " (pending)"}[l.Pending])
	}
	want := []string{"stderr:eeeee", "stdout:half a line (pending)", "stderr:err bar 2 (pending)"}
	eq(t, got, want)
}

// TestCarriedLineThenMoreLines: a line begun in an earlier read, ended in a read that
// holds more lines, keeps its first byte's time, and the stream's end adds nothing.
func TestCarriedLineThenMoreLines(t *testing.T) {
	clock := &fakeClock{}
	rec := NewRecorder()
	rec.now = clock.now
	r := newReplicaLogs(t, rec)
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	clock.set(t0)
	r.write(sched.Stdout, "begun")
	clock.set(t0.Add(time.Second))
	r.write(sched.Stdout, " and ended\nsecond\nthird\n")
	r.stop()
	if err := r.w.End(); err != nil {
		t.Fatal(err)
	}
	lines := readAll(t, Source{Dir: r.dir}, sched.LogOptions{})
	eq(t, texts(lines), []string{"std:begun and ended", "std:second", "std:third"})
	// The index holds the two runs and the end mark: no stray partial run of bytes
	// already written (the stream's position must pass both runs).
	idx, err := os.ReadFile(filepath.Join(r.dir, IndexFile))
	if err != nil {
		t.Fatal(err)
	}
	for off := recordSize; off+recordSize <= len(idx); off += recordSize {
		if rec := decodeRecord(idx[off:]); rec.partial() {
			t.Fatalf("a partial run at %d (%d bytes) after whole lines", rec.streamOff, rec.length)
		}
	}
	if !lines[0].Time.Equal(t0) || !lines[1].Time.Equal(t0.Add(time.Second)) {
		t.Fatalf("times %v %v, want %v then a second later", lines[0].Time, lines[1].Time, t0)
	}
}

// TestPendingBecomesCut: a segment first seen at exactly the cap, then growing past
// it, keeps the same text but must be yielded again as cut (the wall says "the rest
// is in the logs"). It was not: the text had not changed.
func TestPendingBecomesCut(t *testing.T) {
	r := newReplicaLogs(t, nil)
	it, err := Open(Source{Dir: r.dir}, sched.LogOptions{Follow: true, Pending: true, Streams: sched.Stdout})
	if err != nil {
		t.Fatal(err)
	}
	defer it.Close()
	r.out.WriteString(strings.Repeat("x", MaxPending))
	if l := next(t, it); !l.Pending || l.Cut || len(l.Text) != MaxPending {
		t.Fatalf("at the cap: pending %v cut %v, %d bytes", l.Pending, l.Cut, len(l.Text))
	}
	r.out.WriteString("more")
	if l := next(t, it); !l.Pending || !l.Cut || len(l.Text) != MaxPending {
		t.Fatalf("past the cap: pending %v cut %v, %d bytes", l.Pending, l.Cut, len(l.Text))
	}
}
