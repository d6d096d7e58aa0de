package logs

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/wick-dev/wick/engine/sched"
)

// Text left without a newline when a stream ends is a line of its own in
// combined.log, as in the iterated view: it is never glued to the other stream's
// next line, nor to the next attempt's first.
func TestUnterminatedTextIsNotGluedInCombined(t *testing.T) {
	r := newReplicaLogs(t, nil)
	r.write(sched.Stdout, "out 1\nfragment")
	r.out.Close()
	r.out = nil
	waitFor(t, func() bool { return fileSize(t, filepath.Join(r.dir, CombinedFile)) >= int64(len("out 1\nfragment")) })
	r.write(sched.Stderr, "err 1\nlast words")
	r.err.Close()
	r.err = nil
	r.stop()
	r.attempt++
	r.start()
	r.write(sched.Stdout, "attempt 1\n")
	r.stop()
	if err := r.w.End(); err != nil {
		t.Fatal(err)
	}
	want := "out 1\nfragment\nerr 1\nlast words\nattempt 1\n"
	if got := readFile(t, filepath.Join(r.dir, CombinedFile)); got != want {
		t.Errorf("combined.log %q, want %q", got, want)
	}
	lines := readAll(t, Source{Dir: r.dir}, sched.LogOptions{})
	eq(t, plain(lines), []string{"out 1", "fragment", "err 1", "last words", "attempt 1"})
	for i, partial := range []bool{false, true, false, true, false} {
		if lines[i].Partial != partial {
			t.Errorf("line %d %q: partial %v", i, lines[i].Text, lines[i].Partial)
		}
	}
	// The stream files keep the bytes as they came.
	if got := readFile(t, filepath.Join(r.dir, StdoutFile)); got != "out 1\nfragmentattempt 1\n" {
		t.Errorf("stdout.log %q", got)
	}
	// Reading back from the end finds the same lines.
	tail := readAll(t, Source{Dir: r.dir}, sched.LogOptions{Tail: 3})
	eq(t, plain(tail), []string{"err 1", "last words", "attempt 1"})
}

func plain(lines []sched.Line) []string {
	var out []string
	for _, l := range lines {
		out = append(out, l.Text)
	}
	return out
}

// A line begun in one read and ended in a later one, with more lines after it, is
// split off into a run of its own (it keeps its first byte's time); the stream's
// position must then account for both runs, or the end of the stream repeats bytes
// as a bogus last line.
func TestLineBegunEarlierIsWrittenOnce(t *testing.T) {
	r := newReplicaLogs(t, nil)
	r.write(sched.Stdout, "abc")
	r.write(sched.Stdout, "def\nghi\njkl\n")
	r.stop()
	if err := r.w.End(); err != nil {
		t.Fatal(err)
	}
	if got := readFile(t, filepath.Join(r.dir, CombinedFile)); got != "abcdef\nghi\njkl\n" {
		t.Errorf("combined.log %q", got)
	}
	lines := readAll(t, Source{Dir: r.dir}, sched.LogOptions{})
	eq(t, plain(lines), []string{"abcdef", "ghi", "jkl"})
	if lines[len(lines)-1].Partial {
		t.Error("last line partial")
	}
}

// A wall clock stepped back while following does not stall a merged follow by the
// size of the step: a line stamped "in the future" (read before the step) is
// delivered once it has waited its grace since it arrived, not since its stamp.
func TestMergedFollowSurvivesABackwardClockStep(t *testing.T) {
	clock := &fakeClock{}
	rec := NewRecorder()
	rec.now = clock.now
	// The line is stamped an hour ahead of the real clock: as if the clock had been
	// stepped back an hour after it was read.
	clock.set(time.Now().Add(time.Hour))
	a, b := newReplicaLogs(t, rec), newReplicaLogs(t, rec)
	w := NewWatcher()
	var its []sched.LogIterator
	for _, r := range []*replicaLogs{a, b} {
		it, err := Open(Source{Dir: r.dir, Watcher: w}, sched.LogOptions{Follow: true})
		if err != nil {
			t.Fatal(err)
		}
		its = append(its, it)
	}
	m := Merge(its...)
	defer m.Close()
	a.write(sched.Stdout, "before the step\n")
	// b stays silent.
	l, err := nextWithin(t, m, 10*time.Second)
	if err != nil || l.Text != "before the step" {
		t.Fatalf("merged follow stalled: %v %v", l, err)
	}
}
