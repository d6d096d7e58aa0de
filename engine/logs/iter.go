package logs

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"
	"unsafe"

	"github.com/wick-dev/wick/engine/sched"
)

const (
	// recordBatch is how many index records one read fetches: 16 KB, a few hundred
	// runs.
	recordBatch = 256
	// blockSize is how much of combined.log one read fetches when consecutive runs
	// are wanted: fewer, larger reads. A longer run is read whole.
	blockSize = 256 << 10
)

// ErrClosed is returned by Next after Close.
var ErrClosed = errors.New("log iterator closed")

// Source names the logs of one replica for Open.
type Source struct {
	// Dir is the replica's log directory.
	Dir string
	// Role and Replica are copied into every line.
	Role    string
	Replica int
	// Writer is the process writing the logs. A follower ends when it has read
	// everything after the end mark, or, should the writer die without writing one,
	// after the writer is gone. The zero Proc means "none known": the follower then
	// waits for the end mark only.
	Writer Proc
	// Watcher serves following; nil makes the iterator use a Watcher of its own.
	Watcher *Watcher
}

// span is one run within a block.
type span struct {
	end     int // offset in the block where the run ends
	time    time.Time
	stream  sched.Stream
	attempt int
	partial bool
}

// Iterator yields the lines of one replica's logs (a sched.LogIterator). Lines are
// split on '\n' only; a line is never split or merged, whatever its length or bytes.
// Next and Ready must not be called concurrently; Close may be called at any time.
type Iterator struct {
	src  Source
	opts sched.LogOptions

	idx, comb *os.File
	buf       []byte   // index read buffer
	recs      []record // records read and not yet consumed
	nextRec   int64    // number of the next record to read from the index

	// The block being read: consecutive runs of combined.log, described by spans.
	text  string
	spans []span
	si    int // current span
	pos   int // offset in text of the next line
	skip  int // matching lines still to skip (Tail)
	// The next line, when fill found one: text[headA:headB] of spans[headSpan]. Plain
	// offsets rather than a Line: Next builds the Line on the stack, which spares the
	// garbage collector a write barrier per field per line.
	hasHead      bool
	headA, headB int
	headSpan     int
	headPartial  bool
	ended        bool // the end mark was read
	done         bool // every line has been delivered
	err          error

	// Following.
	watch     *Watch
	procDone  <-chan struct{}
	unwatch   func()
	gone      bool // the writer is gone or the files were removed
	closed    chan struct{}
	closeOnce sync.Once

	// Pending lines (LogOptions.Pending), see pending.go.
	pend        []*pendingStream
	pendHead    *sched.Line // found by Ready, for Next
	scanBuf     []byte
	lastAttempt int
}

// Open returns an iterator over the logs in src.Dir, filtered and shaped by opts. With
// opts.Follow it keeps reading as the logs grow, woken by inotify, until the end mark
// (or the writer's death) and everything before it is read.
func Open(src Source, opts sched.LogOptions) (*Iterator, error) {
	if opts.Streams == "" {
		opts.Streams = sched.Combined
	}
	if _, err := sched.ParseStream(string(opts.Streams)); err != nil {
		return nil, err
	}
	it := &Iterator{src: src, opts: opts, closed: make(chan struct{}), buf: make([]byte, recordBatch*recordSize)}
	var err error
	if it.idx, err = os.Open(filepath.Join(src.Dir, IndexFile)); err != nil {
		return nil, fmt.Errorf("open logs of %s/%d: %w", src.Role, src.Replica, err)
	}
	if it.comb, err = os.Open(filepath.Join(src.Dir, CombinedFile)); err != nil {
		it.idx.Close()
		return nil, fmt.Errorf("open logs of %s/%d: %w", src.Role, src.Replica, err)
	}
	var hdr [recordSize]byte
	if _, err := io.ReadFull(it.idx, hdr[:]); err != nil {
		it.Close()
		return nil, fmt.Errorf("open logs of %s/%d: %s: %w: %v", src.Role, src.Replica, it.idx.Name(), ErrBadIndex, err)
	}
	if err := checkHeader(hdr[:]); err != nil {
		it.Close()
		return nil, fmt.Errorf("open logs of %s/%d: %s: %w", src.Role, src.Replica, it.idx.Name(), err)
	}
	var w *Watcher
	if opts.Follow {
		// Watch before reading anything: a change made after the first read but
		// before the watch would otherwise be missed.
		w = src.Watcher
		if w == nil {
			w = NewWatcher()
		}
		if it.watch, err = w.Add(it.idx.Name()); err != nil {
			it.Close()
			return nil, fmt.Errorf("follow logs of %s/%d: %w", src.Role, src.Replica, err)
		}
		if !src.Writer.IsZero() {
			it.procDone, it.unwatch = w.WatchProc(src.Writer)
		}
	}
	if err := it.seek(); err != nil {
		it.Close()
		return nil, fmt.Errorf("open logs of %s/%d: %w", src.Role, src.Replica, err)
	}
	// A filtered view lists matching lines only: an unfinished line that may never
	// match has no place in it.
	if opts.Follow && opts.Pending && opts.Regex == nil {
		if err := it.openPending(w); err != nil {
			it.Close()
			return nil, fmt.Errorf("follow logs of %s/%d: %w", src.Role, src.Replica, err)
		}
	}
	return it, nil
}

// count returns the number of complete records in the index now.
func (it *Iterator) count() (int64, error) {
	st, err := it.idx.Stat()
	if err != nil {
		return 0, err
	}
	return max(st.Size()/recordSize-1, 0), nil
}

func (it *Iterator) readRecord(i int64) (record, error) {
	var b [recordSize]byte
	if _, err := it.idx.ReadAt(b[:], (i+1)*recordSize); err != nil {
		return record{}, err
	}
	return decodeRecord(b[:]), nil
}

// seek places the iterator at the first record it may need: the first at or after
// Since, or the one holding the first of the last Tail lines.
func (it *Iterator) seek() error {
	if it.opts.Since.IsZero() && it.opts.Tail <= 0 {
		return nil
	}
	n, err := it.count()
	if err != nil {
		return err
	}
	// Run times never decrease, so the first run at or after Since is found by
	// bisection; an end mark sorts last.
	lo, hi := int64(0), n
	if !it.opts.Since.IsZero() {
		since := it.opts.Since.UnixNano()
		for lo < hi {
			mid := lo + (hi-lo)/2
			r, err := it.readRecord(mid)
			if err != nil {
				return err
			}
			if r.time < since && !r.end() {
				lo = mid + 1
			} else {
				hi = mid
			}
		}
	}
	it.nextRec = lo
	if it.opts.Tail <= 0 {
		return nil
	}
	// Walk back from the end counting lines that pass the filters, a batch of records
	// at a time.
	need := int64(it.opts.Tail)
	for end := n; end > lo && need > 0; {
		start := max(lo, end-recordBatch)
		b := it.buf[:(end-start)*recordSize]
		if _, err := it.idx.ReadAt(b, (start+1)*recordSize); err != nil {
			return err
		}
		for i := end - 1; i >= start; i-- {
			r := decodeRecord(b[(i-start)*recordSize:])
			if !it.wantRun(&r) {
				continue
			}
			m := r.lines
			if it.opts.Regex != nil {
				text, err := it.readRun(&r)
				if err != nil {
					return err
				}
				m = int64(it.countMatches(text))
			}
			if m >= need {
				it.nextRec = i
				it.skip = int(m - need)
				return nil
			}
			need -= m
		}
		end = start
	}
	return nil
}

// wantRun reports whether a run's stream and time pass the options.
func (it *Iterator) wantRun(r *record) bool {
	if r.end() {
		return false
	}
	if s := it.opts.Streams; s != sched.Combined && r.streamName() != s {
		return false
	}
	if !it.opts.Since.IsZero() && r.time < it.opts.Since.UnixNano() {
		return false
	}
	return it.opts.Until.IsZero() || r.time < it.opts.Until.UnixNano()
}

func (it *Iterator) countMatches(text string) int {
	m := 0
	for text != "" {
		line := text
		if i := strings.IndexByte(text, '\n'); i >= 0 {
			line, text = text[:i], text[i+1:]
		} else {
			text = ""
		}
		if it.opts.Regex.MatchString(line) {
			m++
		}
	}
	return m
}

// readRun returns the bytes of a run from combined.log.
func (it *Iterator) readRun(r *record) (string, error) { return it.readAt(r.combOff, r.length) }

// readAt returns n bytes of combined.log at off.
func (it *Iterator) readAt(off, n int64) (string, error) {
	if n <= 0 {
		return "", nil
	}
	b := make([]byte, n)
	if _, err := it.comb.ReadAt(b, off); err != nil {
		return "", fmt.Errorf("read %s: %w", it.comb.Name(), err)
	}
	// b is never written again, so the string can share its memory: one copy of the
	// bytes instead of two, which matters for a 10 MB line or a 100 MB log. Lines are
	// substrings of it.
	return unsafe.String(&b[0], len(b)), nil
}

// nextRecord returns the next record of the index, if one has been written.
func (it *Iterator) nextRecord() (record, bool, error) {
	if len(it.recs) == 0 {
		n, err := it.idx.ReadAt(it.buf, (it.nextRec+1)*recordSize)
		if err != nil && !errors.Is(err, io.EOF) {
			return record{}, false, fmt.Errorf("read %s: %w", it.idx.Name(), err)
		}
		k := n / recordSize
		if k == 0 {
			return record{}, false, nil
		}
		it.recs = it.recs[:0]
		for i := range k {
			it.recs = append(it.recs, decodeRecord(it.buf[i*recordSize:]))
		}
	}
	r := it.recs[0]
	it.recs = it.recs[1:]
	it.nextRec++
	return r, true, nil
}

// fill finds the next line if one is available now. It returns false when Next would
// have to wait, or when the iterator is done or failed.
func (it *Iterator) fill() bool {
	for !it.hasHead && !it.done && it.err == nil {
		if it.pos < len(it.text) {
			it.lineFromBlock()
			continue
		}
		select {
		case <-it.closed:
			it.err = ErrClosed
			return false
		default:
		}
		r, ok, err := it.nextRecord()
		if err != nil {
			it.err = err
			return false
		}
		if !ok {
			if it.ended || !it.opts.Follow || it.gone || it.untilPassed() {
				it.done = true
			}
			return false
		}
		if r.end() {
			it.ended = true
			continue
		}
		it.lastAttempt = int(r.attempt)
		if it.pend != nil {
			it.commit(&r)
		}
		if !it.opts.Until.IsZero() && r.time >= it.opts.Until.UnixNano() {
			// Runs are in time order: nothing after this one can match.
			it.done = true
			return false
		}
		if !it.wantRun(&r) {
			continue
		}
		if err := it.loadBlock(r); err != nil {
			it.err = err
			return false
		}
	}
	return it.hasHead
}

// loadBlock reads run first and the wanted runs that follow it in combined.log, up to
// blockSize, as one block.
func (it *Iterator) loadBlock(first record) error {
	it.spans = it.spans[:0]
	addSpan := func(r *record, end int) {
		it.spans = append(it.spans, span{end: end, time: time.Unix(0, r.time), stream: r.streamName(), attempt: int(r.attempt), partial: r.partial()})
	}
	total := first.length
	addSpan(&first, int(total))
	last := first
	for len(it.recs) > 0 && total < blockSize {
		r := it.recs[0]
		if !it.wantRun(&r) || r.combOff != last.combOff+last.length || total+r.length > blockSize {
			break
		}
		it.recs = it.recs[1:]
		it.nextRec++
		it.lastAttempt = int(r.attempt)
		if it.pend != nil {
			it.commit(&r)
		}
		total += r.length
		addSpan(&r, int(total))
		last = r
	}
	text, err := it.readAt(first.combOff, total)
	if err != nil {
		return err
	}
	it.text, it.pos, it.si = text, 0, 0
	return nil
}

func (it *Iterator) untilPassed() bool {
	return !it.opts.Until.IsZero() && !time.Now().Before(it.opts.Until)
}

// lineFromBlock takes the next line of the block as the head if it passes the regex
// and is not skipped.
func (it *Iterator) lineFromBlock() {
	for it.pos >= it.spans[it.si].end {
		it.si++
	}
	sp := &it.spans[it.si]
	a := it.pos
	rest := it.text[a:sp.end]
	b, partial := sp.end, false
	if i := strings.IndexByte(rest, '\n'); i >= 0 {
		b = a + i
		it.pos = b + 1
	} else {
		it.pos = sp.end
		partial = sp.partial
	}
	if it.opts.Regex != nil && !it.opts.Regex.MatchString(it.text[a:b]) {
		return
	}
	if it.skip > 0 {
		it.skip--
		return
	}
	it.hasHead, it.headA, it.headB, it.headSpan, it.headPartial = true, a, b, it.si, partial
}

// Ready reports whether Next would return without blocking: a line is available, the
// lines have ended, or the iterator failed. Merge uses it to keep lines of several
// replicas in time order.
func (it *Iterator) Ready() bool {
	return it.fill() || it.done || it.err != nil || it.pend != nil && it.pendingReady()
}

// Next returns the next line. It blocks, when following, until one is written, the
// logs end (io.EOF) or ctx is done.
func (it *Iterator) Next(ctx context.Context) (sched.Line, error) {
	// The common case, a plain line inside the current block, without calls.
	if !it.hasHead && it.skip == 0 && it.opts.Regex == nil && it.pos < len(it.text) {
		if sp := &it.spans[it.si]; it.pos < sp.end {
			a := it.pos
			if i := strings.IndexByte(it.text[a:sp.end], '\n'); i >= 0 {
				it.pos = a + i + 1
				l := sched.Line{Time: sp.time, Stream: sp.stream, Role: it.src.Role, Replica: it.src.Replica, Attempt: sp.attempt, Text: it.text[a : a+i]}
				if it.pos >= len(it.text) {
					it.text = ""
				}
				return l, nil
			}
		}
	}
	for {
		if it.fill() {
			it.hasHead = false
			sp := &it.spans[it.headSpan]
			l := sched.Line{
				Time:    sp.time,
				Stream:  sp.stream,
				Role:    it.src.Role,
				Replica: it.src.Replica,
				Attempt: sp.attempt,
				Text:    it.text[it.headA:it.headB],
				Partial: it.headPartial,
			}
			if it.opts.Regex != nil {
				// Matches may be sparse: a line kept by the caller must not keep its
				// whole block alive.
				l.Text = strings.Clone(l.Text)
			}
			if it.pos >= len(it.text) {
				// Let the block go once its last line is out.
				it.text = ""
			}
			return l, nil
		}
		if it.err != nil {
			return sched.Line{}, it.err
		}
		if it.done {
			return sched.Line{}, io.EOF
		}
		if it.pend != nil {
			l, ok, err := it.nextPending()
			if err != nil {
				it.err = err
				return sched.Line{}, err
			}
			if ok {
				return l, nil
			}
		}
		if err := it.wait(ctx); err != nil {
			return sched.Line{}, err
		}
	}
}

// wait blocks until the index may have grown, the writer is gone, Until passes, the
// iterator is closed or ctx is done.
func (it *Iterator) wait(ctx context.Context) error {
	var until <-chan time.Time
	if !it.opts.Until.IsZero() {
		d := time.Until(it.opts.Until)
		if d <= 0 {
			return nil
		}
		t := time.NewTimer(d)
		defer t.Stop()
		until = t.C
	}
	pa, pb := it.pendingWake()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-it.closed:
		return ErrClosed
	case <-pa:
		it.pend[0].dirty = true
	case <-pb:
		it.pend[1].dirty = true
	case <-it.watch.C():
		if it.watch.Events()&Gone != 0 {
			it.gone = true
		}
	case <-it.procDone:
		// One more pass reads what the writer wrote before it died; then the
		// iterator ends.
		it.gone = true
		it.procDone = nil
	case <-until:
	}
	return nil
}

// Close releases the iterator's files and watches. It may be called more than once,
// and from another goroutine to stop a Next that is waiting.
func (it *Iterator) Close() error {
	it.closeOnce.Do(func() {
		close(it.closed)
		if it.watch != nil {
			it.watch.Close()
		}
		if it.unwatch != nil {
			it.unwatch()
		}
		if it.idx != nil {
			it.idx.Close()
		}
		if it.comb != nil {
			it.comb.Close()
		}
		it.closePending()
	})
	return nil
}
