package logs

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/wick-dev/wick/engine/sched"
	"github.com/wick-dev/wick/internal/testkit"
)

// readySlice is a finished source that says it is ready (a Readier), as an iterator
// over a finished replica's logs does: Merge orders its lines exactly.
type readySlice struct{ lines []sched.Line }

func (s *readySlice) Next(context.Context) (sched.Line, error) {
	if len(s.lines) == 0 {
		return sched.Line{}, io.EOF
	}
	l := s.lines[0]
	s.lines = s.lines[1:]
	return l, nil
}
func (s *readySlice) Ready() bool  { return true }
func (s *readySlice) Close() error { return nil }

// scanMerge is the order Merge promises, as the merge before the heap found it: the
// head line with the earliest time, of equal times the first source's, one line at a
// time, each source's lines in their own order (even out of time order).
func scanMerge(in [][]sched.Line) []sched.Line {
	srcs := append([][]sched.Line(nil), in...)
	var out []sched.Line
	for {
		best := -1
		for i, q := range srcs {
			if len(q) > 0 && (best < 0 || q[0].Time.Before(srcs[best][0].Time)) {
				best = i
			}
		}
		if best < 0 {
			return out
		}
		out = append(out, srcs[best][0])
		srcs[best] = srcs[best][1:]
	}
}

// randomSources returns n sources of up to max lines, their times drawn from a few
// values so that many are equal, on both streams; each source's times never go back
// unless unordered.
func randomSources(r *rand.Rand, n, maxLines int, unordered bool) [][]sched.Line {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	srcs := make([][]sched.Line, n)
	for k := range srcs {
		step := 0
		for j := range r.IntN(maxLines + 1) {
			if unordered {
				step = r.IntN(8)
			} else {
				step += r.IntN(3) // 0: the same time as the line before
			}
			s := sched.Stdout
			if r.IntN(3) == 0 {
				s = sched.Stderr
			}
			srcs[k] = append(srcs[k], sched.Line{Time: t0.Add(time.Duration(step) * time.Millisecond), Stream: s,
				Replica: k, Text: fmt.Sprintf("%d.%d", k, j)})
		}
	}
	return srcs
}

func lineKey(l sched.Line) string {
	return fmt.Sprintf("%d %s %s %d %s", l.Replica, l.Stream, l.Role, l.Time.UnixNano(), l.Text)
}

// mergeAll reads m to its end within a deadline.
func mergeAll(t *testing.T, m sched.LogIterator) []sched.Line {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), testkit.Scale(20*time.Second))
	defer cancel()
	var out []sched.Line
	for {
		l, err := m.Next(ctx)
		if errors.Is(err, io.EOF) {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, l)
	}
}

func sameLines(t *testing.T, what string, got, want []sched.Line) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d lines, want %d", what, len(got), len(want))
	}
	for i := range got {
		if g, w := lineKey(got[i]), lineKey(want[i]); g != w {
			t.Fatalf("%s: line %d is %q, want %q", what, i, g, w)
		}
	}
}

// TestMergeOrderMatchesLineByLineScan: the merge delivers, line for line, what the
// scan of every source's head (the merge before its heap) delivers, on 400 random
// sets of finished sources: 2 to 300 of them, many lines of equal times (ties go to
// the source given first: a Slurm replica's stdout before its stderr, replica 0
// before 1), some sources out of time order, some empty.
func TestMergeOrderMatchesLineByLineScan(t *testing.T) {
	r := rand.New(rand.NewPCG(23, 1))
	for set := range 400 {
		n := 2 + r.IntN(30)
		if set%20 == 0 {
			n = 100 + r.IntN(200)
		}
		srcs := randomSources(r, n, 1+r.IntN(60), set%4 == 3)
		its := make([]sched.LogIterator, n)
		for k, q := range srcs {
			its[k] = &readySlice{lines: q}
		}
		want := scanMerge(srcs)
		m := Merge(its...)
		got := mergeAll(t, m)
		m.Close()
		sameLines(t, "set "+strconv.Itoa(set), got, want)
	}
}

// TestMergeOfReplicaLogsMatchesLineByLineScan is the same on replicas' log files read
// by their iterators (runs of 1 to 6 lines; every other set with the small blocks a
// merge of many replicas asks of them), and on Merges of Merges (a Slurm replica's
// two files).
func TestMergeOfReplicaLogsMatchesLineByLineScan(t *testing.T) {
	r := rand.New(rand.NewPCG(23, 2))
	base := t.TempDir()
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).UnixNano()
	for set := range 30 {
		n := 2 + r.IntN(40)
		var dirs []string
		var files [][]sched.Line // what each replica's iterator gives
		for k := range n {
			dir := filepath.Join(base, strconv.Itoa(set), strconv.Itoa(k))
			step := int64(0)
			if err := writeRunsLog(dir, r.IntN(80), 1+r.IntN(6), func(int) (int64, bool) {
				step += int64(r.IntN(3))
				return t0 + step*int64(time.Millisecond), r.IntN(3) == 0
			}); err != nil {
				t.Fatal(err)
			}
			dirs = append(dirs, dir)
			it, err := Open(Source{Dir: dir, Role: "sh", Replica: k}, sched.LogOptions{})
			if err != nil {
				t.Fatal(err)
			}
			files = append(files, mergeAll(t, it))
			it.Close()
		}
		want := scanMerge(files)
		var its []sched.LogIterator
		for k, dir := range dirs {
			it, err := Open(Source{Dir: dir, Role: "sh", Replica: k}, sched.LogOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if set%2 == 1 {
				// Blocks as small as a merge of thousands of replicas reads, or
				// smaller than a run.
				it.limitBlock(int64(1 + r.IntN(400)))
			}
			its = append(its, it)
		}
		m := Merge(its...)
		sameLines(t, "set "+strconv.Itoa(set), mergeAll(t, m), want)
		m.Close()

		// Each replica as its stdout and stderr merged, as a Slurm replica is read.
		var nodes []sched.LogIterator
		for k, dir := range dirs {
			var pair []sched.LogIterator
			for _, s := range []sched.Stream{sched.Stdout, sched.Stderr} {
				it, err := Open(Source{Dir: dir, Role: "sh", Replica: k}, sched.LogOptions{Streams: s})
				if err != nil {
					t.Fatal(err)
				}
				pair = append(pair, it)
			}
			nodes = append(nodes, Merge(pair...))
		}
		var byFile [][]sched.Line
		for _, lines := range files {
			var out, errs []sched.Line
			for _, l := range lines {
				if l.Stream == sched.Stderr {
					errs = append(errs, l)
				} else {
					out = append(out, l)
				}
			}
			byFile = append(byFile, scanMerge([][]sched.Line{out, errs}))
		}
		m = Merge(nodes...)
		sameLines(t, "nested set "+strconv.Itoa(set), mergeAll(t, m), scanMerge(byFile))
		m.Close()
	}
}

// scanPick is the merge's decision as the scan of every source made it before the
// heap: the source whose head may be delivered now (or -1), whether to wait.
func scanPick(m *Merged, now time.Time) (int, bool) {
	best := -1
	for i := range m.srcs {
		s := &m.srcs[i]
		if len(s.q) > 0 && (best < 0 || s.q[0].Time.Before(m.srcs[best].q[0].Time)) {
			best = i
		}
	}
	if best < 0 {
		return -1, false
	}
	var wait time.Duration
	for i := range m.srcs {
		s := &m.srcs[i]
		if i == best || s.done || len(s.q) > 0 {
			continue
		}
		if s.exact {
			if !s.idle {
				return -1, false
			}
			left := followGrace - now.Sub(m.srcs[best].q[0].Time)
			left = min(left, followGrace-now.Sub(m.srcs[best].qAt))
			if left > 0 {
				wait = max(wait, left)
			}
			continue
		}
		if left := inexactWait - now.Sub(s.emptySince); left > 0 {
			wait = max(wait, left)
		}
	}
	if wait > 0 {
		return -1, true
	}
	return best, false
}

// scanReading is whether a Readier source's pump is reading, as the scan found it.
func scanReading(m *Merged) bool {
	for i := range m.srcs {
		if s := &m.srcs[i]; s.exact && !s.idle && !s.done && len(s.q) == 0 {
			return true
		}
	}
	return false
}

// TestMergePickMatchesScan drives a Merged's state by hand, as its pumps would, with
// random batches, idle notices, ends and errors of following sources, exact and not,
// and checks after every step that the heap and its counts decide what the scan of
// every source decided: which line goes next, or whether to wait (for a source
// reading, one idle a grace after a line's stamp or arrival, one inexact since its
// queue emptied). Times are an hour or more from now, so that the test's own pace
// changes no decision.
func TestMergePickMatchesScan(t *testing.T) {
	r := rand.New(rand.NewPCG(23, 3))
	var picked, waited, blocked int // what the decisions were, to know each was tested
	for run := range 400 {
		n := 2 + r.IntN(6)
		if run%10 == 0 {
			n = 10 + r.IntN(30)
		}
		its := make([]sched.LogIterator, n)
		for k := range its {
			if r.IntN(4) == 0 {
				its[k] = &sliceIter{}
			} else {
				its[k] = &readySlice{}
			}
		}
		m := newMerged(its)
		now := time.Now()
		// The inexact sources' queues emptied in this order, at these times: at
		// first hours ago, later ones after now (never within minutes of it), so
		// that some waited for long enough and some not are waited for together.
		for i := range m.srcs {
			m.srcs[i].emptySince = now.Add(-150 * time.Minute)
		}
		emptied := now.Add(-50 * time.Minute)
		lineBase := now.Add(-2 * time.Hour)
		if run%2 == 1 {
			lineBase = now.Add(2 * time.Hour)
		}
		step := 0
		for ; step < 400 && m.live > 0; step++ {
			i := r.IntN(n)
			s := &m.srcs[i]
			switch op := r.IntN(20); {
			case op < 6 && !s.done:
				if !s.exact && i%2 == 0 && r.IntN(10) > 0 {
					continue // a quiet source: its old emptying stays beside newer ones
				}
				select {
				case <-s.credits: // as the pump takes one
				default:
					continue
				}
				batch := make([]sched.Line, 1+r.IntN(m.batch))
				for j := range batch {
					batch[j] = sched.Line{Replica: i, Text: strconv.Itoa(j),
						Time: lineBase.Add(time.Duration(r.IntN(6)) * time.Second)}
				}
				m.apply(mergeMsg{src: i, lines: batch})
				if r.IntN(2) == 0 {
					s.qAt = now.Add(-time.Hour) // arrived long ago (or, later, just now)
				} else {
					s.qAt = now.Add(time.Hour)
				}
			case op < 11 && s.exact && !s.done:
				m.apply(mergeMsg{src: i, idle: true})
			case op == 11 && !s.done:
				err := io.EOF
				if r.IntN(4) == 0 {
					err = errors.New("broken")
				}
				m.apply(mergeMsg{src: i, err: err})
			default:
				want, wantWait := scanPick(m, time.Now())
				got, wait := m.pick()
				if got != want || (wait > 0) != wantWait {
					t.Fatalf("run %d step %d: pick %d (wait %v), the scan %d (wait %v)", run, step, got, wait, want, wantWait)
				}
				switch {
				case got >= 0:
					picked++
				case wait > 0:
					waited++
				case m.heads.Len() > 0:
					blocked++
				}
				if got >= 0 {
					l := m.pop(got)
					if l.Replica != got {
						t.Fatalf("run %d step %d: popped a line of %d from %d", run, step, l.Replica, got)
					}
					if ps := &m.srcs[got]; !ps.exact && len(ps.q) == 0 {
						emptied = emptied.Add(83 * time.Minute) // from 33 minutes from now
						ps.emptySince = emptied
					}
				}
			}
			if got, want := m.reading > 0, scanReading(m); got != want {
				t.Fatalf("run %d step %d: reading %v, the scan %v", run, step, got, want)
			}
		}
		m.cancel()
	}
	t.Logf("%d lines picked, %d waits, %d blocked by a reading source", picked, waited, blocked)
	if picked < 100 || waited < 100 || blocked < 100 {
		t.Fatalf("too few of some decision to tell: %d picked, %d waits, %d blocked", picked, waited, blocked)
	}
}

// TestFollowerLetsGoOfWhatABacklogGrew: a follower that read a backlog of hundreds
// of runs and a long bar keeps small buffers once it has read everything (the wall
// holds one for each of 1,024 replicas), and reads what comes next as before.
func TestFollowerLetsGoOfWhatABacklogGrew(t *testing.T) {
	r := newReplicaLogs(t, nil)
	const backlog = 300
	for i := range backlog {
		r.write(sched.Stdout, "line "+strconv.Itoa(i)+"\n")
	}
	r.write(sched.Stderr, strings.Repeat("bar\r", 2000))
	it, err := Open(Source{Dir: r.dir}, sched.LogOptions{Follow: true, Pending: true})
	if err != nil {
		t.Fatal(err)
	}
	defer it.Close()
	n, bars := 0, 0
	for it.Ready() {
		l, err := nextWithin(t, it, testkit.Scale(5*time.Second))
		if err != nil {
			t.Fatal(err)
		}
		if l.Pending {
			bars++
		} else if l.Text != "line "+strconv.Itoa(n) {
			t.Fatalf("line %d is %q", n, l.Text)
		} else {
			n++
		}
	}
	if n != backlog || bars != 1 {
		t.Fatalf("%d lines and %d bars, want %d and 1", n, bars, backlog)
	}
	if len(it.buf) > idleRecords*recordSize || cap(it.spans) > idleSpans || len(it.scanBuf) > idleScan {
		t.Errorf("caught up, the follower holds %d bytes of records, %d spans and %d bytes of scan buffer; want at most %d, %d, %d",
			len(it.buf), cap(it.spans), len(it.scanBuf), idleRecords*recordSize, idleSpans, idleScan)
	}
	r.write(sched.Stdout, "after\n")
	for {
		l, err := nextWithin(t, it, testkit.Scale(5*time.Second))
		if err != nil {
			t.Fatal(err)
		}
		if !l.Pending {
			if l.Text != "after" {
				t.Fatalf("the line after the backlog is %q", l.Text)
			}
			break
		}
	}
}

// TestOneOfManyReadsSmallBlocks: an iterator told it is one of 1,024 read side by
// side reads small blocks (sideBlock), and gives the same lines; one of a few keeps
// its blocks.
func TestOneOfManyReadsSmallBlocks(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "0")
	if err := writeRunsLog(dir, 3000, 3, func(i int) (int64, bool) {
		return int64(i) * int64(time.Millisecond), i%7 == 0
	}); err != nil {
		t.Fatal(err)
	}
	read := func(n int) ([]sched.Line, int64) {
		it, err := Open(Source{Dir: dir, Role: "sh", Replica: 0}, sched.LogOptions{})
		if err != nil {
			t.Fatal(err)
		}
		defer it.Close()
		it.OneOf(n)
		return mergeAll(t, it), it.blockMax
	}
	want, few := read(4)
	got, many := read(1024)
	if few != blockSize || many != sideBlock(1024) || many >= blockSize {
		t.Fatalf("blocks of %d bytes for one of 4, %d for one of 1,024", few, many)
	}
	sameLines(t, "one of 1,024", got, want)
}

// TestOneOfManyReadsLongRunsInSmallWindows: a writer starved of the processor reads a
// pipe's 64 KB at once, one run of ~1,300 lines (supervisor's readSize). An iterator
// that is one of 1,024 holds no more than its small block of such a run at a time (the
// wall's 1,024 readers catching up a starved app's backlog held 64 KB each, 33 MB),
// gives the same lines as one of a few, and still gives a line longer than its block
// whole: here a 40 KB line inside a run of 100 KB.
func TestOneOfManyReadsLongRunsInSmallWindows(t *testing.T) {
	short := strings.Repeat(".", 50)
	long := strings.Repeat("x", 40<<10)
	var runs [][]string
	for k := range 4 {
		run := make([]string, 1300)
		for j := range run {
			run[j] = fmt.Sprintf("run %d line %04d %s", k, j, short)
		}
		if k == 2 {
			run[650] = long
		}
		runs = append(runs, run)
	}
	dir := filepath.Join(t.TempDir(), "0")
	if err := writeRunLines(dir, runs); err != nil {
		t.Fatal(err)
	}
	read := func(n int) ([]sched.Line, int) {
		it, err := Open(Source{Dir: dir, Role: "sh", Replica: 0}, sched.LogOptions{})
		if err != nil {
			t.Fatal(err)
		}
		defer it.Close()
		it.OneOf(n)
		ctx, cancel := context.WithTimeout(context.Background(), testkit.Scale(20*time.Second))
		defer cancel()
		var out []sched.Line
		held := 0 // the most text the iterator held at once
		for {
			l, err := it.Next(ctx)
			if errors.Is(err, io.EOF) {
				return out, held
			}
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, l)
			h := len(it.text)
			if it.lr != nil {
				h += len(it.lr.text)
			}
			held = max(held, h)
		}
	}
	want, _ := read(4)
	got, held := read(1024)
	sameLines(t, "one of 1,024", got, want)
	if len(got) != 4*1300 {
		t.Fatalf("%d lines, want %d", len(got), 4*1300)
	}
	if got[2*1300+650].Text != long || got[2*1300+650].Cut {
		t.Fatalf("the 40 KB line came as %d bytes (cut: %v)", len(got[2*1300+650].Text), got[2*1300+650].Cut)
	}
	if limit := int(sideBlock(1024)); held > limit {
		t.Fatalf("one of 1,024 held %d bytes of its log at once; its blocks are %d", held, limit)
	}
}

// writeRunLines writes the logs of a replica whose stdout came as runs, one record
// each, a millisecond apart.
func writeRunLines(dir string, runs [][]string) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	var comb []byte
	var b [recordSize]byte
	encodeHeader(&b)
	idx := append([]byte(nil), b[:]...)
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).UnixNano()
	for k, lines := range runs {
		r := record{time: t0 + int64(k)*int64(time.Millisecond), combOff: int64(len(comb)), streamOff: int64(len(comb)), stream: codeStdout}
		for _, l := range lines {
			comb = append(comb, l...)
			comb = append(comb, '\n')
			r.lines++
		}
		r.length = int64(len(comb)) - r.combOff
		r.encode(&b)
		idx = append(idx, b[:]...)
	}
	end := record{time: t0 + int64(len(runs))*int64(time.Millisecond), flags: flagEnd}
	end.encode(&b)
	idx = append(idx, b[:]...)
	for name, data := range map[string][]byte{StdoutFile: comb, StderrFile: nil, CombinedFile: comb, IndexFile: idx} {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o600); err != nil {
			return err
		}
	}
	return nil
}
