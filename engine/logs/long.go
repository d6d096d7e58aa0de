package logs

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/wick-dev/wick/engine/safefs"
	"github.com/wick-dev/wick/engine/sched"
)

// OpenFile opens the file name of the log directory dir for reading as the writer
// opens it: the directory is walked from "/" following no symbolic link (see
// safefs.OpenDir), and the file itself must be a regular file, not a link. A replica
// that swaps its log directory or a log file for a link cannot redirect a reader.
func OpenFile(dir, name string) (*os.File, error) {
	d, err := safefs.OpenDir(dir)
	if err != nil {
		return nil, err
	}
	defer d.Close()
	return openIn(d, name)
}

// openIn opens the regular file name of the open directory d for reading, following
// no symbolic link.
func openIn(d *os.File, name string) (*os.File, error) {
	path := filepath.Join(d.Name(), name)
	var fd int
	var err error
	for {
		// O_NONBLOCK: a FIFO planted in a file's place must not hang the reader.
		fd, err = unix.Openat(int(d.Fd()), name, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_CLOEXEC|unix.O_NONBLOCK, 0)
		if err != unix.EINTR {
			break
		}
	}
	if err != nil {
		if err == unix.ELOOP {
			return nil, fmt.Errorf("%s: %w: a symbolic link, not a log file", path, safefs.ErrUntrusted)
		}
		return nil, &os.PathError{Op: "open", Path: path, Err: err}
	}
	f := os.NewFile(uintptr(fd), path)
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	if !st.Mode().IsRegular() {
		f.Close()
		return nil, fmt.Errorf("%s: %w: not a regular file", path, safefs.ErrUntrusted)
	}
	return f, nil
}

// startMark is what the first record is checked against: it ends at offset 0 of
// combined.log, before any time.
func startMark() record { return record{time: math.MinInt64} }

// lineReader yields the lines of a byte range of a file through a window of at most
// lineWindow bytes: a run too long for a block, or, when the index is damaged, the
// rest of combined.log (or a stream file).
type lineReader struct {
	f    *os.File
	off  int64 // file offset of text
	end  int64 // where the range ends; the fallback's grows with the file while following
	text string
	pos  int  // offset in text of the next line
	sp   span // the time, stream and attempt of every line
	grow bool // the fallback: end follows the file
	// window, when set, is less than lineWindow: reads fetch that much, and a line
	// longer than it is read again in windows twice as large, up to lineWindow.
	window int64
}

// size is how much a read of the range fetches.
func (lr *lineReader) size() int64 {
	if lr.window > 0 {
		return min(lr.window, lineWindow)
	}
	return lineWindow
}

// lineFromReader takes the next line of it.lr as the head if it passes the filters.
// It returns false when the fallback must wait for the writer.
func (it *Iterator) lineFromReader() bool {
	lr := it.lr
	for {
		rest := lr.text[lr.pos:]
		if i := strings.IndexByte(rest, '\n'); i >= 0 {
			lr.pos += i + 1
			if int64(len(lr.text)) > lr.size() {
				// A long line's window: what follows it is read afresh in small ones.
				lr.text, lr.off, lr.pos = "", lr.off+int64(lr.pos), 0
			}
			it.offerLine(rest[:i], false, 0, nil)
			return true
		}
		start := lr.off + int64(lr.pos)
		if lr.grow && start+int64(len(rest)) >= lr.end {
			if st, err := lr.f.Stat(); err == nil && st.Size() > lr.end {
				lr.end = st.Size()
			}
		}
		avail := lr.end - start
		if avail <= 0 {
			if lr.grow && !it.fallbackOver() {
				return false
			}
			it.lr = nil
			if lr.grow {
				it.done = true
			}
			return true
		}
		if lr.pos > 0 || int64(len(rest)) < min(avail, lr.size()) {
			// The window starts at the next line, and holds as much as it can.
			if !lr.read(it, start, min(avail, lr.size())) {
				return true
			}
			continue
		}
		// The window starts a line and holds no newline.
		if int64(len(rest)) == avail {
			// The range ends inside this line: it is the last, without a newline.
			if lr.grow && !it.fallbackOver() {
				return false
			}
			lr.pos = len(lr.text)
			it.offerLine(rest, true, 0, nil)
			return true
		}
		if int64(len(rest)) < min(avail, lineWindow) {
			// A line longer than a small window: read it (and what follows) in a
			// window twice as large, up to lineWindow.
			if !lr.read(it, start, min(avail, lineWindow, 2*int64(len(rest)))) {
				return true
			}
			continue
		}
		// A line longer than MaxLine: find where it ends, and yield its start.
		nl, err := findNewline(lr.f, start+int64(len(rest)), lr.end)
		if err != nil {
			it.err = err
			return true
		}
		if nl < 0 && lr.grow && !it.fallbackOver() {
			return false
		}
		lineEnd, next := nl, nl+1
		if nl < 0 {
			lineEnd, next = lr.end, lr.end
		}
		size := lineEnd - start
		lr.text, lr.off, lr.pos = "", next, 0
		it.offerLine(rest[:MaxLine], nl < 0, size, io.NewSectionReader(lr.f, start, size))
		return true
	}
}

// read makes the window n bytes of the range at start. On an error it sets it.err
// and returns false.
func (lr *lineReader) read(it *Iterator, start, n int64) bool {
	text, err := readText(lr.f, start, n)
	if err != nil {
		it.err = err
		return false
	}
	lr.text, lr.off, lr.pos = text, start, 0
	return true
}

// findNewline returns the offset of the first '\n' in [from, to) of f, or -1.
func findNewline(f *os.File, from, to int64) (int64, error) {
	buf := make([]byte, scanSize)
	for off := from; off < to; {
		n, err := f.ReadAt(buf[:min(int64(len(buf)), to-off)], off)
		if i := bytes.IndexByte(buf[:n], '\n'); i >= 0 {
			return off + int64(i), nil
		}
		off += int64(n)
		if err != nil && !errors.Is(err, io.EOF) {
			return 0, fmt.Errorf("read %s: %w", f.Name(), err)
		}
		if n == 0 {
			break // the file is shorter than the range
		}
	}
	return -1, nil
}

// offerLine takes a line of it.lr as the head, unless the regex or Tail skips it.
// size and full are set for a cut line.
func (it *Iterator) offerLine(text string, partial bool, size int64, full *io.SectionReader) {
	if it.opts.Regex != nil && !it.opts.Regex.MatchString(text) {
		return
	}
	if it.skip > 0 {
		it.skip--
		return
	}
	if it.opts.Regex != nil {
		text = strings.Clone(text)
	}
	sp := &it.lr.sp
	it.hasHead, it.headBig = true, true
	it.headLine = sched.Line{Time: sp.time, Stream: sp.stream, Role: it.src.Role, Replica: it.src.Replica,
		Attempt: sp.attempt, Text: text, Partial: partial, Cut: full != nil, Size: size, Full: full}
}

// fallBack gives up the damaged index: it says so once (Source.Warn), and the lines
// that follow come from the stored bytes past the last sound record: combined.log,
// or the stream file the options select. Their time is the last sound record's (or
// the file's modification time), and a line of combined.log has no stream
// (sched.Combined).
func (it *Iterator) fallBack() error {
	it.fellBack = true
	f, name, from := it.comb, CombinedFile, int64(0)
	code := streamCode(it.opts.Streams)
	if it.opts.Streams != sched.Combined {
		var err error
		if f, err = it.openFile(streamFileName(code)); err != nil {
			return err
		}
		it.extra = f
		name = streamFileName(code)
	}
	if !it.seekFailed {
		if it.opts.Streams == sched.Combined {
			from = it.combEnd
		} else {
			from = it.streamEnd[code]
		}
	}
	if it.src.Warn != nil {
		it.src.Warn(fmt.Sprintf("logs of %s/%d: %s: %s; reading %s instead", it.src.Role, it.src.Replica, it.idx.Name(), it.dmg, name))
	}
	st, err := f.Stat()
	if err != nil {
		return err
	}
	t := st.ModTime()
	if !it.seekFailed && it.checked.time != math.MinInt64 {
		t = time.Unix(0, it.checked.time)
	}
	stream := it.opts.Streams
	it.lr = &lineReader{f: f, off: from, end: st.Size(), grow: true, sp: span{time: t, stream: stream, attempt: it.lastAttempt}}
	it.ri, it.rn, it.text, it.pos = 0, 0, "", 0
	if !it.opts.Since.IsZero() && t.Before(it.opts.Since) || !it.opts.Until.IsZero() && !t.Before(it.opts.Until) {
		it.lr, it.done = nil, true
		return nil
	}
	if it.seekFailed && it.opts.Tail > 0 {
		n, err := it.countMatches(f, from, st.Size()-from)
		if err != nil {
			return err
		}
		it.skip = int(max(0, n-int64(it.opts.Tail)))
	}
	return nil
}

// fallbackOver reports whether the fallback has read all it will: the writer has
// ended (its end mark is the index's last record) or is gone, or nothing is
// followed.
func (it *Iterator) fallbackOver() bool {
	if !it.opts.Follow || it.gone || it.untilPassed() {
		return true
	}
	st, err := it.idx.Stat()
	if err != nil {
		return true
	}
	size := st.Size() - st.Size()%recordSize
	if size <= recordSize {
		return false
	}
	var b [recordSize]byte
	if _, err := it.idx.ReadAt(b[:], size-recordSize); err != nil {
		return false
	}
	r := decodeRecord(b[:])
	return r.end() && badRecord(&r, 0) == ""
}

// readText returns n bytes of f at off. n is bounded by the callers (blockSize,
// lineWindow).
func readText(f *os.File, off, n int64) (string, error) {
	if n <= 0 {
		return "", nil
	}
	b := make([]byte, n)
	if _, err := f.ReadAt(b, off); err != nil {
		return "", fmt.Errorf("read %s: %w", f.Name(), err)
	}
	// b is never written again, so the string can share its memory: one copy of the
	// bytes instead of two. Lines are substrings of it.
	return unsafe.String(&b[0], len(b)), nil
}
