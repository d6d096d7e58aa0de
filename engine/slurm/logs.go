package slurm

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/wick-dev/wick/engine/logs"
	"github.com/wick-dev/wick/engine/sched"
	"github.com/wick-dev/wick/engine/spec"
)

// Log polling: the files are written by slurmstepd on the nodes, maybe across a shared
// filesystem that gives no inotify events, so followers poll. The interval starts at
// logPollMin after a read that found data and doubles while nothing comes, up to
// logPollMax: an idle follower costs ten small reads a second, and a line
// written after a quiet spell shows within logPollMax (100 ms: a wall of 16
// replicas, two files each, polls 320 times a second when idle, each one pread).
const (
	logPollMin = 10 * time.Millisecond
	logPollMax = 100 * time.Millisecond
	// stateEvery is how often a follower at the end of its file asks Slurm whether
	// the job has ended (one scontrol call).
	stateEvery = time.Second
	// endSoonEvery is how often it asks once every replica has written its exit
	// file: the job is about to end (srun returns, the batch script ends, Slurm
	// completes it) and a user waits for that, so wick asks as often as a bare
	// `squeue` loop would. The exit files are looked at no more often than this.
	endSoonEvery = 100 * time.Millisecond
	// endSoonFor bounds the fast asking: a job that goes on after every replica
	// wrote its exit file (requeued: the files of the attempt before remain) is
	// asked about every stateEvery again.
	endSoonFor = 5 * time.Second
	// maxLine bounds a line held in memory; a longer one is delivered in pieces.
	maxLine = 1 << 20
	// readChunk is how much one read takes from a file.
	readChunk = 64 << 10
)

// Logs returns the lines of replica k of role, from the files the job writes. Each
// line's time is when wick read it while following; lines already in the file when it
// was opened carry the time the replica's sampler saw them written (its .times index,
// see wrapper), else the file's modification time (Slurm's files hold no times).
func (s *Scheduler) Logs(ctx context.Context, appID, role string, k int, opts sched.LogOptions) (sched.LogIterator, error) {
	if err := validJobID(appID); err != nil {
		return nil, err
	}
	rec, err := s.loadRecord(appID)
	if err != nil {
		return nil, err
	}
	var out, errf, times string
	var exits []string
	if rec != nil {
		for _, r := range rec.Replicas {
			exits = append(exits, r.ExitFile)
			if r.Role == role && r.Replica == k {
				out, errf, times = r.Stdout, r.Stderr, timesFile(r.ExitFile)
			}
		}
		if out == "" {
			return nil, fmt.Errorf("%w: job %s has no replica %s/%d", sched.ErrNotFound, appID, role, k)
		}
	} else {
		// Not submitted from here: TorchX's layout in the current directory.
		wd, err := s.workDir()
		if err != nil {
			return nil, err
		}
		if _, err := scontrolJob(ctx, appID); err != nil {
			if errors.Is(err, errGone) {
				return nil, fmt.Errorf("%w: job %s", sched.ErrNotFound, appID)
			}
			return nil, err
		}
		out = replicaFile(wd, appID, role, k, "out")
		errf = replicaFile(wd, appID, role, k, "err")
		times = replicaFile(wd, appID, role, k, "times")
	}
	done := func(ctx context.Context) bool { return s.ended(ctx, appID, exits) }
	wake := s.endWake(appID)
	open := func(path string, stream sched.Stream) *fileIter {
		it := newFileIter(path, stream, role, k, opts, done)
		it.wake = wake
		it.timesPath = times
		return it
	}
	switch opts.Streams {
	case sched.Stdout:
		return open(out, sched.Stdout), nil
	case sched.Stderr:
		return open(errf, sched.Stderr), nil
	}
	return logs.Merge(open(out, sched.Stdout), open(errf, sched.Stderr)), nil
}

// ended reports whether the job has ended, asking Slurm for all the followers of a
// job (a wall of 16 replicas follows 32 files) at most once per stateEvery, or per
// endSoonEvery once every replica of exitFiles has written its exit file. One caller
// asks at a time; the others wait for its answer.
func (s *Scheduler) ended(ctx context.Context, appID string, exitFiles []string) bool {
	s.endMu.Lock()
	defer s.endMu.Unlock()
	s.mu.Lock()
	e := s.endCache[appID]
	s.mu.Unlock()
	if e.ended {
		return true
	}
	age := time.Since(e.checked)
	if age < endSoonEvery {
		return false
	}
	if age < stateEvery {
		if e.exited.IsZero() {
			if !allExist(exitFiles) {
				return false
			}
			e.exited = time.Now() // just seen: ask now
		} else if time.Since(e.exited) > endSoonFor {
			return false
		}
	}
	d, gone, err := s.describe(ctx, appID)
	e.checked = time.Now()
	e.ended = err == nil && (d.Status.State.Terminal() || gone) || errors.Is(err, sched.ErrNotFound)
	if e.ended && err == nil {
		st := d.Status
		e.status = &st
	}
	s.putEnd(appID, e)
	return e.ended
}

// putEnd records what ended learnt; a job seen ended wakes its followers (endWake).
func (s *Scheduler) putEnd(appID string, e endEntry) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.endCache == nil {
		s.endCache = map[string]endEntry{}
	}
	if old := s.endCache[appID]; old.wake != nil {
		e.wake, e.woken = old.wake, old.woken // endWake may have made it meanwhile
	}
	if e.ended && e.wake != nil && !e.woken {
		close(e.wake)
		e.woken = true
	}
	s.endCache[appID] = e
}

// endWake returns a channel closed once ended sees the job end: a follower that
// sleeps between polls of its file then reads its end at once, not at its next poll.
func (s *Scheduler) endWake(appID string) <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.endCache == nil {
		s.endCache = map[string]endEntry{}
	}
	e := s.endCache[appID]
	if e.wake == nil {
		e.wake = make(chan struct{})
		if e.ended {
			close(e.wake)
			e.woken = true
		}
		s.endCache[appID] = e
	}
	return e.wake
}

// endedStatus is the status with which ended last saw the job end, if it did so
// less than stateEvery ago: Wait's answer without asking Slurm again.
func (s *Scheduler) endedStatus(appID string) (spec.AppStatus, bool) {
	s.mu.Lock()
	e := s.endCache[appID]
	s.mu.Unlock()
	if e.status == nil || time.Since(e.checked) >= stateEvery {
		return spec.AppStatus{}, false
	}
	return *e.status, true
}

// allExist reports whether every one of paths exists (none: false).
func allExist(paths []string) bool {
	for _, p := range paths {
		if _, err := os.Stat(p); err != nil {
			return false
		}
	}
	return len(paths) > 0
}

// endEntry is what ended last learnt of a job.
type endEntry struct {
	checked time.Time
	ended   bool
	status  *spec.AppStatus // the status that said it ended
	exited  time.Time       // when every replica's exit file was first seen
	wake    chan struct{}   // closed once ended (see endWake)
	woken   bool
}

// fileIter yields the lines of one file, polling it for more when following.
type fileIter struct {
	path    string
	stream  sched.Stream
	role    string
	replica int
	opts    sched.LogOptions
	// done reports whether the job has ended, so that the file is complete.
	done func(context.Context) bool
	// wake is closed when another follower of the job learnt that it ended.
	wake <-chan struct{}

	mu        sync.Mutex // guards everything below: Close may come from another goroutine
	f         *os.File
	off       int64
	histEnd   int64     // the file's size when first opened: older content
	histTime  time.Time // the file's modification time then
	part      []byte    // the start of a line not yet ended
	lines     []sched.Line
	ended     bool
	err       error
	final     bool // the job has ended: one more read, then the end
	lastCheck time.Time
	delay     time.Duration
	closed    bool
	buf       []byte
	tailDone  bool // the content there at open has been read
	// timesPath is the replica's sizes-over-time index (see wrapper), read once at
	// the first open to time the lines already written; "" or missing: none.
	timesPath string
	times     []sizeAt
}

// sizeAt is one sample of the index: at Time, the stream's file held Size bytes.
type sizeAt struct {
	Time time.Time
	Size int64
}

// maxTimes bounds the index read: 16 MB is days of a replica that never stops writing.
const maxTimes = 16 << 20

// loadTimes reads the index's samples of the iterator's stream, in order.
func (it *fileIter) loadTimes() {
	if it.timesPath == "" {
		return
	}
	b, err := readBounded(it.timesPath, maxTimes)
	if err != nil {
		return
	}
	it.times = parseTimes(b, it.stream)
}

// parseTimes reads the samples of stream's file from an index (see wrapper), in
// order. A malformed line (another date(1), a torn write) is skipped, and so is a
// sample smaller than the one before (a size never shrinks).
func parseTimes(b []byte, stream sched.Stream) []sizeAt {
	col := 1
	if stream == sched.Stderr {
		col = 2
	}
	var times []sizeAt
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) != 3 {
			continue
		}
		ms, err1 := strconv.ParseInt(f[0], 10, 64)
		size, err2 := strconv.ParseInt(f[col], 10, 64)
		if err1 != nil || err2 != nil || len(times) > 0 && size < times[len(times)-1].Size {
			continue
		}
		times = append(times, sizeAt{Time: time.UnixMilli(ms), Size: size})
	}
	return times
}

// timeOf is when the byte before offset end was first seen in the file by the
// index's sampler, or false when the index does not reach it.
func (it *fileIter) timeOf(end int64) (time.Time, bool) {
	i := sort.Search(len(it.times), func(i int) bool { return it.times[i].Size >= end })
	if i == len(it.times) {
		return time.Time{}, false
	}
	return it.times[i].Time, true
}

func newFileIter(path string, stream sched.Stream, role string, k int, opts sched.LogOptions, done func(context.Context) bool) *fileIter {
	return &fileIter{path: path, stream: stream, role: role, replica: k, opts: opts, done: done, delay: logPollMin, histEnd: -1}
}

// open opens the file once it exists.
func (it *fileIter) open() (bool, error) {
	if it.f != nil {
		return true, nil
	}
	f, err := os.Open(filepath.Clean(it.path))
	if errors.Is(err, os.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("slurm: %w", err)
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return false, fmt.Errorf("slurm: %w", err)
	}
	it.f = f
	if it.histEnd < 0 { // the first open: what is there is older content
		it.histEnd, it.histTime = fi.Size(), fi.ModTime()
		if it.histEnd > 0 {
			it.loadTimes()
		}
		// The last lines only, and every one of them kept: start where they start
		// rather than read the whole file (tail -n).
		o := it.opts
		if o.Tail > 0 && o.Regex == nil && o.Since.IsZero() && o.Until.IsZero() && it.histEnd > 0 {
			start, err := tailStart(f, it.histEnd, o.Tail)
			if err != nil {
				return false, fmt.Errorf("slurm: %w", err)
			}
			it.off = start
		}
	}
	return true, nil
}

// tailStart returns the offset where the last n lines of the first size bytes of f
// start, reading backwards a chunk at a time: an unended last line is one of them.
func tailStart(f *os.File, size int64, n int) (int64, error) {
	buf := make([]byte, readChunk)
	end := size
	// A final newline ends the last line; it does not start another.
	var last [1]byte
	if _, err := f.ReadAt(last[:], size-1); err != nil {
		return 0, err
	}
	if last[0] == '\n' {
		end--
	}
	for end > 0 {
		from := max(0, end-int64(len(buf)))
		chunk := buf[:end-from]
		if _, err := f.ReadAt(chunk, from); err != nil && err != io.EOF {
			return 0, err
		}
		for i := len(chunk) - 1; i >= 0; i-- {
			if chunk[i] == '\n' {
				if n--; n == 0 {
					return from + int64(i) + 1, nil
				}
			}
		}
		end = from
	}
	return 0, nil
}

// fill reads what the file holds beyond the last read and reports whether it found
// anything.
func (it *fileIter) fill() (bool, error) {
	ok, err := it.open()
	if !ok || err != nil {
		return false, err
	}
	if it.buf == nil {
		it.buf = make([]byte, readChunk)
	}
	got := false
	for {
		n, err := it.f.ReadAt(it.buf, it.off)
		if n > 0 {
			got = true
			it.take(it.buf[:n])
		}
		if err == io.EOF || n == 0 {
			if !it.tailDone && it.off >= it.histEnd {
				// Tail: an unended last line counts as one of the last lines.
				it.tailDone = true
				if t := it.opts.Tail; t > 0 && len(it.part) > 0 && len(it.lines) > t-1 {
					it.lines = append(it.lines[:0], it.lines[len(it.lines)-(t-1):]...)
				}
			}
			return got, nil
		}
		if err != nil {
			return got, fmt.Errorf("slurm: %w", err)
		}
		// Deliver a chunk's lines before reading on, so that a large file is never
		// held whole; a tail keeps reading (its lines are trimmed as they come).
		if len(it.lines) > 0 && (it.opts.Tail <= 0 || it.tailDone) {
			return got, nil
		}
	}
}

// take splits bytes read at it.off into lines.
func (it *fileIter) take(b []byte) {
	now := time.Now()
	for len(b) > 0 {
		i := indexNL(b)
		t := now
		if it.off < it.histEnd {
			// Older content: when the index saw the line's end, else the file's
			// modification time. Lines read as they come carry the time of reading.
			end := it.off + int64(len(b))
			if i >= 0 {
				end = it.off + int64(i) + 1
			}
			t = it.histTime
			if ts, ok := it.timeOf(end); ok {
				t = ts
			}
		}
		room := maxLine - len(it.part)
		if i < 0 || i > room {
			if i < 0 && len(b) < room {
				it.part = append(it.part, b...)
				it.off += int64(len(b))
				return
			}
			it.part = append(it.part, b[:room]...)
			it.off += int64(room)
			b = b[room:]
			it.emit(t, false)
			continue
		}
		it.part = append(it.part, b[:i]...)
		it.off += int64(i + 1)
		b = b[i+1:]
		it.emit(t, false)
	}
}

func indexNL(b []byte) int {
	for i, c := range b {
		if c == '\n' {
			return i
		}
	}
	return -1
}

// emit queues the held line if the options keep it.
func (it *fileIter) emit(t time.Time, partial bool) {
	text := string(it.part)
	it.part = it.part[:0]
	if n := len(text); n > 0 && text[n-1] == '\r' {
		text = text[:n-1]
	}
	l := sched.Line{Time: t, Stream: it.stream, Role: it.role, Replica: it.replica, Text: text, Partial: partial}
	if !it.opts.Match(l) {
		return
	}
	it.lines = append(it.lines, l)
	// Tail: while reading what was there at open, keep only the last Tail lines.
	if it.opts.Tail > 0 && it.off <= it.histEnd && len(it.lines) > it.opts.Tail {
		it.lines = append(it.lines[:0], it.lines[len(it.lines)-it.opts.Tail:]...)
	}
}

// finish delivers a last unended line and marks the end.
func (it *fileIter) finish() {
	if len(it.part) > 0 {
		it.emit(time.Now(), true)
	}
	it.ended = true
}

// step reads once and decides whether the lines have ended; it never sleeps. It is
// called with it.mu held, and releases it while it asks Slurm whether the job ended.
func (it *fileIter) step(ctx context.Context) {
	got, err := it.fill()
	if err != nil {
		it.err = err
		return
	}
	if got {
		it.delay = logPollMin
		return
	}
	if !it.opts.Follow {
		it.finish()
		return
	}
	if it.final {
		it.finish()
		return
	}
	if time.Since(it.lastCheck) >= endSoonEvery { // ended decides when to ask Slurm
		it.lastCheck = time.Now()
		// Asking Slurm may take a while: Close must not wait for it.
		it.mu.Unlock()
		done := it.done(ctx)
		it.mu.Lock()
		if done && !it.closed {
			// The job has ended and its files are complete: read once more, through a
			// fresh open (NFS promises another node's writes only to an open made
			// after the writer closed the file).
			it.final = true
			if it.f != nil {
				it.f.Close()
				it.f = nil
			}
			it.step(ctx)
		}
	}
}

// Ready reports whether Next would return at once.
func (it *fileIter) Ready() bool {
	it.mu.Lock()
	defer it.mu.Unlock()
	if len(it.lines) == 0 && !it.ended && it.err == nil && !it.closed {
		if got, err := it.fill(); err != nil {
			it.err = err
		} else if !got && !it.opts.Follow {
			it.finish()
		}
	}
	return len(it.lines) > 0 || it.ended || it.err != nil || it.closed
}

// Next returns the next line, io.EOF at the end, or ctx's error.
func (it *fileIter) Next(ctx context.Context) (sched.Line, error) {
	for {
		it.mu.Lock()
		switch {
		case it.closed:
			it.mu.Unlock()
			return sched.Line{}, io.EOF
		case len(it.lines) > 0:
			l := it.lines[0]
			it.lines = it.lines[1:]
			it.mu.Unlock()
			return l, nil
		case it.err != nil:
			err := it.err
			it.mu.Unlock()
			return sched.Line{}, err
		case it.ended:
			it.mu.Unlock()
			return sched.Line{}, io.EOF
		}
		it.step(ctx)
		wait := len(it.lines) == 0 && !it.ended && it.err == nil
		delay := it.delay
		if wait {
			it.delay = min(it.delay*2, logPollMax)
		}
		it.mu.Unlock()
		if !wait {
			continue
		}
		t := time.NewTimer(delay)
		select {
		case <-ctx.Done():
			t.Stop()
			return sched.Line{}, ctx.Err()
		case <-it.wake:
			t.Stop()
			it.mu.Lock()
			it.wake, it.lastCheck = nil, time.Time{} // ask done at once (it knows)
			it.mu.Unlock()
		case <-t.C:
		}
	}
}

// Close releases the file.
func (it *fileIter) Close() error {
	it.mu.Lock()
	defer it.mu.Unlock()
	it.closed = true
	if it.f != nil {
		err := it.f.Close()
		it.f = nil
		return err
	}
	return nil
}

// String names the iterator's file, for errors and debugging.
func (it *fileIter) String() string { return it.path + "#" + strconv.Itoa(it.replica) }
