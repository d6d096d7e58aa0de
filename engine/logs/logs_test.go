package logs

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/wick-dev/wick/engine/sched"
	"github.com/wick-dev/wick/internal/testkit"
)

// replicaLogs drives a Writer the way a supervisor does: two pipes, one Copy each.
type replicaLogs struct {
	t        *testing.T
	dir      string
	w        *Writer
	out, err *os.File // the replica's ends
	wg       sync.WaitGroup
	attempt  int
	// combined is how many bytes of whole lines combined.log must hold after the
	// writes so far; tail is each stream's unfinished line (see write).
	combined int64
	tail     [2]int64
}

func newReplicaLogs(t *testing.T, rec *Recorder) *replicaLogs {
	t.Helper()
	if rec == nil {
		rec = NewRecorder()
	}
	dir := t.TempDir()
	w, err := rec.Create(dir)
	if err != nil {
		t.Fatal(err)
	}
	r := &replicaLogs{t: t, dir: dir, w: w}
	r.start()
	t.Cleanup(func() { r.stop(); w.Close() })
	return r
}

// start begins an attempt: fresh pipes and Copy goroutines.
func (r *replicaLogs) start() {
	r.tail = [2]int64{} // the last attempt's unfinished lines were ended
	for _, s := range []sched.Stream{sched.Stdout, sched.Stderr} {
		pr, pw, err := os.Pipe()
		if err != nil {
			r.t.Fatal(err)
		}
		if s == sched.Stdout {
			r.out = pw
		} else {
			r.err = pw
		}
		r.wg.Add(1)
		go func(attempt int) {
			defer r.wg.Done()
			defer pr.Close()
			if err := r.w.Copy(s, attempt, pr); err != nil {
				r.t.Errorf("copy %s: %v", s, err)
			}
		}(r.attempt)
	}
}

// stop closes the replica's ends and waits for the copies to finish.
func (r *replicaLogs) stop() {
	if r.out != nil {
		r.out.Close()
		r.err.Close()
		r.out, r.err = nil, nil
	}
	r.wg.Wait()
}

// write writes to one stream and waits until the writer has taken it in, so that the
// order of writes across streams is the order of arrival.
func (r *replicaLogs) write(s sched.Stream, text string) {
	r.t.Helper()
	f, name := r.out, StdoutFile
	if s == sched.Stderr {
		f, name = r.err, StderrFile
	}
	before := fileSize(r.t, filepath.Join(r.dir, name))
	if _, err := f.WriteString(text); err != nil {
		r.t.Fatal(err)
	}
	waitFor(r.t, func() bool { return fileSize(r.t, filepath.Join(r.dir, name)) >= before+int64(len(text)) })
	// The lines it ends go to combined.log after the stream's file: wait for them
	// there too, so that the next write (maybe of the other stream) comes after them.
	si := 0
	if s == sched.Stderr {
		si = 1
	}
	if i := strings.LastIndexByte(text, '\n'); i >= 0 {
		r.combined += r.tail[si] + int64(i) + 1
		r.tail[si] = int64(len(text) - i - 1)
	} else {
		r.tail[si] += int64(len(text))
	}
	waitFor(r.t, func() bool { return fileSize(r.t, filepath.Join(r.dir, CombinedFile)) >= r.combined })
}

func fileSize(t *testing.T, path string) int64 {
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return st.Size()
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(testkit.Scale(10 * time.Second))
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("timed out waiting")
		}
		time.Sleep(time.Millisecond)
	}
}

// readAll reads every line; a cut line's Text is read whole through its Full reader,
// as the raw views print it (Cut and Size stay as they came).
func readAll(t *testing.T, src Source, opts sched.LogOptions) []sched.Line {
	t.Helper()
	it, err := Open(src, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer it.Close()
	ctx, cancel := context.WithTimeout(context.Background(), testkit.Scale(20*time.Second))
	defer cancel()
	var lines []sched.Line
	for {
		l, err := it.Next(ctx)
		if errors.Is(err, io.EOF) {
			return lines
		}
		if err != nil {
			t.Fatal(err)
		}
		if l.Full != nil {
			b, err := io.ReadAll(l.Full)
			if err != nil {
				t.Fatal(err)
			}
			l.Text, l.Full = string(b), nil
		}
		lines = append(lines, l)
	}
}

func texts(lines []sched.Line) []string {
	out := make([]string, len(lines))
	for i, l := range lines {
		out[i] = string(l.Stream[:3]) + ":" + l.Text
		if l.Partial {
			out[i] += "…"
		}
	}
	return out
}

func readFile(t *testing.T, path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func eq(t *testing.T, got, want []string) {
	t.Helper()
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Fatalf("got  %q\nwant %q", got, want)
	}
}

func TestLinesKeepStreamOrderAndWholeness(t *testing.T) {
	r := newReplicaLogs(t, nil)
	r.write(sched.Stdout, "a\nhel")
	r.write(sched.Stderr, "e1\ne")
	r.write(sched.Stdout, "lo\nb")
	r.write(sched.Stderr, "2\n")
	r.write(sched.Stdout, "\nno newline")
	r.stop()
	if err := r.w.End(); err != nil {
		t.Fatal(err)
	}

	if got := readFile(t, filepath.Join(r.dir, StdoutFile)); got != "a\nhello\nb\nno newline" {
		t.Errorf("stdout.log = %q", got)
	}
	if got := readFile(t, filepath.Join(r.dir, StderrFile)); got != "e1\ne2\n" {
		t.Errorf("stderr.log = %q", got)
	}
	// combined.log: whole lines only, in the order their newlines arrived; a last
	// line without one gets one there.
	if got := readFile(t, filepath.Join(r.dir, CombinedFile)); got != "a\ne1\nhello\ne2\nb\nno newline\n" {
		t.Errorf("combined.log = %q", got)
	}
	src := Source{Dir: r.dir, Role: "trainer", Replica: 3}
	lines := readAll(t, src, sched.LogOptions{})
	eq(t, texts(lines), []string{"std:a", "std:e1", "std:hello", "std:e2", "std:b", "std:no newline…"})
	if lines[1].Stream != sched.Stderr || lines[2].Stream != sched.Stdout {
		t.Errorf("streams: %+v", lines)
	}
	if lines[0].Role != "trainer" || lines[0].Replica != 3 {
		t.Errorf("role/replica not set: %+v", lines[0])
	}
	eq(t, texts(readAll(t, src, sched.LogOptions{Streams: sched.Stderr})), []string{"std:e1", "std:e2"})
	eq(t, texts(readAll(t, src, sched.LogOptions{Streams: sched.Stdout})), []string{"std:a", "std:hello", "std:b", "std:no newline…"})
	eq(t, texts(readAll(t, src, sched.LogOptions{Regex: regexp.MustCompile("^e")})), []string{"std:e1", "std:e2"})
}

func TestHugeLineAndBinaryAreIntact(t *testing.T) {
	r := newReplicaLogs(t, nil)
	huge := bytes.Repeat([]byte("0123456789abcdef"), 10<<20/16) // 10 MB, one line
	rng := rand.New(rand.NewPCG(1, 2))
	garbage := make([]byte, 1<<20)
	for i := range garbage {
		garbage[i] = byte(rng.UintN(256))
	}
	var (
		wg     sync.WaitGroup
		stdout bytes.Buffer
	)
	stdout.WriteString("before\n")
	stdout.Write(huge)
	stdout.WriteString("\n")
	stdout.Write(garbage)
	stdout.WriteString("tail without newline")
	wg.Add(1)
	go func() {
		defer wg.Done()
		// Write in odd-sized pieces so reads cut the data everywhere.
		b := stdout.Bytes()
		for len(b) > 0 {
			n := min(len(b), 1+rng.IntN(200000))
			if _, err := r.out.Write(b[:n]); err != nil {
				t.Error(err)
				return
			}
			b = b[n:]
		}
	}()
	for i := range 2000 {
		if _, err := r.err.WriteString("err line " + strings.Repeat("x", i%50) + "\n"); err != nil {
			t.Fatal(err)
		}
	}
	wg.Wait()
	r.stop()
	r.w.End()

	if got := readFile(t, filepath.Join(r.dir, StdoutFile)); got != stdout.String() {
		t.Fatalf("stdout.log differs from what was written (%d vs %d bytes)", len(got), stdout.Len())
	}
	lines := readAll(t, Source{Dir: r.dir}, sched.LogOptions{Streams: sched.Stdout})
	var rebuilt strings.Builder
	for i, l := range lines {
		rebuilt.WriteString(l.Text)
		if i < len(lines)-1 {
			rebuilt.WriteByte('\n')
			if l.Partial {
				t.Fatalf("line %d is partial but not last", i)
			}
		}
	}
	if rebuilt.String() != stdout.String() {
		t.Fatalf("lines do not rebuild stdout")
	}
	if lines[1].Text != string(huge) {
		t.Fatalf("the 10 MB line was split: line 1 has %d bytes", len(lines[1].Text))
	}
	if !lines[1].Cut || lines[1].Size != int64(len(huge)) {
		t.Fatalf("the 10 MB line: cut %v, size %d; want a cut line of %d bytes", lines[1].Cut, lines[1].Size, len(huge))
	}
	if !lines[len(lines)-1].Partial {
		t.Error("last line not partial")
	}
	errLines := readAll(t, Source{Dir: r.dir}, sched.LogOptions{Streams: sched.Stderr})
	if len(errLines) != 2000 {
		t.Fatalf("%d stderr lines, want 2000", len(errLines))
	}
	// combined holds every byte of both, line by line, and a newline after stdout's
	// unterminated last line.
	all := readAll(t, Source{Dir: r.dir}, sched.LogOptions{})
	if len(all) != len(lines)+2000 {
		t.Fatalf("combined has %d lines, want %d", len(all), len(lines)+2000)
	}
	if st := fileSize(t, filepath.Join(r.dir, CombinedFile)); st != int64(stdout.Len())+fileSize(t, filepath.Join(r.dir, StderrFile))+1 {
		t.Fatalf("combined.log has %d bytes", st)
	}
}

// fakeClock makes read times deterministic. It counts its reads: a Writer reads it
// once per chunk, after the chunk is in the stream's file (where a follower may
// already see it), so a test that moves the clock right after seeing a chunk must
// first wait for that read (see readsAfter).
type fakeClock struct {
	mu    sync.Mutex
	t     time.Time
	reads int
}

func (c *fakeClock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.reads++
	return c.t
}

// readCount is how many times the clock was read so far.
func (c *fakeClock) readCount() int { c.mu.Lock(); defer c.mu.Unlock(); return c.reads }

// readsAfter waits until the clock has been read since it had been read n times.
func (c *fakeClock) readsAfter(t *testing.T, n int) {
	t.Helper()
	testkit.Wait(t, 10*time.Second, "the writer reads the clock", func() (bool, string) {
		got := c.readCount()
		return got > n, fmt.Sprintf("%d reads, want more than %d", got, n)
	})
}

func (c *fakeClock) set(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = t
}

func TestSinceUntilTailAndAttempts(t *testing.T) {
	clock := &fakeClock{}
	rec := NewRecorder()
	rec.now = clock.now
	r := newReplicaLogs(t, rec)
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	for i := range 10 {
		clock.set(t0.Add(time.Duration(i) * time.Second))
		s := sched.Stdout
		if i%3 == 0 {
			s = sched.Stderr
		}
		r.write(s, string(rune('a'+i))+"\n")
		if i == 5 {
			// A restart: the next lines belong to attempt 1.
			r.stop()
			r.attempt = 1
			r.start()
		}
	}
	r.stop()
	r.w.End()
	src := Source{Dir: r.dir}
	at := func(i int) time.Time { return t0.Add(time.Duration(i) * time.Second) }

	lines := readAll(t, src, sched.LogOptions{})
	for i, l := range lines {
		if !l.Time.Equal(at(i)) {
			t.Errorf("line %d time %v, want %v", i, l.Time, at(i))
		}
		if want := map[bool]int{true: 1, false: 0}[i > 5]; l.Attempt != want {
			t.Errorf("line %d attempt %d, want %d", i, l.Attempt, want)
		}
	}
	eq(t, texts(readAll(t, src, sched.LogOptions{Since: at(3), Until: at(6)})), []string{"std:d", "std:e", "std:f"})
	eq(t, texts(readAll(t, src, sched.LogOptions{Since: at(3).Add(time.Millisecond)})), []string{"std:e", "std:f", "std:g", "std:h", "std:i", "std:j"})
	eq(t, texts(readAll(t, src, sched.LogOptions{Until: at(2)})), []string{"std:a", "std:b"})
	eq(t, texts(readAll(t, src, sched.LogOptions{Tail: 3})), []string{"std:h", "std:i", "std:j"})
	eq(t, texts(readAll(t, src, sched.LogOptions{Tail: 2, Streams: sched.Stderr})), []string{"std:g", "std:j"})
	eq(t, texts(readAll(t, src, sched.LogOptions{Tail: 2, Until: at(5)})), []string{"std:d", "std:e"})
	eq(t, texts(readAll(t, src, sched.LogOptions{Tail: 100, Since: at(8)})), []string{"std:i", "std:j"})
	eq(t, texts(readAll(t, src, sched.LogOptions{Tail: 2, Regex: regexp.MustCompile("[abc]")})), []string{"std:b", "std:c"})
	// Match agrees with the iterator on every line.
	opts := sched.LogOptions{Since: at(2), Until: at(8), Streams: sched.Stdout}
	var want []string
	for _, l := range lines {
		if opts.Match(l) {
			want = append(want, "std:"+l.Text)
		}
	}
	eq(t, texts(readAll(t, src, opts)), want)
}

func TestTailWithinOneRun(t *testing.T) {
	r := newReplicaLogs(t, nil)
	r.write(sched.Stdout, "1\n2\n3\n4\n5\n")
	r.stop()
	r.w.End()
	eq(t, texts(readAll(t, Source{Dir: r.dir}, sched.LogOptions{Tail: 2})), []string{"std:4", "std:5"})
}

func nextWithin(t *testing.T, it sched.LogIterator, d time.Duration) (sched.Line, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	return it.Next(ctx)
}

func TestFollowEndsAtEndMark(t *testing.T) {
	r := newReplicaLogs(t, nil)
	w := NewWatcher()
	it, err := Open(Source{Dir: r.dir, Watcher: w}, sched.LogOptions{Follow: true})
	if err != nil {
		t.Fatal(err)
	}
	defer it.Close()
	if it.Ready() {
		t.Fatal("ready with no line written")
	}
	if _, err := nextWithin(t, it, 50*time.Millisecond); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Next on empty followed log: %v, want deadline", err)
	}
	for i := range 3 {
		if _, err := r.out.WriteString("line\n"); err != nil {
			t.Fatal(err)
		}
		l, err := nextWithin(t, it, 5*time.Second)
		if err != nil || l.Text != "line" {
			t.Fatalf("line %d: %q %v", i, l.Text, err)
		}
	}
	r.out.WriteString("last without newline")
	r.stop()
	if err := r.w.End(); err != nil {
		t.Fatal(err)
	}
	l, err := nextWithin(t, it, 5*time.Second)
	if err != nil || l.Text != "last without newline" || !l.Partial {
		t.Fatalf("last line: %+v %v", l, err)
	}
	if _, err := nextWithin(t, it, 5*time.Second); !errors.Is(err, io.EOF) {
		t.Fatalf("after end mark: %v, want EOF", err)
	}
}

func TestFollowEndsWhenWriterDies(t *testing.T) {
	r := newReplicaLogs(t, nil)
	cmd := exec.Command("sleep", "60")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	proc, err := ProcOf(cmd.Process.Pid)
	if err != nil {
		t.Fatal(err)
	}
	r.write(sched.Stdout, "one\n")
	it, err := Open(Source{Dir: r.dir, Writer: proc}, sched.LogOptions{Follow: true})
	if err != nil {
		t.Fatal(err)
	}
	defer it.Close()
	if l, err := nextWithin(t, it, 5*time.Second); err != nil || l.Text != "one" {
		t.Fatalf("%v %v", l, err)
	}
	cmd.Process.Kill()
	cmd.Wait()
	if _, err := nextWithin(t, it, 5*time.Second); !errors.Is(err, io.EOF) {
		t.Fatalf("after the writer died: %v, want EOF", err)
	}
	// A process identity whose start time does not match is not alive.
	if (Proc{PID: os.Getpid(), Start: 1}).Alive() {
		t.Error("pid with another start time reads alive")
	}
	self, err := Self()
	if err != nil || !self.Alive() {
		t.Errorf("Self: %v %v", self, err)
	}
}

func TestFollowUntilAndClose(t *testing.T) {
	r := newReplicaLogs(t, nil)
	it, err := Open(Source{Dir: r.dir}, sched.LogOptions{Follow: true, Until: time.Now().Add(100 * time.Millisecond)})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := nextWithin(t, it, 5*time.Second); !errors.Is(err, io.EOF) {
		t.Fatalf("follow past until: %v, want EOF", err)
	}
	it.Close()

	it, err = Open(Source{Dir: r.dir}, sched.LogOptions{Follow: true})
	if err != nil {
		t.Fatal(err)
	}
	go func() { time.Sleep(20 * time.Millisecond); it.Close() }()
	if _, err := nextWithin(t, it, 5*time.Second); !errors.Is(err, ErrClosed) {
		t.Fatalf("Next after Close: %v", err)
	}
}

func TestMarkEnd(t *testing.T) {
	r := newReplicaLogs(t, nil)
	r.write(sched.Stdout, "x\n")
	r.stop()
	for range 2 { // idempotent
		if err := MarkEnd(r.dir); err != nil {
			t.Fatal(err)
		}
	}
	st := fileSize(t, filepath.Join(r.dir, IndexFile))
	if st != 3*recordSize {
		t.Fatalf("index has %d bytes, want header + run + one end mark", st)
	}
	it, err := Open(Source{Dir: r.dir}, sched.LogOptions{Follow: true})
	if err != nil {
		t.Fatal(err)
	}
	defer it.Close()
	if l, _ := nextWithin(t, it, time.Second); l.Text != "x" {
		t.Fatal(l)
	}
	if _, err := nextWithin(t, it, time.Second); !errors.Is(err, io.EOF) {
		t.Fatal(err)
	}
}

func TestOpenErrors(t *testing.T) {
	if _, err := Open(Source{Dir: t.TempDir(), Role: "r"}, sched.LogOptions{}); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("missing files: %v", err)
	}
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, IndexFile), []byte("not an index at all, not an index at all, not an index at all...."), 0o644)
	os.WriteFile(filepath.Join(dir, CombinedFile), nil, 0o644)
	if _, err := Open(Source{Dir: dir}, sched.LogOptions{}); !errors.Is(err, ErrBadIndex) {
		t.Errorf("bad index: %v", err)
	}
	if _, err := Open(Source{Dir: dir}, sched.LogOptions{Streams: "both"}); err == nil {
		t.Error("bad stream accepted")
	}
}

// sliceIter is an iterator that cannot say whether it is ready (like Docker's).
type sliceIter struct {
	lines []sched.Line
}

func (s *sliceIter) Next(ctx context.Context) (sched.Line, error) {
	if len(s.lines) == 0 {
		return sched.Line{}, io.EOF
	}
	l := s.lines[0]
	s.lines = s.lines[1:]
	return l, nil
}
func (s *sliceIter) Close() error { return nil }

func TestMergeOrdersByTime(t *testing.T) {
	clock := &fakeClock{}
	rec := NewRecorder()
	rec.now = clock.now
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	a, b := newReplicaLogs(t, rec), newReplicaLogs(t, rec)
	for i := range 200 {
		clock.set(t0.Add(time.Duration(i) * time.Millisecond))
		r := a
		if rand.IntN(2) == 0 {
			r = b
		}
		r.write(sched.Stdout, strings.Repeat("x", i)+"\n")
	}
	for _, r := range []*replicaLogs{a, b} {
		r.stop()
		r.w.End()
	}
	var its []sched.LogIterator
	for i, r := range []*replicaLogs{a, b} {
		it, err := Open(Source{Dir: r.dir, Replica: i}, sched.LogOptions{})
		if err != nil {
			t.Fatal(err)
		}
		its = append(its, it)
	}
	// A third source without Ready.
	its = append(its, &sliceIter{lines: []sched.Line{{Time: t0.Add(50*time.Millisecond + 1), Text: "slice", Replica: 9}}})
	m := Merge(its...)
	defer m.Close()
	var got []sched.Line
	for {
		l, err := nextWithin(t, m, 5*time.Second)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, l)
	}
	if len(got) != 201 {
		t.Fatalf("%d lines, want 201", len(got))
	}
	for i := 1; i < len(got); i++ {
		if got[i].Time.Before(got[i-1].Time) {
			t.Fatalf("line %d (%v) before line %d (%v)", i, got[i].Time, i-1, got[i-1].Time)
		}
	}
	if got[51].Text != "slice" {
		t.Errorf("line 51 = %q, want the slice source's line", got[51].Text)
	}
}

func TestMergeFollowDeliversPromptlyAndEnds(t *testing.T) {
	w := NewWatcher()
	a, b := newReplicaLogs(t, nil), newReplicaLogs(t, nil)
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
	// b stays silent: a's lines must still come through at once.
	for i := range 5 {
		a.out.WriteString("from a\n")
		start := time.Now()
		l, err := nextWithin(t, m, 5*time.Second)
		if err != nil || l.Text != "from a" {
			t.Fatalf("line %d: %v %v", i, l, err)
		}
		// Not a timing figure (the benchmarks measure latency): a line waiting for
		// the silent source would never come, so a generous bound tells the two
		// apart on a loaded machine.
		if d := time.Since(start); d > 2*time.Second {
			t.Errorf("line %d took %v", i, d)
		}
	}
	b.out.WriteString("from b\n")
	if l, err := nextWithin(t, m, 5*time.Second); err != nil || l.Text != "from b" {
		t.Fatalf("%v %v", l, err)
	}
	for _, r := range []*replicaLogs{a, b} {
		r.stop()
		r.w.End()
	}
	if _, err := nextWithin(t, m, 5*time.Second); !errors.Is(err, io.EOF) {
		t.Fatalf("merged follow after both ended: %v", err)
	}
}

func TestWatcherReleasesEverything(t *testing.T) {
	before := runtime.NumGoroutine()
	w := NewWatcher()
	r := newReplicaLogs(t, nil)
	cmd := exec.Command("sleep", "60")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { cmd.Process.Kill(); cmd.Wait() }()
	proc, _ := ProcOf(cmd.Process.Pid)
	var its []*Iterator
	for range 10 {
		it, err := Open(Source{Dir: r.dir, Watcher: w, Writer: proc}, sched.LogOptions{Follow: true})
		if err != nil {
			t.Fatal(err)
		}
		its = append(its, it)
	}
	if len(w.procs) != 1 {
		t.Errorf("%d pidfds for one process", len(w.procs))
	}
	for _, it := range its {
		it.Close()
	}
	waitFor(t, func() bool { return runtime.NumGoroutine() <= before+3 }) // the replica's copies and combiner
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.inst != nil || len(w.procs) != 0 {
		t.Errorf("watcher still holds resources: inst=%v procs=%d", w.inst, len(w.procs))
	}
}
