package logs

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"
	"unsafe"

	"github.com/wick-dev/wick/engine/safefs"
	"github.com/wick-dev/wick/engine/sched"
)

const (
	// recordBatch is how many index records one read fetches at most: 16 KB, a few
	// hundred runs. The buffer starts at minRecords and doubles while reads fill it:
	// a follower of a replica that writes a line now and then reads a record or two
	// at a time, and 1,024 of them held 16 MB of buffers sized for a backlog.
	recordBatch = 256
	minRecords  = 4
	// idleRecords, idleSpans and idleScan are the most an iterator keeps of its
	// record buffer, its block's spans and its pending scan buffer once it has read
	// everything there is (see trim): what reading a backlog grew goes.
	idleRecords = 16
	idleSpans   = 16
	idleScan    = 1 << 10
	// blockSize is how much of combined.log one read fetches when consecutive runs
	// are wanted: fewer, larger reads. A longer run is read a window at a time.
	blockSize = 256 << 10
	// lineWindow is the window a long run (or the fallback of a damaged index) is
	// read through: one byte more than MaxLine, so that a window starting a line
	// that holds no newline proves the line too long to yield whole.
	lineWindow = MaxLine + 1
	// scanSize is the buffer that finds the end of a line too long to yield whole.
	scanSize = 64 << 10
)

// MaxLine bounds the text of one committed line an iterator yields: a longer line (a
// replica that prints a 1 GB blob without a newline) comes as its first MaxLine bytes,
// marked Cut, with its full Size and a reader of all of it (sched.Line.Full). An
// iterator's memory stays bounded whatever the replicas write.
const MaxLine = 1 << 20

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
	// Chime, when not nil, serves following instead of Watcher and Writer: the
	// writer rings it after each write, and closes it (or dies) after the end mark.
	Chime *Chime
	// Warn, when not nil, is told once when the index is found damaged and the
	// iterator reads the stored bytes instead.
	Warn func(msg string)
	// Parent, when not nil, is an open directory (safefs.OpenDir) that Dir lies
	// below, the role's log directory: Dir's remaining components are opened from
	// it (safefs.OpenDirIn) rather than walked from "/" again. The caller closes it,
	// once Open has returned.
	Parent *os.File
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
	// Records read from the index: buf[ri*recordSize:rn*recordSize] are sound and
	// not yet consumed (decoded again as they are: a record is 64 bytes in buf and
	// 48 decoded, no need to hold both).
	buf     []byte
	ri, rn  int
	bufFull bool  // the last read filled buf: the next may use a larger one
	recMax  int   // records one read fetches at most: recordBatch, less in a Merge of many
	nextRec int64 // number of the next record to read from the index

	// The block being read: consecutive runs of combined.log, described by spans.
	// A block joins runs up to blockMax bytes (blockSize, less in a Merge of many).
	blockMax int64
	text     string
	spans    []span
	si       int // current span
	pos      int // offset in text of the next line
	skip     int // matching lines still to skip (Tail)
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
	// A line from lr, built whole (headBig).
	headBig  bool
	headLine sched.Line

	// Checking the index (check.go).
	checked    record   // the last record read and found sound; the start mark before any
	streamEnd  [3]int64 // per stream code, where the last sound record's bytes end in its file
	combEnd    int64    // where the last sound run ends in combined.log (with a partial run's newline)
	dmg        *damage  // the first unsound record, once found
	fellBack   bool     // reading the stored bytes instead of the index
	lr         *lineReader
	extra      *os.File // the stream file the fallback reads, if not combined.log
	seekFailed bool     // the damage was found before the first line: the fallback reads everything
	// streamFiles, per stream code: stdout.log and stderr.log, opened for the runs
	// combined.log could not take (flagStream), once one is met.
	streamFiles [3]*os.File

	// The log directory, open while Open runs (its other files are opened in it).
	dir *os.File

	// Following.
	watch     *Watch
	procDone  <-chan struct{}
	unwatch   func()
	gone      bool // the writer is gone or the files were removed
	closed    chan struct{}
	closeOnce sync.Once

	// NextRun's: runs are read into block, reused (see readRunText).
	runs  bool
	block []byte

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
	it := &Iterator{src: src, opts: opts, closed: make(chan struct{}), blockMax: blockSize, recMax: recordBatch}
	it.checked = startMark()
	// The directory is walked once, following no link; its files are opened in it.
	var d *os.File
	var err error
	if src.Parent != nil {
		d, err = safefs.OpenDirIn(src.Parent, src.Dir)
	} else {
		d, err = safefs.OpenDir(src.Dir)
	}
	if err != nil {
		return nil, fmt.Errorf("open logs of %s/%d: %w", src.Role, src.Replica, err)
	}
	it.dir = d
	defer func() {
		it.dir = nil
		d.Close()
	}()
	it.idx, err = openIn(d, IndexFile)
	if err == nil {
		if it.comb, err = openIn(d, CombinedFile); err != nil {
			it.idx.Close()
		}
	}
	if err != nil {
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
	var watch func(path string) (*Watch, error)
	switch {
	case opts.Follow && src.Chime != nil:
		// The writer rings: no inotify (see Chime), and the bell's end is the
		// writer's.
		watch = func(string) (*Watch, error) { return src.Chime.Watch(), nil }
		it.watch, it.procDone = src.Chime.Watch(), src.Chime.Done()
	case opts.Follow:
		// Watch before reading anything: a change made after the first read but
		// before the watch would otherwise be missed.
		w := src.Watcher
		if w == nil {
			w = NewWatcher()
		}
		watch = w.Add
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
	if it.dmg != nil {
		if err := it.fallBack(); err != nil {
			it.Close()
			return nil, fmt.Errorf("open logs of %s/%d: %w", src.Role, src.Replica, err)
		}
	}
	// A filtered view lists matching lines only: an unfinished line that may never
	// match has no place in it.
	if opts.Follow && opts.Pending && opts.Regex == nil && !it.fellBack {
		if err := it.openPending(watch); err != nil {
			it.Close()
			return nil, fmt.Errorf("follow logs of %s/%d: %w", src.Role, src.Replica, err)
		}
	}
	return it, nil
}

// openFile opens the file name of the log directory: in the directory Open holds
// open, or walked again (OpenFile) once Open has returned.
func (it *Iterator) openFile(name string) (*os.File, error) {
	if it.dir != nil {
		return openIn(it.dir, name)
	}
	return OpenFile(it.src.Dir, name)
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
// Since, or the one holding the first of the last Tail lines. Every record it reads
// is checked; a damaged one sets it.dmg.
func (it *Iterator) seek() error {
	if it.opts.Since.IsZero() && it.opts.Tail <= 0 {
		return nil
	}
	n, err := it.count()
	if err != nil {
		return err
	}
	size, err := it.combSize()
	if err != nil {
		return err
	}
	lo, err := it.seekSince(n, size)
	if err != nil || it.seekFailed {
		return err
	}
	it.nextRec = lo
	if it.opts.Tail > 0 {
		if err := it.seekTail(lo, n, size); err != nil || it.seekFailed {
			return err
		}
	}
	if it.nextRec > 0 {
		return it.checkBeforeFirst(size)
	}
	return nil
}

// failSeek gives the seek up at a damaged record i: the lines are read as a damaged
// index is (see damage).
func (it *Iterator) failSeek(i int64, why string) {
	it.dmg, it.seekFailed = &damage{rec: i, why: why}, true
}

// seekSince returns the first of the n records at or after Since (0 without one).
// Run times never decrease, so it is found by bisection; an end mark sorts last.
func (it *Iterator) seekSince(n, size int64) (int64, error) {
	lo, hi := int64(0), n
	if it.opts.Since.IsZero() {
		return lo, nil
	}
	since := it.opts.Since.UnixNano()
	for lo < hi {
		mid := lo + (hi-lo)/2
		r, err := it.readRecord(mid)
		if err != nil {
			return 0, err
		}
		if why := badRecord(&r, size); why != "" {
			it.failSeek(mid, why)
			return 0, nil
		}
		if r.time < since && !r.end() {
			lo = mid + 1
		} else {
			hi = mid
		}
	}
	return lo, nil
}

// seekTail moves the start back from the end to the Tail-th last line that passes
// the filters, no earlier than record lo: it walks back a batch of records at a time,
// checking each record against the one after it.
func (it *Iterator) seekTail(lo, n, size int64) error {
	need := int64(it.opts.Tail)
	var after record
	hasAfter := false
	// gapAt is the first record of the run of gaps that is the Tail-th last line
	// (one marker for the run, mergeGaps): the records before it are looked at
	// until one is not of the run.
	gapAt := int64(-1)
	buf := make([]byte, min(n-lo, recordBatch)*recordSize)
	for end := n; end > lo && need > 0; end = max(lo, end-recordBatch) {
		start := max(lo, end-recordBatch)
		b := buf[:(end-start)*recordSize]
		if _, err := it.idx.ReadAt(b, (start+1)*recordSize); err != nil {
			return err
		}
		for i := end - 1; i >= start; i-- {
			r := decodeRecord(b[(i-start)*recordSize:])
			if why := badRecord(&r, size); why != "" {
				it.failSeek(i, why)
				return nil
			}
			if hasAfter {
				if why := badNext(&r, &after); why != "" {
					it.failSeek(i+1, why) // the record after it does not follow it
					return nil
				}
			}
			merges := hasAfter && it.sameGap(&r, &after)
			after, hasAfter = r, true
			if gapAt >= 0 {
				if !merges {
					it.nextRec, it.skip = gapAt, 0
					return nil
				}
				gapAt = i
				continue
			}
			if !it.wantRun(&r) {
				continue
			}
			m, err := it.tailLines(&r)
			if err != nil {
				return err
			}
			if merges {
				m = 0 // one marker with the gap after it, counted there
			}
			if m >= need {
				if r.flags&flagGap != 0 {
					gapAt = i
					continue
				}
				it.nextRec, it.skip = i, int(m-need)
				return nil
			}
			need -= m
		}
	}
	if gapAt >= 0 {
		it.nextRec, it.skip = gapAt, 0
	}
	return nil
}

// tailLines counts the lines of wanted run r that pass the regex, for seekTail.
func (it *Iterator) tailLines(r *record) (int64, error) {
	switch {
	case r.flags&flagGap != 0:
		// One line says they are missing.
		if it.opts.Regex == nil || it.opts.Regex.MatchString(gapText(r)) {
			return 1, nil
		}
		return 0, nil
	case it.opts.Regex != nil:
		f, off, err := it.runFile(r)
		if err != nil {
			return 0, err
		}
		return it.countMatches(f, off, r.length)
	}
	return r.lines, nil
}

// sameGap says whether gaps r and next (the record right after it) are one loss to
// the views: both gaps, of one stream and attempt, both wanted. They are shown as one
// marker that sums their lines (mergeGaps).
func (it *Iterator) sameGap(r, next *record) bool {
	return r.flags&flagGap != 0 && next.flags&flagGap != 0 && r.stream == next.stream &&
		r.attempt == next.attempt && it.wantRun(r) && it.wantRun(next)
}

// mergeGaps adds to gap r the gaps of its stream and attempt that follow it at once
// in the index (as far as it is written): a loss the writer recorded in several
// pieces is one marker in the views, with the lines of all.
func (it *Iterator) mergeGaps(r *record) error {
	for {
		if it.ri == it.rn {
			if it.dmg != nil {
				return nil
			}
			if _, ok, err := it.nextRecord(); err != nil || !ok {
				return err
			}
			// Read to peek at: given back.
			it.ri--
			it.nextRec--
		}
		next := it.peekRecord()
		if !it.sameGap(r, &next) {
			return nil
		}
		it.takeRecord()
		if it.pend != nil {
			it.commit(&next)
		}
		r.lines += next.lines
	}
}

// checkBeforeFirst checks the record before the first one read, which that one is
// checked against, and the first one against it.
func (it *Iterator) checkBeforeFirst(size int64) error {
	// The record before the first one read is what that one is checked against.
	r, err := it.readRecord(it.nextRec - 1)
	if err != nil {
		return err
	}
	if why := badRecord(&r, size); why != "" {
		it.failSeek(it.nextRec-1, why)
		return nil
	}
	first, err := it.readRecord(it.nextRec)
	if err == nil && badRecord(&first, size) == "" {
		if why := badNext(&r, &first); why != "" {
			it.failSeek(it.nextRec, why)
			return nil
		}
	}
	it.checked = r
	it.noteSound(&r)
	return nil
}

// noteSound keeps where a sound run ends, for a fallback that would follow it.
func (it *Iterator) noteSound(r *record) {
	if r.end() {
		return
	}
	it.streamEnd[r.stream] = r.streamOff + r.length
	it.combEnd = r.combOff + r.combLen()
}

// combSize returns the size of combined.log now.
func (it *Iterator) combSize() (int64, error) {
	st, err := it.comb.Stat()
	if err != nil {
		return 0, err
	}
	return st.Size(), nil
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

// countMatches counts the lines of bytes [off, off+n) of f that the regex matches
// (all of them without one), reading through a bounded buffer: a line longer than
// MaxLine is matched by its first MaxLine bytes, as Next yields it.
func (it *Iterator) countMatches(f *os.File, off, n int64) (int64, error) {
	br := bufio.NewReaderSize(io.NewSectionReader(f, off, n), scanSize)
	var long []byte // the start of a line longer than the buffer
	m := int64(0)
	for {
		b, err := br.ReadSlice('\n')
		if errors.Is(err, bufio.ErrBufferFull) {
			if len(long) < MaxLine {
				long = append(long, b[:min(len(b), MaxLine-len(long))]...)
			}
			continue
		}
		line := b
		if len(b) > 0 && b[len(b)-1] == '\n' {
			line = b[:len(b)-1]
		}
		if long != nil {
			if len(long) < MaxLine {
				long = append(long, line[:min(len(line), MaxLine-len(long))]...)
			}
			line = long
		}
		if len(b) > 0 || long != nil {
			if it.opts.Regex == nil || it.opts.Regex.Match(line) {
				m++
			}
		}
		long = nil
		if err == io.EOF {
			return m, nil
		}
		if err != nil {
			return m, fmt.Errorf("read %s: %w", f.Name(), err)
		}
	}
}

// nextRecord returns the next record of the index, if one has been written. Records
// are checked as they are read; the first unsound one sets it.dmg and is not returned,
// nor is anything after it.
func (it *Iterator) nextRecord() (record, bool, error) {
	if it.ri == it.rn {
		if it.dmg != nil {
			return record{}, false, nil
		}
		if len(it.buf) == 0 || it.bufFull && len(it.buf) < it.recMax*recordSize {
			it.buf = make([]byte, min(max(2*len(it.buf), minRecords*recordSize), it.recMax*recordSize))
		}
		n, err := it.idx.ReadAt(it.buf, (it.nextRec+1)*recordSize)
		if err != nil && !errors.Is(err, io.EOF) {
			return record{}, false, fmt.Errorf("read %s: %w", it.idx.Name(), err)
		}
		k := n / recordSize
		it.bufFull = k == len(it.buf)/recordSize
		if k == 0 {
			return record{}, false, nil
		}
		// The bytes of a run are written before its record: the size read now
		// covers every record read before.
		size, err := it.combSize()
		if err != nil {
			return record{}, false, err
		}
		it.ri, it.rn = 0, 0
		for i := range k {
			r := decodeRecord(it.buf[i*recordSize:])
			why := badRecord(&r, size)
			if why == "" {
				why = badNext(&it.checked, &r)
			}
			if why != "" {
				it.dmg = &damage{rec: it.nextRec + int64(i), why: why}
				break
			}
			it.rn++
			it.checked = r
			it.noteSound(&r)
		}
		if it.rn == 0 {
			return record{}, false, nil
		}
	}
	r := it.peekRecord()
	it.takeRecord()
	return r, true, nil
}

// peekRecord returns the next record read and not yet consumed; there must be one.
func (it *Iterator) peekRecord() record { return decodeRecord(it.buf[it.ri*recordSize:]) }

// takeRecord consumes the record peekRecord returns.
func (it *Iterator) takeRecord() {
	it.ri++
	it.nextRec++
}

// trim lets go of the buffers a backlog grew, once the iterator has read everything
// there is: a follower of a replica that writes a line now and then needs little,
// and the wall holds one for each of 1,024 replicas.
func (it *Iterator) trim() {
	if it.ri == it.rn && len(it.buf) > idleRecords*recordSize {
		it.buf, it.bufFull = nil, false
	}
	if cap(it.spans) > idleSpans && it.pos >= len(it.text) && !it.hasHead {
		it.spans = nil
	}
	if len(it.scanBuf) > idleScan {
		it.scanBuf = nil
	}
}

// fill finds the next line if one is available now. It returns false when Next would
// have to wait, or when the iterator is done or failed.
func (it *Iterator) fill() bool {
	for !it.hasHead && !it.done && it.err == nil {
		if it.pos < len(it.text) {
			it.lineFromBlock()
			continue
		}
		if it.lr != nil {
			if !it.lineFromReader() {
				return false
			}
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
			if it.dmg != nil {
				if err := it.fallBack(); err != nil {
					it.err = err
					return false
				}
				continue
			}
			if it.ended || !it.opts.Follow || it.gone || it.untilPassed() {
				it.done = true
			}
			// Caught up: a reader that comes back later rather than wait (the
			// wall's, for a replica off screen) lets go of what a backlog grew too.
			it.trim()
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
		if r.flags&flagGap != 0 {
			if err := it.mergeGaps(&r); err != nil {
				it.err = err
				return false
			}
			it.gapLine(&r)
			continue
		}
		if r.flags&flagStream != 0 && !it.inStreamFile(&r) {
			continue // damaged: fallBack next
		}
		if r.length > it.blockMax {
			// A run longer than a block is read a window of a block at a time: a long
			// run, or, for one of many iterators with small blocks, a starved
			// writer's read of 64 KB at once (1,024 such blocks held by the wall's
			// readers catching up were most of its heap).
			f, off, err := it.runFile(&r)
			if err != nil {
				it.err = err
				return false
			}
			it.lr = &lineReader{f: f, off: off, end: off + r.length, window: it.blockMax,
				sp: span{time: time.Unix(0, r.time), stream: r.streamName(), attempt: int(r.attempt)}}
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
// blockMax, as one block.
func (it *Iterator) loadBlock(first record) error {
	it.spans = it.spans[:0]
	addSpan := func(r *record, end int) {
		it.spans = append(it.spans, span{end: end, time: time.Unix(0, r.time), stream: r.streamName(), attempt: int(r.attempt), partial: r.partial()})
	}
	total := first.length
	addSpan(&first, int(total))
	last := first
	for it.ri < it.rn && total < it.blockMax && first.inComb() {
		r := it.peekRecord()
		if !it.wantRun(&r) || !r.inComb() || r.combOff != last.combOff+last.length || total+r.length > it.blockMax {
			break
		}
		it.takeRecord()
		it.lastAttempt = int(r.attempt)
		if it.pend != nil {
			it.commit(&r)
		}
		total += r.length
		addSpan(&r, int(total))
		last = r
	}
	f, off, err := it.runFile(&first)
	if err != nil {
		return err
	}
	var text string
	if it.runs {
		// A run is printed before the next is asked for (sched.RunReader): one
		// buffer serves every block, and the garbage collector has nothing to do.
		text, err = it.readRunText(f, off, total)
	} else {
		text, err = readText(f, off, total)
	}
	if err != nil {
		return err
	}
	it.text, it.pos, it.si = text, 0, 0
	return nil
}

// limitBlock makes the iterator's blocks at most n bytes (a run longer than that is
// read n bytes at a time, a line longer than n whole), and its reads of the index as
// many records less than recordBatch as n is less than blockSize. Merge asks it of the iterators
// of many replicas: each holds its block while its lines wait to be merged, and
// 1,024 blocks of 256 KB were 265 MB.
func (it *Iterator) limitBlock(n int64) {
	it.blockMax = min(it.blockMax, n)
	it.recMax = min(it.recMax, max(minRecords, int(recordBatch*it.blockMax/blockSize)))
}

// readRunText reads n bytes of f at off into the iterator's reused block.
func (it *Iterator) readRunText(f *os.File, off, n int64) (string, error) {
	if n <= 0 {
		return "", nil
	}
	if int64(cap(it.block)) < n {
		it.block = make([]byte, n)
	}
	b := it.block[:n]
	if _, err := f.ReadAt(b, off); err != nil {
		return "", fmt.Errorf("read %s: %w", f.Name(), err)
	}
	return unsafe.String(&b[0], len(b)), nil
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

// NextRun returns the rest of the current run of lines as one text (see
// sched.RunReader): the lines of a record, or what is left of it.
func (it *Iterator) NextRun(ctx context.Context) (sched.Line, bool, error) {
	it.runs = true
	for !it.hasHead && it.pos >= len(it.text) {
		if it.fill() {
			break
		}
		if it.err != nil {
			return sched.Line{}, false, it.err
		}
		if it.done {
			return sched.Line{}, false, io.EOF
		}
		if err := it.wait(ctx); err != nil {
			return sched.Line{}, false, err
		}
	}
	if it.hasHead {
		if it.headBig {
			return sched.Line{}, false, nil // Next has it
		}
		// fill took the run's first line as the head: give it back.
		it.hasHead, it.pos = false, it.headA
	}
	for it.pos >= it.spans[it.si].end {
		it.si++
	}
	sp := &it.spans[it.si]
	l := sched.Line{Time: sp.time, Stream: sp.stream, Role: it.src.Role, Replica: it.src.Replica, Attempt: sp.attempt,
		Text: it.text[it.pos:sp.end], Partial: sp.partial}
	it.pos = sp.end
	if it.pos >= len(it.text) {
		it.text = ""
	}
	return l, true, nil
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
			if it.headBig {
				l := it.headLine
				it.headBig, it.headLine = false, sched.Line{}
				return l, nil
			}
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
		if it.extra != nil {
			it.extra.Close()
		}
		for _, f := range it.streamFiles {
			if f != nil {
				f.Close()
			}
		}
		it.closePending()
	})
	return nil
}

// runFile returns the file that holds run r's bytes and where: combined.log, or its
// stream's file for a run combined.log could not take (flagStream).
func (it *Iterator) runFile(r *record) (*os.File, int64, error) {
	if r.flags&flagStream == 0 {
		return it.comb, r.combOff, nil
	}
	if it.streamFiles[r.stream] == nil {
		f, err := OpenFile(it.src.Dir, streamFileName(r.stream))
		if err != nil {
			return nil, 0, err
		}
		it.streamFiles[r.stream] = f
	}
	return it.streamFiles[r.stream], r.streamOff, nil
}

// inStreamFile checks that the bytes of run r, which combined.log could not take,
// are in its stream's file; where they are not (the index is damaged), nothing more
// is read on the index's word: the iterator falls back to the stored bytes.
func (it *Iterator) inStreamFile(r *record) bool {
	f, _, err := it.runFile(r)
	if err != nil {
		it.err = err
		return false
	}
	st, err := f.Stat()
	if err != nil {
		it.err = err
		return false
	}
	if r.streamOff+r.length <= st.Size() {
		return true
	}
	it.dmg = &damage{rec: it.nextRec - 1, why: fmt.Sprintf("%d bytes at offset %d, past the end of %s (%d bytes)", r.length, r.streamOff, f.Name(), st.Size())}
	it.ri, it.rn = 0, 0
	return false
}

// gapText is the line the views show in place of the lines of gap record r.
func gapText(r *record) string {
	what := "lines"
	if r.lines == 1 {
		what = "line"
	}
	return fmt.Sprintf("[wick: %d %s of %s missing here: the log files could not take them]", r.lines, what, r.streamName())
}

// gapLine makes the line of gap record r the head, if it passes the regex and is not
// skipped.
func (it *Iterator) gapLine(r *record) {
	text := gapText(r)
	if it.opts.Regex != nil && !it.opts.Regex.MatchString(text) {
		return
	}
	if it.skip > 0 {
		it.skip--
		return
	}
	it.hasHead, it.headBig = true, true
	it.headLine = sched.Line{Time: time.Unix(0, r.time), Stream: r.streamName(), Role: it.src.Role, Replica: it.src.Replica,
		Attempt: int(r.attempt), Text: text, Gap: true}
}
