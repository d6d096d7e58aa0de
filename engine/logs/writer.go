package logs

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"

	"github.com/wick-dev/wick/engine/safefs"
	"github.com/wick-dev/wick/engine/sched"
)

// Buffer sizes of the writer, chosen for throughput at a small, bounded memory cost.
const (
	// readSize is what one read from a pipe asks for: the default pipe capacity, so
	// one read usually empties the pipe.
	readSize = 64 << 10
	// maxCarry bounds the unfinished line kept in memory between reads. A longer line
	// is not buffered: its start is already in stdout.log or stderr.log and is copied
	// from there into combined.log when its newline arrives. Memory per stream stays
	// bounded whatever the line length.
	maxCarry = 16 << 10
	bufSize  = readSize + maxCarry
	// runQueue is how many runs may wait for the combiner. Writing a byte into the page
	// cache is the dominant cost, and every byte is written twice (its stream's file,
	// then combined.log): with the two writes in different goroutines they proceed on
	// two cores at once. A short queue is enough to keep both busy, and bounds memory.
	runQueue = 2
)

// Recorder writes the log files of replicas. One Recorder serves every replica of a
// supervisor; it shares read buffers between them, and a stream holds a buffer only
// while its pipe has data, so idle replicas cost no memory. It is safe for
// concurrent use.
type Recorder struct {
	bufs sync.Pool
	now  func() time.Time
	// slow is slept before every write to a log file: a test's slow disk (see
	// SetWriteDelay). Zero in production.
	slow time.Duration
	// bell, when set, is rung after writes a follower can see (see Bell).
	bell atomic.Pointer[Bell]
}

// SetBell makes the Recorder ring b after each write a follower can see: a line
// recorded, an unfinished line grown, an end mark. It may be called at any time.
func (r *Recorder) SetBell(b *Bell) { r.bell.Store(b) }

// SetWriteDelay makes every write of the Recorder's Writers to a log file wait d
// first. It exists for tests that stand in for a slow or throttled disk (NFS, a
// saturated device), to widen the timing windows of the real code; it must be called
// before the first Create.
func (r *Recorder) SetWriteDelay(d time.Duration) { r.slow = d }

// stall waits out the test delay of SetWriteDelay, if any.
func (r *Recorder) stall() {
	if r.slow > 0 {
		time.Sleep(r.slow)
	}
}

// NewRecorder returns a Recorder.
func NewRecorder() *Recorder {
	r := &Recorder{now: time.Now}
	r.bufs.New = func() any { b := make([]byte, bufSize); return &b }
	return r
}

// Writer writes one replica's log files (see the package documentation). Copy may run
// for stdout and stderr at once. Each Copy writes its stream's file itself and hands
// the complete lines it read, in runs, to the Writer's combiner goroutine, which
// appends them to combined.log and the index in the order they were handed over:
// the order of arrival.
type Writer struct {
	rec *Recorder
	dir string

	// Per stream, used only by the one Copy of that stream at a time.
	streams [3]*streamFile // indexed by codeStdout, codeStderr

	runs      chan run
	combiner  sync.WaitGroup
	closeOnce sync.Once

	// Used by the combiner only.
	comb    *os.File
	idx     *os.File
	combOff int64
	idxOff  int64 // size of the index up to its last complete record
	// idxRoom: the index's blocks are allocated up to here (reserveIndex), so that
	// the records of what combined.log could not take, and the end mark, still fit
	// once the disk is full.
	idxRoom int64
	lastT   int64 // run times never go backwards, whatever the wall clock does
	ended   bool
	// behind, per stream code: the runs combined.log could not take (a full disk),
	// as contiguous segments of the stream's file in the order they were read,
	// written there before the next run once there is room again (see catchUp).
	behind [3][]segment

	// taps, per stream code: who sees its lines as they are read (see Tap).
	taps [3]atomic.Pointer[Tap]

	mu   sync.Mutex
	err  error    // the first write error, reported by Copy and Close
	lost [3]int64 // per stream code: bytes read but not written to its file
	// missing, per stream code: lines read but not in what the views show: waiting
	// in behind, or in no file (see Missing).
	missing [3]int64
}

// maxSegments bounds the segments held back per stream: a disk that fills and
// frees again and again, between runs that the stream's file lost, cuts them into
// many. Past it, the oldest is given up.
const maxSegments = 64

// segment is a stretch of a stream's file that combined.log lacks, or (gap) lines
// that neither holds, whose stream's file lost bytes of them.
type segment struct {
	gap      bool
	from, to int64 // offsets in the stream's file (a gap: where the file is after it)
	time     int64 // the read time of its first line
	lines    int64
	attempt  uint32
	partial  bool // it ends with the stream's final line, without a newline
}

type streamFile struct {
	f *os.File
	// pos is the size of the file: the bytes it took. Bytes it could not take (a full
	// disk) are not counted, so pos and every offset below are where bytes really are
	// in the file, whatever it lost before them.
	pos       int64
	lineStart int64 // offset of the first byte not handed to the combiner yet
}

// run is one message to the combiner: a run of whole lines to append, the end mark,
// or just a request to report when everything before it is written.
type run struct {
	code    uint8
	attempt uint32
	time    int64
	sf      *streamFile
	diskOff int64  // where the run starts in sf
	disk    int64  // bytes of the run to copy from sf before mem (a long line)
	mem     []byte // the rest of the run
	lines   int64
	partial bool
	// broken: some bytes of the run are not in the stream's file (it lost them): the
	// run cannot be copied from there, only written from mem. fileEnd is where the
	// file is after it.
	broken  bool
	fileEnd int64
	buf     *[]byte // mem's buffer, back to the pool once written
	end     bool
	// settle asks the combiner to write what is held back or give it up (see
	// Settle).
	settle bool
	// sync asks the combiner to fsync the files, once everything before is written;
	// the first error goes to *syncErr.
	sync    bool
	syncErr *error
	done    chan struct{} // closed once written
}

// Create creates the log files of one replica in dir, which must exist and hold none.
// Close must be called to end its combiner goroutine.
func (r *Recorder) Create(dir string) (*Writer, error) {
	w := &Writer{rec: r, dir: dir, runs: make(chan run, runQueue)}
	// The directory is opened following no symbolic link, and the files are new
	// (O_EXCL): a link planted in their place is refused, never written through.
	d, err := safefs.OpenDir(dir)
	if err != nil {
		return nil, fmt.Errorf("open log directory: %w", err)
	}
	defer d.Close()
	open := func(name string) (*os.File, error) {
		// Not O_APPEND: combined.log receives copy_file_range output, which refuses an
		// O_APPEND destination. This writer is the only one, so offsets are its own.
		return safefs.CreateExcl(d, name)
	}
	for _, f := range []struct {
		name string
		dst  **os.File
	}{{CombinedFile, &w.comb}, {IndexFile, &w.idx}} {
		if *f.dst, err = open(f.name); err != nil {
			w.closeFiles()
			return nil, fmt.Errorf("create log file: %w", err)
		}
	}
	for code, name := range map[uint8]string{codeStdout: StdoutFile, codeStderr: StderrFile} {
		f, err := open(name)
		if err != nil {
			w.closeFiles()
			return nil, fmt.Errorf("create log file: %w", err)
		}
		w.streams[code] = &streamFile{f: f}
	}
	var hdr [recordSize]byte
	encodeHeader(&hdr)
	if _, err := w.idx.Write(hdr[:]); err != nil {
		w.closeFiles()
		return nil, fmt.Errorf("create log index: %w", err)
	}
	w.idxOff = recordSize
	w.reserveIndex()
	w.combiner.Add(1)
	go w.combine()
	return w, nil
}

func (w *Writer) fail(err error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.err == nil {
		w.err = err
	}
}

func (w *Writer) addLost(code uint8, n int64) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.lost[code] += n
}

func (w *Writer) addMissing(code uint8, n int64) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.missing[code] += n
}

// Missing returns how many lines of stdout and of stderr were read from the replica
// but are not in what the views show (`wick log`, --json, -n, the wall): lines a full
// disk keeps out of combined.log while they are held back (written in their place
// once it has room again), and lines that neither combined.log nor the stream's file
// could take (marked by a gap line in the views where the index could take its
// record). Lines combined.log still lacks at the end and the stream's file holds are
// shown from there (see Settle), and are not missing.
func (w *Writer) Missing() (stdout, stderr int64) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.missing[codeStdout], w.missing[codeStderr]
}

// Lost returns how many bytes of stdout and of stderr were read from the replica but
// could not be written to stdout.log and stderr.log (a full disk, an I/O error), and
// the first write error of the logs, if any.
func (w *Writer) Lost() (stdout, stderr int64, err error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.lost[codeStdout], w.lost[codeStderr], w.err
}

func (w *Writer) firstErr() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.err
}

// Copy reads src until it ends or is closed, writing what it reads as stream s of the
// given attempt. It keeps reading after a write error (a full disk), so that the
// replica never blocks on a pipe nobody reads, and returns the first write error of
// the logs. Closing src from another goroutine makes Copy flush and return. When Copy
// returns, everything it read is in the files.
func (w *Writer) Copy(s sched.Stream, attempt int, src *os.File) error {
	code := streamCode(s)
	sf := w.streams[code]
	rc, err := src.SyscallConn()
	if err != nil {
		return fmt.Errorf("log %s: %w", s, err)
	}
	var (
		bp    *[]byte // the read buffer, held only while data flows or a line is carried
		carry int     // bytes of the unfinished line at the start of the buffer
		spill bool    // the unfinished line is too long to carry: it is on disk only
		// When the first byte of the unfinished line arrived: a line's time is when it
		// began (a progress bar drawn for a minute is stamped when it appeared).
		lineT int64
		// written: the chunk went to the stream's file already (see spliceIn), of
		// which inFile bytes are there.
		written bool
		inFile  int
		// pending: bytes read of the unfinished line; lineLost: some of them are not
		// in the stream's file.
		pending  int64
		lineLost bool
	)
	useSplice := true
	for {
		var n int
		var rerr error
		err := rc.Read(func(fd uintptr) bool {
			if bp == nil {
				bp = w.rec.bufs.Get().(*[]byte)
			}
			written = false
			if useSplice {
				var ok bool
				if n, inFile, rerr, ok = w.spliceIn(int(fd), sf, code, (*bp)[carry:]); ok {
					written = true
				} else {
					useSplice = false // not a pipe: read as below
				}
			}
			for !written {
				n, rerr = unix.Read(int(fd), (*bp)[carry:])
				if rerr != unix.EINTR {
					break
				}
			}
			if rerr == unix.EAGAIN {
				if carry == 0 {
					// Nothing to keep: give the buffer back while the pipe is idle.
					w.rec.bufs.Put(bp)
					bp = nil
				}
				return false
			}
			return true
		})
		if err != nil || rerr != nil || n <= 0 {
			break // closed, failed, or EOF
		}
		t := w.rec.now().UnixNano()
		if pending == 0 {
			lineT = t // this chunk begins a line
		}
		buf := *bp
		chunk := buf[carry : carry+n]
		if !written {
			w.rec.stall()
			var err error
			if inFile, err = sf.f.Write(chunk); err != nil {
				w.fail(fmt.Errorf("write %s: %w", filepath.Join(w.dir, streamFileName(code)), err))
				w.addLost(code, int64(n-inFile))
			}
		}
		// The file took chunk[:inFile] at chunkOff; what it lost is the rest. at is
		// where byte i of the chunk is in the file, or would be had it been taken.
		chunkOff := sf.pos
		sf.pos += int64(inFile)
		at := func(i int) int64 { return chunkOff + int64(min(i, inFile)) }
		nl := bytes.LastIndexByte(chunk, '\n')
		if nl < len(chunk)-1 {
			// An unfinished line grew (a progress bar): it shows as a pending line.
			w.rec.bell.Load().Ring()
		}
		if nl < 0 {
			pending += int64(n)
			lineLost = lineLost || inFile < n
			if spill || carry+n > maxCarry {
				spill, carry = true, 0
			} else {
				carry += n
			}
			continue
		}
		r := run{
			code:    code,
			attempt: uint32(attempt),
			time:    lineT,
			sf:      sf,
			diskOff: sf.lineStart,
			lines:   int64(bytes.Count(chunk[:nl+1], []byte{'\n'})),
			broken:  lineLost || inFile < nl+1,
			buf:     bp,
		}
		if spill {
			r.mem = chunk[:nl+1]
			r.disk = chunkOff - sf.lineStart
		} else {
			r.mem = buf[:carry+nl+1]
		}
		w.tap(code, attempt, r.mem)
		if first := bytes.IndexByte(chunk, '\n'); lineT != t && first < nl {
			// The line begun earlier keeps its own time in a run of its own; the lines
			// that began in this chunk get the chunk's time.
			head := r
			head.buf, head.lines = nil, 1
			head.mem = r.mem[:len(r.mem)-nl+first]
			head.broken = lineLost || inFile < first+1
			head.diskOff = w.brokenOff(&head, at(first+1))
			w.runs <- head
			r.diskOff = at(first + 1)
			r.disk, r.mem, r.lines, r.time = 0, chunk[first+1:nl+1], r.lines-1, t
			r.broken = inFile < nl+1
		}
		r.diskOff = w.brokenOff(&r, at(nl+1))
		// Past the run (and the head run split off before it, if any).
		sf.lineStart = at(nl + 1)
		// The buffer goes with the run; what follows the last newline starts the
		// next buffer.
		tail := chunk[nl+1:]
		pending, lineLost = int64(len(tail)), inFile < n && nl+1 < n
		bp, carry, spill, lineT = nil, 0, false, t
		if len(tail) > maxCarry {
			spill = true
		} else if len(tail) > 0 {
			bp = w.rec.bufs.Get().(*[]byte)
			carry = copy(*bp, tail)
		}
		w.runs <- r
	}
	done := make(chan struct{})
	w.runs <- w.endRun(code, attempt, sf, done, bp, carry, spill, lineT, pending, lineLost)
	<-done
	return w.firstErr()
}

// endRun returns the run that ends Copy's stream code of the given attempt, whose
// done is closed once every run sent before it is written. If the stream ended
// inside a line (pending bytes of it read, begun at lineT, lineLost if some are not
// in the file), the run delivers that line whole, marked partial: from *bp, which
// holds carry bytes of it, or from the file if spill or bp is nil. A buffer the run
// does not take goes back to the pool.
func (w *Writer) endRun(code uint8, attempt int, sf *streamFile, done chan struct{}, bp *[]byte, carry int, spill bool, lineT, pending int64, lineLost bool) run {
	r := run{done: done}
	if pending > 0 {
		// The stream ended inside a line: it is delivered whole, marked partial.
		r = run{code: code, attempt: uint32(attempt), time: lineT, sf: sf, diskOff: sf.lineStart, lines: 1, partial: true, broken: lineLost, done: done}
		if spill || bp == nil {
			r.disk = sf.pos - sf.lineStart
		} else {
			r.mem, r.buf = (*bp)[:carry], bp
			bp = nil
		}
		r.diskOff = w.brokenOff(&r, sf.pos)
		sf.lineStart = sf.pos
		w.tap(code, attempt, r.mem)
	}
	if bp != nil {
		w.rec.bufs.Put(bp)
	}
	return r
}

// brokenOff returns the offset in the stream's file that run r, ending at end there,
// is recorded at: its own, or for a broken run (whose bytes the file lacks, in part)
// end less its length, so that the index still says where the file's next line begins
// (see pendingStream, reconcile); 0 if the file holds fewer bytes than the run.
func (w *Writer) brokenOff(r *run, end int64) int64 {
	if !r.broken {
		return r.diskOff
	}
	r.fileEnd = end
	return max(0, end-r.disk-int64(len(r.mem)))
}

func streamFileName(code uint8) string {
	if code == codeStderr {
		return StderrFile
	}
	return StdoutFile
}

// combine writes the runs handed over by Copy, in order, until Close.
func (w *Writer) combine() {
	defer w.combiner.Done()
	for r := range w.runs {
		switch {
		case r.end:
			if !w.ended {
				w.catchUp(true)
				w.ended = true
				if err := writeEnd(w.idx, max(w.rec.now().UnixNano(), w.lastT)); err != nil {
					w.fail(err)
				}
			}
		case r.sf != nil:
			if err := w.writeRun(&r); err != nil {
				w.fail(err)
			}
		case r.settle:
			w.catchUp(true)
		case r.sync:
			*r.syncErr = w.syncFiles()
		}
		if r.buf != nil {
			w.rec.bufs.Put(r.buf)
		}
		if r.done != nil {
			close(r.done)
		}
		if len(w.runs) == 0 && (r.end || r.settle || r.sf != nil) {
			// Once per batch of runs: a follower reads them all when it wakes.
			w.rec.bell.Load().Ring()
		}
	}
}

// writeRun appends one run to combined.log and its record to the index, after the
// runs held back before it (catchUp). A run that cannot be written (a full disk) is
// held back in turn, from its stream's file, where Copy wrote it first.
func (w *Writer) writeRun(r *run) error {
	if w.ended {
		return errors.New("log already ended")
	}
	var err error
	switch {
	case !w.catchUp(false):
		err = errors.New("runs held back before it") // written after them, in order
	case r.broken && r.disk > 0:
		// The start of its line is neither in memory nor in the stream's file,
		// which lost some of it: the line cannot be written. A gap marks its place.
		if err = w.appendGap(r.code, r.attempt, r.time, r.lines, r.fileEnd); err == nil {
			w.addMissing(r.code, r.lines)
		}
	default:
		err = w.appendRun(r)
	}
	if err != nil {
		w.holdBack(r)
	}
	return err
}

// holdBack adds run r, which combined.log could not take, to its stream's last
// segment, or starts a segment. A broken run cannot be copied back from the
// stream's file: its lines become a gap.
func (w *Writer) holdBack(r *run) {
	w.addMissing(r.code, r.lines)
	segs := w.behind[r.code]
	last := (*segment)(nil)
	if n := len(segs); n > 0 && segs[n-1].attempt == r.attempt {
		last = &segs[n-1]
	}
	switch {
	case r.broken && last != nil && last.gap:
		last.lines += r.lines
		last.to = r.fileEnd
		return
	case r.broken:
		w.holdSegment(r.code, segment{gap: true, from: r.fileEnd, to: r.fileEnd, time: r.time, lines: r.lines, attempt: r.attempt})
		return
	case last != nil && !last.gap && !last.partial && !r.partial && last.to == r.diskOff:
		// A partial run keeps a segment of its own: its record is one line.
		last.to += r.disk + int64(len(r.mem))
		last.lines += r.lines
		last.partial = r.partial
		return
	}
	w.holdSegment(r.code, segment{from: r.diskOff, to: r.diskOff + r.disk + int64(len(r.mem)),
		time: r.time, lines: r.lines, attempt: r.attempt, partial: r.partial})
}

// holdSegment appends a segment to those held back of stream code. Past maxSegments
// of a stream, the first of all is let go first (see letGo).
func (w *Writer) holdSegment(code uint8, seg segment) {
	for len(w.behind[code]) >= maxSegments {
		w.letGo(w.firstHeld())
	}
	w.behind[code] = append(w.behind[code], seg)
}

// firstHeld returns the stream code of the segment held back that was read first, 0
// if none is.
func (w *Writer) firstHeld() uint8 {
	code := uint8(0)
	for c := codeStdout; c <= codeStderr; c++ {
		if len(w.behind[c]) > 0 && (code == 0 || w.behind[c][0].time < w.behind[code][0].time) {
			code = uint8(c)
		}
	}
	return code
}

// letGo gives up writing the first segment held back of stream code to combined.log:
// its record in the index says where its lines are in the stream's file, so that the
// views read them from there (flagStream), or that they are missing there (a gap,
// flagGap). Where the index cannot take the record either, its lines stay missing,
// unmarked.
func (w *Writer) letGo(code uint8) {
	b := w.behind[code][0]
	w.behind[code] = w.behind[code][1:]
	if b.gap {
		_ = w.appendGap(code, b.attempt, b.time, b.lines, b.to)
		return
	}
	rec := record{time: max(b.time, w.lastT), combOff: w.combOff, streamOff: b.from, length: b.to - b.from,
		lines: b.lines, attempt: b.attempt, stream: code, flags: flagStream}
	if b.partial {
		rec.flags |= flagPartial
	}
	if w.appendRecord(&rec) == nil {
		w.addMissing(code, -b.lines)
	}
}

// catchUp writes the segments held back to combined.log, from the stream files, in
// the order their first lines were read, and reports whether none is left. At the
// end (final) a segment that still cannot be written is let go (letGo).
func (w *Writer) catchUp(final bool) bool {
	for {
		code := w.firstHeld()
		if code == 0 {
			w.behind = [3][]segment{} // no backing arrays kept past a full disk
			return true
		}
		b := w.behind[code][0]
		var err error
		if b.gap {
			err = w.appendGap(code, b.attempt, b.time, b.lines, b.to)
		} else {
			r := run{code: code, attempt: b.attempt, time: b.time, sf: w.streams[code], diskOff: b.from,
				disk: b.to - b.from, lines: b.lines, partial: b.partial}
			if err = w.appendRun(&r); err == nil {
				w.addMissing(code, -b.lines)
			}
		}
		switch {
		case err == nil:
			w.behind[code] = w.behind[code][1:]
		case final:
			w.letGo(code)
		default:
			return false
		}
	}
}

// appendGap appends to the index the record of lines lines of a stream that neither
// its file nor combined.log holds (flagGap): the views show a line saying so in their
// place. end is where the stream's file is after them.
func (w *Writer) appendGap(code uint8, attempt uint32, t, lines, end int64) error {
	return w.appendRecord(&record{time: max(t, w.lastT), combOff: w.combOff, streamOff: end,
		lines: lines, attempt: attempt, stream: code, flags: flagGap})
}

// appendRecord appends a record of no bytes in combined.log (flagStream, flagGap) to
// the index, or leaves it as it was.
func (w *Writer) appendRecord(rec *record) error {
	w.lastT = rec.time
	var b [recordSize]byte
	rec.encode(&b)
	w.rec.stall()
	if _, err := w.idx.Write(b[:]); err != nil {
		w.rewind(true)
		return fmt.Errorf("write %s: %w", filepath.Join(w.dir, IndexFile), err)
	}
	w.idxOff += recordSize
	w.reserveIndex()
	return nil
}

// idxReserve is how far ahead of its end the index's blocks are allocated: room for
// the records of a full disk's segments and the end mark.
const idxReserve = 16 << 10

// reserveIndex allocates the index's blocks up to idxReserve past its end, once the
// room left is less than half of it (fallocate, keeping the size: readers see no
// change). Where the file system cannot, nothing is reserved.
func (w *Writer) reserveIndex() {
	if w.idxRoom-w.idxOff >= idxReserve/2 {
		return
	}
	err := unix.Fallocate(int(w.idx.Fd()), unix.FALLOC_FL_KEEP_SIZE, w.idxOff, idxReserve)
	switch err {
	case nil:
		w.idxRoom = w.idxOff + idxReserve
	case unix.EOPNOTSUPP, unix.ENOSYS:
		w.idxRoom = math.MaxInt64 // never: not asked again on every record
	}
}

// appendRun appends one run to combined.log and its record to the index, or leaves
// both as they were (rewind).
func (w *Writer) appendRun(r *run) error {
	total := r.disk + int64(len(r.mem))
	t := max(r.time, w.lastT)
	w.lastT = t
	rec := record{
		time:      t,
		combOff:   w.combOff,
		streamOff: r.diskOff,
		length:    total,
		lines:     r.lines,
		attempt:   r.attempt,
		stream:    r.code,
	}
	if r.partial {
		rec.flags |= flagPartial
	}
	w.rec.stall()
	var err error
	if r.disk > 0 {
		err = w.copyFromStream(r.sf, r.diskOff, r.disk)
	}
	if err == nil {
		_, err = w.comb.Write(r.mem)
	}
	// combined.log holds whole lines only: a final line without a newline (a stream
	// that ended inside a line) gets one there, outside the run, so that the next
	// run (the other stream's, or the next attempt's) starts a line of its own in
	// the raw file too. Its stream file keeps the bytes as they came.
	gap := int64(0)
	if err == nil && r.partial {
		_, err = w.comb.Write([]byte{'\n'})
		gap = 1
	}
	if err != nil {
		w.rewind(false)
		return fmt.Errorf("write %s: %w", filepath.Join(w.dir, CombinedFile), err)
	}
	var b [recordSize]byte
	rec.encode(&b)
	if _, err := w.idx.Write(b[:]); err != nil {
		w.rewind(true)
		return fmt.Errorf("write %s: %w", filepath.Join(w.dir, IndexFile), err)
	}
	w.combOff += total + gap
	w.idxOff += recordSize
	w.reserveIndex()
	return nil
}

// rewind keeps combined.log and the index consistent after a failed write (a full
// disk): both go back to where the last complete record says they end, and the run
// is skipped. The index is cut only when its own write failed (idx): cutting it
// could free the blocks reserved past its end.
func (w *Writer) rewind(idx bool) {
	_ = w.comb.Truncate(w.combOff)
	_, _ = w.comb.Seek(w.combOff, io.SeekStart)
	if idx {
		_ = w.idx.Truncate(w.idxOff)
		_, _ = w.idx.Seek(w.idxOff, io.SeekStart)
	}
}

// copyFromStream appends n bytes of sf at off to combined.log, in the kernel when it
// can.
func (w *Writer) copyFromStream(sf *streamFile, off, n int64) error {
	src := int(sf.f.Fd())
	dst := int(w.comb.Fd())
	for n > 0 {
		c, err := unix.CopyFileRange(src, &off, dst, nil, int(min(n, 1<<30)), 0)
		if err == unix.EINTR {
			continue
		}
		if err != nil || c == 0 {
			// Not supported here (or a short file): copy through memory.
			_, err := io.Copy(w.comb, io.NewSectionReader(sf.f, off, n))
			return err
		}
		n -= int64(c)
	}
	return nil
}

// Settle writes to combined.log the lines held back from it (a full disk) that it can
// take now; for the others, the index says where the views find them (their stream's
// file) or that they are missing there (a gap). From then on Missing is final, and
// what it counts is what the views will lack. Copy must not be running.
func (w *Writer) Settle() {
	done := make(chan struct{})
	w.runs <- run{settle: true, done: done}
	<-done
}

// End writes the end mark, after everything handed over before: followers of these
// logs stop once they have read everything. Nothing can be written after it. Copy
// must not be running.
func (w *Writer) End() error {
	done := make(chan struct{})
	w.runs <- run{end: true, done: done}
	<-done
	return w.firstErr()
}

// Sync makes what was written so far durable: the stream files, combined.log and the
// index are fsynced once everything handed over before is written. A state that says
// the replica ended is saved after it, so that a machine that crashes then (power
// lost) never shows an ended app whose lines were only in the page cache.
func (w *Writer) Sync() error {
	var err error
	done := make(chan struct{})
	w.runs <- run{sync: true, syncErr: &err, done: done}
	<-done
	return err
}

func (w *Writer) syncFiles() error {
	files := []*os.File{w.comb, w.idx}
	for _, sf := range w.streams {
		if sf != nil {
			files = append(files, sf.f)
		}
	}
	// At once: concurrent fsyncs of one file system are served together (a journal's
	// commit, the device's flush), so the four files cost about one wait, not four
	// in a row (an attached run waits for them before its app's end is saved).
	errs := make([]error, len(files))
	var wg sync.WaitGroup
	for i, f := range files[1:] {
		wg.Go(func() { errs[i+1] = f.Sync() })
	}
	errs[0] = files[0].Sync()
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			return fmt.Errorf("sync %s: %w", files[i].Name(), err)
		}
	}
	return nil
}

func writeEnd(f *os.File, t int64) error {
	var b [recordSize]byte
	r := record{time: t, flags: flagEnd}
	r.encode(&b)
	if _, err := f.Write(b[:]); err != nil {
		return fmt.Errorf("write %s: %w", f.Name(), err)
	}
	return nil
}

// MarkEnd appends the end mark to the index of the logs in dir, unless it is already
// there, after reconciling combined.log and the index with the stream files (see
// reconcile). It is for the process that takes over after a writer died; it must not
// run while a Writer still writes in dir.
func MarkEnd(dir string) error {
	f, err := os.OpenFile(filepath.Join(dir, IndexFile), os.O_RDWR|os.O_APPEND|unix.O_NOFOLLOW, 0)
	if err != nil {
		return fmt.Errorf("mark end of logs: %w", err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return fmt.Errorf("mark end of logs: %w", err)
	}
	size := st.Size() - st.Size()%recordSize
	if size < recordSize {
		return fmt.Errorf("mark end of logs: %w: %s", ErrBadIndex, f.Name())
	}
	var last [recordSize]byte
	if size > recordSize {
		if _, err := f.ReadAt(last[:], size-recordSize); err != nil {
			return fmt.Errorf("mark end of logs: %w", err)
		}
		r := decodeRecord(last[:])
		if r.end() {
			return nil
		}
	}
	// A torn record left by the dead writer would misalign the end mark.
	if size != st.Size() {
		if err := f.Truncate(size); err != nil {
			return fmt.Errorf("mark end of logs: %w", err)
		}
	}
	// What the dead writer had read but not indexed yet is in the stream files.
	if err := reconcile(dir, f, size); err != nil {
		return fmt.Errorf("mark end of logs: reconcile %s: %w", dir, err)
	}
	return writeEnd(f, time.Now().UnixNano())
}

// Close ends the combiner, closes the files and returns the first write error of the
// logs. Copy must not be running. Close may be called more than once.
func (w *Writer) Close() error {
	w.closeOnce.Do(func() {
		if w.runs != nil {
			close(w.runs)
			w.combiner.Wait()
		}
		if w.idx != nil && w.idxRoom > 0 && w.idxRoom < math.MaxInt64 {
			// The room reserved past the index's end is not needed any more: a
			// truncate to its size frees it (ext4 frees blocks past the end so).
			if st, err := w.idx.Stat(); err == nil {
				_ = w.idx.Truncate(st.Size())
			}
		}
		w.closeFiles()
	})
	return w.firstErr()
}

func (w *Writer) closeFiles() {
	for _, f := range []*os.File{w.comb, w.idx} {
		if f != nil {
			f.Close()
		}
	}
	for _, sf := range w.streams {
		if sf != nil {
			sf.f.Close()
		}
	}
}
