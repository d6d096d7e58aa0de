package slurm

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"sort"
	"time"

	"github.com/wick-dev/wick/engine/sched"
)

// RawLog opens one stream of a replica's files for `wick log` of the whole log: the
// file as the line-by-line reading prints it (a \r before each newline dropped, a last
// line without its newline given one), read a block at a time. The combined stream is
// the one file that holds anything; when both do, it is their lines as the files held
// them at the open, in the order the line-by-line merge gives them (mergedLog), read a
// run of lines of one time at a time. When that order cannot be had that way (no
// .times index; see openMerged), when a line is long enough for the line-by-line
// reading to cut it (maxLine), and for a job wick has no record of, RawLog returns
// sched.ErrNoRawLog.
func (s *Scheduler) RawLog(ctx context.Context, appID, role string, k int, stream sched.Stream) (io.ReadCloser, error) {
	if err := validJobID(appID); err != nil {
		return nil, err
	}
	rec, err := s.loadRecord(appID)
	if err != nil {
		return nil, err
	}
	if rec == nil {
		return nil, sched.ErrNoRawLog
	}
	var out, errf, times string
	for _, r := range rec.Replicas {
		if r.Role == role && r.Replica == k {
			out, errf, times = r.Stdout, r.Stderr, timesFile(r.ExitFile)
		}
	}
	if out == "" {
		return nil, fmt.Errorf("%w: job %s has no replica %s/%d", sched.ErrNotFound, appID, role, k)
	}
	path := out
	switch stream {
	case sched.Stderr:
		path = errf
	case sched.Stdout:
	default:
		outSize, errSize := fileSize(out), fileSize(errf)
		switch {
		case outSize > 0 && errSize > 0:
			return openMerged(out, errf, times)
		case errSize > 0:
			path = errf
		}
	}
	f, err := os.Open(filepath.Clean(path))
	if errors.Is(err, os.ErrNotExist) {
		return io.NopCloser(bytes.NewReader(nil)), nil // not started yet: no line
	}
	if err != nil {
		return nil, fmt.Errorf("slurm: %w", err)
	}
	if cut, err := cutsLines(f); err != nil || cut {
		f.Close()
		if err != nil {
			return nil, err
		}
		return nil, sched.ErrNoRawLog
	}
	return &lineFile{r: f, c: f, buf: make([]byte, readChunk)}, nil
}

// cutsLines reports whether fileIter delivers a line of f in pieces (rawStream.cutsLines).
func cutsLines(f *os.File) (bool, error) {
	fi, err := f.Stat()
	if err != nil {
		return false, fmt.Errorf("slurm: %w", err)
	}
	s := &rawStream{f: f, size: fi.Size(), nl: make([]byte, readChunk)}
	return s.cutsLines()
}

// fileSize is the size of the file at path; 0 when it is missing.
func fileSize(path string) int64 {
	fi, err := os.Stat(path)
	if err != nil {
		return 0
	}
	return fi.Size()
}

// lineFile reads a replica's file, or a run of its lines, as fileIter delivers its
// lines: the one \r before a newline is dropped (fileIter.emit), and a last line
// without a newline gets one.
type lineFile struct {
	r      io.Reader
	c      io.Closer // closed by Close; nil: nothing to close
	buf    []byte
	pend   []byte // read and not yet returned
	heldCR bool   // the last byte read was a \r: dropped if a newline follows
	last   byte   // the last byte returned
	some   bool   // a byte was returned
	eof    bool
}

func (l *lineFile) Read(p []byte) (int, error) {
	for len(l.pend) == 0 {
		if l.eof {
			return 0, io.EOF
		}
		n, err := l.r.Read(l.buf)
		if err != nil && err != io.EOF {
			return 0, err
		}
		if n > 0 {
			l.pend = l.strip(l.buf[:n])
		}
		if err == io.EOF {
			l.eof = true
			// A last line without a newline ends, without the \r before its end.
			if l.heldCR || len(l.pend) > 0 && l.pend[len(l.pend)-1] != '\n' || len(l.pend) == 0 && l.some && l.last != '\n' {
				l.pend = append(l.pend, '\n')
			}
			l.heldCR = false
		}
	}
	n := copy(p, l.pend)
	l.pend = l.pend[n:]
	if n > 0 {
		l.last, l.some = p[n-1], true
	}
	return n, nil
}

// strip drops each \r that comes right before a newline, in place; a \r at the end
// of the chunk is held until the next byte is known.
func (l *lineFile) strip(chunk []byte) []byte {
	held := l.heldCR && (len(chunk) == 0 || chunk[0] != '\n')
	l.heldCR = false
	out := chunk[:0] // written behind what is read: in place
	for b := chunk; len(b) > 0; {
		i := bytes.IndexByte(b, '\r')
		if i < 0 {
			out = append(out, b...)
			break
		}
		out = append(out, b[:i]...)
		b = b[i+1:]
		switch {
		case len(b) == 0:
			l.heldCR = true
		case b[0] != '\n':
			out = append(out, '\r')
		}
	}
	if held {
		return append([]byte{'\r'}, out...) // rare: a chunk that ended on a \r
	}
	return out
}

// Close closes the file read, if any.
func (l *lineFile) Close() error {
	if l.c == nil {
		return nil
	}
	return l.c.Close()
}

// mergedLog is a replica's stdout and stderr in the order logs.Merge puts their
// fileIters' lines, read without going through lines one by one. A line's time is
// the first sample of the replica's .times index at which its file held the line's
// newline (fileIter.timeOf), so the lines of one file that end between two samples
// share a time: such a run is copied whole. The merge takes the run whose time is
// earliest, stdout's on a tie (Merge keeps the order of its sources, stdout first).
// An unended last line is timed when fileIter reaches the end, after every sample:
// it comes last.
type mergedLog struct {
	s   [2]*rawStream // stdout, stderr
	cur *lineFile     // the run being copied
	buf []byte        // cur's buffer, one for every run
}

// rawStream is one of mergedLog's files and where its next run lies.
type rawStream struct {
	f     *os.File
	times []sizeAt
	end   int64  // after the last newline: the complete lines are [0, end)
	size  int64  // at open: [end, size) is an unended last line
	off   int64  // where the next run starts, at the start of a line
	nl    []byte // lastNewline's buffer
	// The next run, once planned: [off, runEnd), its time, whether it is the
	// unended last line.
	planned, has, unended bool
	runEnd                int64
	runTime               time.Time
}

// Bounds of mergedLog's searches for a newline: they read nlFirst bytes, then
// readChunk at a time (the lines of a log are short; a long one costs few reads).
const nlFirst = 4 << 10

// openMerged opens a replica's stdout and stderr, both non-empty, as a mergedLog, or
// returns sched.ErrNoRawLog when mergedLog would not give the line-by-line order: the
// index is missing or holds no sample of a file; a line is long enough
// that fileIter may cut it in pieces (maxLine), which it times otherwise; both files
// end in an unended line, or the index has a time not in the past (fileIter times an
// unended line when it reads it).
func openMerged(out, errf, times string) (io.ReadCloser, error) {
	b, err := readBounded(times, maxTimes)
	if err != nil {
		return nil, sched.ErrNoRawLog
	}
	m := &mergedLog{buf: make([]byte, readChunk)}
	for i, p := range []string{out, errf} {
		stream := sched.Stdout
		if i == 1 {
			stream = sched.Stderr
		}
		s, err := openRawStream(p, parseTimes(b, stream))
		if s != nil {
			m.s[i] = s
		}
		if err != nil {
			m.Close()
			return nil, err
		}
	}
	if m.s[0].size > m.s[0].end && m.s[1].size > m.s[1].end || !m.pastTimes(time.Now()) {
		m.Close()
		return nil, sched.ErrNoRawLog
	}
	return m, nil
}

// pastTimes reports whether every sample of an index is before now, when a file has
// an unended last line (timed now by fileIter) to put after them.
func (m *mergedLog) pastTimes(now time.Time) bool {
	if m.s[0].size == m.s[0].end && m.s[1].size == m.s[1].end {
		return true
	}
	for _, s := range m.s {
		for _, t := range s.times {
			if !t.Time.Before(now) {
				return false
			}
		}
	}
	return true
}

// openRawStream opens one of mergedLog's files and checks that its lines can be
// copied by runs (see openMerged); the *rawStream is returned even with an error, to
// be closed.
func openRawStream(path string, times []sizeAt) (*rawStream, error) {
	f, err := os.Open(filepath.Clean(path))
	if errors.Is(err, os.ErrNotExist) {
		return nil, sched.ErrNoRawLog // gone since it was seen: let the lines say so
	}
	if err != nil {
		return nil, fmt.Errorf("slurm: %w", err)
	}
	s := &rawStream{f: f, nl: make([]byte, readChunk)}
	fi, err := f.Stat()
	if err != nil {
		return s, fmt.Errorf("slurm: %w", err)
	}
	s.size = fi.Size()
	// Lines past the index's last sample have the file's modification time (see
	// fileIter.take): slurmstepd may write a replica's last output after the
	// wrapper's last sample.
	s.times = append(times, sizeAt{Time: fi.ModTime(), Size: math.MaxInt64})
	cut, err := s.cutsLines()
	switch {
	case err != nil:
		return s, err
	case cut:
		return s, sched.ErrNoRawLog
	case s.size > 0 && len(times) == 0:
		return s, sched.ErrNoRawLog // no index, or nothing in it that reads
	}
	return s, nil
}

// cutsLines finds where the file's complete lines end (s.end) and reports whether it
// holds a line, ended or not, of maxLine bytes or more: fileIter delivers such a line
// in pieces, each a line of its own, timed by where the piece ends.
func (s *rawStream) cutsLines() (bool, error) {
	nl, err := s.lastNewline(max(0, s.size-maxLine), s.size)
	if err != nil {
		return false, err
	}
	s.end = nl + 1
	if s.size-s.end >= maxLine {
		return true, nil
	}
	return s.longLine()
}

// longLine reports whether the file holds a line of maxLine bytes or more, which
// fileIter delivers in pieces. Such a line holds every byte of some window
// [k*w, (k+1)*w) with w = maxLine/2, so a file whose every window holds a newline has
// none, and that is most often found in a window's first line; the line that holds a
// whole window is measured.
func (s *rawStream) longLine() (bool, error) {
	const w = maxLine / 2
	for lo := int64(0); lo+w <= s.size; lo += w {
		nl, err := s.firstNewline(lo, lo+w)
		switch {
		case err != nil:
			return false, err
		case nl >= 0:
			continue
		}
		if long, err := s.longAround(lo, lo+w); long || err != nil {
			return long, err
		}
	}
	return false, nil
}

// longAround reports whether the line that holds [lo, hi), which has no newline, is
// maxLine bytes or longer, counting an unended last line.
func (s *rawStream) longAround(lo, hi int64) (bool, error) {
	nl, err := s.lastNewline(max(0, lo-maxLine), lo)
	if err != nil {
		return false, err
	}
	begin := max(0, lo-maxLine) // the line starts here or before
	if nl >= 0 {
		begin = nl + 1
	}
	if nl, err = s.firstNewline(hi, min(s.size, begin+maxLine)); err != nil {
		return false, err
	}
	return nl < 0 && begin+maxLine <= s.size, nil
}

// firstNewline returns the offset of the first newline in [lo, hi) of the file, or -1.
func (s *rawStream) firstNewline(lo, hi int64) (int64, error) {
	for n := int64(nlFirst); lo < hi; n = readChunk {
		b := s.nl[:min(n, hi-lo)]
		if _, err := s.f.ReadAt(b, lo); err != nil {
			return 0, s.changed(err)
		}
		if i := bytes.IndexByte(b, '\n'); i >= 0 {
			return lo + int64(i), nil
		}
		lo += int64(len(b))
	}
	return -1, nil
}

// lastNewline returns the offset of the last newline in [lo, hi) of the file, or -1,
// reading backwards from hi.
func (s *rawStream) lastNewline(lo, hi int64) (int64, error) {
	for n := int64(nlFirst); hi > lo; n = readChunk {
		from := max(lo, hi-n)
		b := s.nl[:hi-from]
		if _, err := s.f.ReadAt(b, from); err != nil {
			return 0, s.changed(err)
		}
		if i := bytes.LastIndexByte(b, '\n'); i >= 0 {
			return from + int64(i), nil
		}
		hi = from
	}
	return -1, nil
}

// changed is the error of a read short of the size the file had at open.
func (s *rawStream) changed(err error) error {
	if err == io.EOF {
		return fmt.Errorf("slurm: %s shrank while it was read", s.f.Name())
	}
	return fmt.Errorf("slurm: %w", err)
}

// plan finds the next run: the lines from s.off whose newlines the same sample of
// the index saw first, i.e. up to the last newline before that sample's size.
func (s *rawStream) plan() error {
	if s.planned {
		return nil
	}
	s.planned, s.has, s.unended = true, false, false
	if s.off >= s.end {
		if s.off < s.size {
			s.has, s.unended, s.runEnd = true, true, s.size
		}
		return nil
	}
	// The first sample past off is the first that can have seen the line at off
	// ended; if that line is longer, the next sample that grew, and so on.
	lo := s.off
	j := sort.Search(len(s.times), func(i int) bool { return s.times[i].Size > lo })
	for j < len(s.times) {
		hi := min(s.times[j].Size, s.end)
		nl, err := s.lastNewline(lo, hi)
		if err != nil {
			return err
		}
		if nl >= 0 {
			s.has, s.runEnd, s.runTime = true, nl+1, s.times[j].Time
			return nil
		}
		lo = hi
		k := j + 1
		j = k + sort.Search(len(s.times)-k, func(i int) bool { return s.times[k+i].Size > lo })
	}
	return nil // not reached: the last sample, the file's time, is past every line
}

// before reports whether s's next run comes before t's in the merge.
func (s *rawStream) before(t *rawStream) bool {
	switch {
	case s.unended:
		return false
	case t.unended:
		return true
	}
	return s.runTime.Before(t.runTime)
}

func (m *mergedLog) Read(p []byte) (int, error) {
	for {
		if m.cur != nil {
			n, err := m.cur.Read(p)
			if err == io.EOF {
				m.cur = nil
				if n == 0 {
					continue
				}
				err = nil
			}
			return n, err
		}
		var next *rawStream
		for _, s := range m.s { // stdout first: it wins a tie
			if err := s.plan(); err != nil {
				return 0, err
			}
			if s.has && (next == nil || s.before(next)) {
				next = s
			}
		}
		if next == nil {
			return 0, io.EOF
		}
		m.cur = &lineFile{r: io.NewSectionReader(next.f, next.off, next.runEnd-next.off), buf: m.buf}
		next.off, next.planned = next.runEnd, false
	}
}

// Close closes both files.
func (m *mergedLog) Close() error {
	var errs []error
	for _, s := range m.s {
		if s != nil {
			errs = append(errs, s.f.Close())
		}
	}
	return errors.Join(errs...)
}
