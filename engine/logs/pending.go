package logs

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/wick-dev/wick/engine/sched"
)

// MaxPending bounds the text of a pending line: a replica that writes megabytes of \r
// updates, or one huge line, without a newline costs a follower this much memory per
// stream at most. A longer last segment is given by its start, marked Cut.
const MaxPending = 16 << 10

// pendingScan is how much of a stream file one read takes while looking for the end
// of the unfinished line: the memory a follower of pending lines holds for it.
const pendingScan = 32 << 10

// pendingStream tracks the unfinished line of one stream of a followed replica: the
// bytes of stdout.log or stderr.log past the last committed line. Bytes are scanned
// once as they come, so a line growing by \r updates costs the new bytes only.
type pendingStream struct {
	stream sched.Stream
	code   uint8
	f      *os.File
	watch  *Watch
	dirty  bool // the file may have grown since it was last scanned

	known     bool  // committed is known
	committed int64 // end of the last committed line in the file
	scanned   int64 // [committed, scanned) holds no '\n'
	nl        bool  // a '\n' lies at scanned: the index has yet to commit that line
	cr1, cr0  int64 // offsets of the last two '\r' in [committed, scanned), committed-1 if none

	since    time.Time // when the unfinished line was first seen
	shown    string    // the pending text last yielded; "" with !hasShown
	shownCut bool      // whether that text was cut
	hasShown bool
}

// reset starts a new unfinished line at off.
func (p *pendingStream) reset(off int64) {
	p.known, p.committed, p.scanned, p.nl = true, off, off, false
	p.cr1, p.cr0 = off-1, off-1
	p.since, p.shown, p.shownCut, p.hasShown = time.Time{}, "", false, false
	p.dirty = true
}

// openPending prepares the pending lines of the streams the options select: each
// stream file is opened and watched through watch.
func (it *Iterator) openPending(watch func(path string) (*Watch, error)) error {
	for _, s := range []struct {
		stream sched.Stream
		code   uint8
		name   string
	}{{sched.Stdout, codeStdout, StdoutFile}, {sched.Stderr, codeStderr, StderrFile}} {
		if it.opts.Streams != sched.Combined && it.opts.Streams != s.stream {
			continue
		}
		f, err := it.openFile(s.name)
		if err != nil {
			return err
		}
		p := &pendingStream{stream: s.stream, code: s.code, f: f}
		it.pend = append(it.pend, p)
		if p.watch, err = watch(f.Name()); err != nil {
			return err
		}
		p.dirty = true
	}
	if it.nextRec > 0 {
		// Started past the first record (Since, Tail): find where each stream's last
		// line before it ends.
		return it.findCommitted()
	}
	for _, p := range it.pend {
		p.reset(0)
	}
	return nil
}

// maxCommittedScan bounds the records findCommitted reads back (4 MB of index): a
// stream silent for longer has its committed end taken from its last newline.
const maxCommittedScan = 1 << 16

// findCommitted finds, for each pending stream, the end of its last record before
// it.nextRec.
func (it *Iterator) findCommitted() error {
	missing := len(it.pend)
	b := make([]byte, recordBatch*recordSize)
	for end := it.nextRec; end > 0 && missing > 0 && it.nextRec-end < maxCommittedScan; {
		start := max(0, end-recordBatch)
		chunk := b[:(end-start)*recordSize]
		if _, err := it.idx.ReadAt(chunk, (start+1)*recordSize); err != nil {
			return fmt.Errorf("read %s: %w", it.idx.Name(), err)
		}
		for i := end - 1; i >= start && missing > 0; i-- {
			r := decodeRecord(chunk[(i-start)*recordSize:])
			for _, p := range it.pend {
				if !p.known && !r.end() && r.stream == p.code {
					p.reset(r.streamOff + r.length)
					missing--
				}
			}
		}
		end = start
		if end == 0 {
			for _, p := range it.pend {
				if !p.known {
					p.reset(0)
				}
			}
			return nil
		}
	}
	for _, p := range it.pend {
		if !p.known {
			off, err := lastLineStart(p.f)
			if err != nil {
				return err
			}
			p.reset(off)
		}
	}
	return nil
}

// lastLineStart returns the offset after the last '\n' within the last pendingScan
// bytes of f (or where that window starts, if it has none).
func lastLineStart(f *os.File) (int64, error) {
	st, err := f.Stat()
	if err != nil {
		return 0, err
	}
	from := max(0, st.Size()-pendingScan)
	b := make([]byte, st.Size()-from)
	if _, err := f.ReadAt(b, from); err != nil && !errors.Is(err, io.EOF) {
		return 0, fmt.Errorf("read %s: %w", f.Name(), err)
	}
	return from + int64(bytes.LastIndexByte(b, '\n')+1), nil
}

// commit notes a record read from the index: the unfinished line of its stream, if
// any, has become the record's last line.
func (it *Iterator) commit(r *record) {
	for _, p := range it.pend {
		if r.stream == p.code {
			p.reset(r.streamOff + r.length)
			if it.pendHead != nil && it.pendHead.Stream == p.stream {
				it.pendHead = nil
			}
		}
	}
}

// nextPending returns a pending line that differs from what the reader was last
// given, if there is one now. It reads only what was written since the last look.
func (it *Iterator) nextPending() (sched.Line, bool, error) {
	if it.pendHead != nil {
		l := *it.pendHead
		it.pendHead = nil
		return l, true, nil
	}
	for _, p := range it.pend {
		if p.watch != nil {
			select {
			case <-p.watch.C():
				p.dirty = true
			default:
			}
		}
		if !p.dirty {
			continue
		}
		p.dirty = false
		l, ok, err := it.scanPending(p)
		if err != nil || ok {
			return l, ok, err
		}
	}
	return sched.Line{}, false, nil
}

// scanPending reads what p's file gained and returns the pending line if its text
// changed.
func (it *Iterator) scanPending(p *pendingStream) (sched.Line, bool, error) {
	if p.nl {
		return sched.Line{}, false, nil // the index is behind: its record is coming
	}
	st, err := p.f.Stat()
	if err != nil {
		return sched.Line{}, false, err
	}
	size := st.Size()
	if size < p.scanned {
		// Truncated under us (not by wick's writer): start over from the end.
		p.reset(size)
		return sched.Line{}, false, nil
	}
	if need := min(size-p.scanned, pendingScan); int64(len(it.scanBuf)) < need {
		// Sized to what came, a power of two up to pendingScan: a bar's update is
		// a few dozen bytes, and the wall follows 1,024 replicas.
		n := int64(256)
		for n < need {
			n *= 2
		}
		it.scanBuf = make([]byte, n)
	}
	for p.scanned < size && !p.nl {
		n, err := p.f.ReadAt(it.scanBuf[:min(int64(len(it.scanBuf)), size-p.scanned)], p.scanned)
		if n == 0 {
			if err != nil && !errors.Is(err, io.EOF) {
				return sched.Line{}, false, fmt.Errorf("read %s: %w", p.f.Name(), err)
			}
			break
		}
		chunk := it.scanBuf[:n]
		if i := bytes.IndexByte(chunk, '\n'); i >= 0 {
			chunk, p.nl = chunk[:i], true
		}
		if j := bytes.LastIndexByte(chunk, '\r'); j >= 0 {
			if k := bytes.LastIndexByte(chunk[:j], '\r'); k >= 0 {
				p.cr0 = p.scanned + int64(k)
			} else {
				p.cr0 = p.cr1
			}
			p.cr1 = p.scanned + int64(j)
		}
		p.scanned += int64(len(chunk))
	}
	if p.nl || p.scanned == p.committed {
		return sched.Line{}, false, nil
	}
	if p.since.IsZero() {
		p.since = time.Now()
	}
	// The last \r segment; a line that ends with \r (as some bars are drawn) shows the
	// segment before it.
	a, b := p.cr1+1, p.scanned
	if p.cr1 == p.scanned-1 && p.cr1 >= p.committed {
		a, b = p.cr0+1, p.cr1
	}
	cut := b-a > MaxPending
	b = min(b, a+MaxPending)
	text := ""
	if b > a {
		buf := make([]byte, b-a)
		if _, err := p.f.ReadAt(buf, a); err != nil && !errors.Is(err, io.EOF) {
			return sched.Line{}, false, fmt.Errorf("read %s: %w", p.f.Name(), err)
		}
		text = string(buf)
	}
	// A segment that grows past the cap keeps its text but becomes cut: that is news
	// too (the screen says the rest is in the logs).
	if p.hasShown && text == p.shown && cut == p.shownCut {
		return sched.Line{}, false, nil
	}
	p.shown, p.shownCut, p.hasShown = text, cut, true
	return sched.Line{
		Time:    p.since,
		Stream:  p.stream,
		Role:    it.src.Role,
		Replica: it.src.Replica,
		Attempt: it.lastAttempt,
		Text:    text,
		Pending: true,
		Cut:     cut,
	}, true, nil
}

// pendingReady reports whether nextPending has a line now, keeping it for Next.
func (it *Iterator) pendingReady() bool {
	if it.pendHead != nil {
		return true
	}
	l, ok, err := it.nextPending()
	if err != nil {
		it.err = err
		return true
	}
	if ok {
		it.pendHead = &l
	}
	return ok
}

// pendingWake returns the channels that wake a follower of pending lines.
func (it *Iterator) pendingWake() (a, b <-chan struct{}) {
	if len(it.pend) > 0 && it.pend[0].watch != nil {
		a = it.pend[0].watch.C()
	}
	if len(it.pend) > 1 && it.pend[1].watch != nil {
		b = it.pend[1].watch.C()
	}
	return a, b
}

// closePending releases the stream files and their watches.
func (it *Iterator) closePending() {
	for _, p := range it.pend {
		if p.watch != nil {
			p.watch.Close()
		}
		p.f.Close()
	}
}
