package logs

import (
	"bytes"
	"errors"
	"fmt"
	"io"
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
	lastT   int64 // run times never go backwards, whatever the wall clock does
	ended   bool
	// behind, per stream code: the runs combined.log could not take (a full disk),
	// one contiguous segment of the stream's file, written there before the next run
	// once there is room again (see catchUp).
	behind [3]segment

	// taps, per stream code: who sees its lines as they are read (see Tap).
	taps [3]atomic.Pointer[Tap]

	mu   sync.Mutex
	err  error    // the first write error, reported by Copy and Close
	lost [3]int64 // per stream code: bytes read but not written to its file
	// missing, per stream code: lines read but not in combined.log (and so not in
	// what the views read), waiting in behind or given up at the end.
	missing [3]int64
}

// segment is a stretch of a stream's file that combined.log lacks.
type segment struct {
	active   bool
	from, to int64 // offsets in the stream's file
	time     int64 // the read time of its first line
	lines    int64
	attempt  uint32
	partial  bool // it ends with the stream's final line, without a newline
}

type streamFile struct {
	f         *os.File
	pos       int64 // bytes written
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
	buf     *[]byte // mem's buffer, back to the pool once written
	end     bool
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
// but are not in combined.log, which the views read (`wick log`, --json, -n, the
// wall): runs a full disk kept out of it. Lines held back are written in their place
// once combined.log has room again; those still missing at the end stay missing.
// The stream files may hold them (see Lost for what they lack).
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
		// written: the chunk is in the stream's file already (see spliceIn).
		written bool
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
				if n, rerr, ok = w.spliceIn(int(fd), sf, code, (*bp)[carry:]); ok {
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
		if sf.lineStart == sf.pos {
			lineT = t // this chunk begins a line
		}
		buf := *bp
		chunk := buf[carry : carry+n]
		if !written {
			w.rec.stall()
			if wn, err := sf.f.Write(chunk); err != nil {
				w.fail(fmt.Errorf("write %s: %w", filepath.Join(w.dir, streamFileName(code)), err))
				w.addLost(code, int64(n-wn))
			}
		}
		sf.pos += int64(n)
		nl := bytes.LastIndexByte(chunk, '\n')
		if nl < len(chunk)-1 {
			// An unfinished line grew (a progress bar): it shows as a pending line.
			w.rec.bell.Load().Ring()
		}
		if nl < 0 {
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
			buf:     bp,
		}
		if spill {
			r.mem = chunk[:nl+1]
			r.disk = sf.pos - int64(n) - sf.lineStart
		} else {
			r.mem = buf[:carry+nl+1]
		}
		w.tap(code, attempt, r.mem)
		if first := int64(bytes.IndexByte(chunk, '\n')); lineT != t && first < int64(nl) {
			// The line begun earlier keeps its own time in a run of its own; the lines
			// that began in this chunk get the chunk's time.
			head := r
			head.buf, head.lines = nil, 1
			head.mem = r.mem[:int64(len(r.mem))-int64(nl)+first]
			w.runs <- head
			r.diskOff += head.disk + int64(len(head.mem))
			r.disk, r.mem, r.lines, r.time = 0, chunk[first+1:nl+1], r.lines-1, t
		}
		// Past the run (and the head run split off before it, if any).
		sf.lineStart = r.diskOff + r.disk + int64(len(r.mem))
		// The buffer goes with the run; what follows the last newline starts the
		// next buffer.
		tail := chunk[nl+1:]
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
	r := run{done: done}
	if sf.lineStart < sf.pos {
		// The stream ended inside a line: it is delivered whole, marked partial.
		r = run{code: code, attempt: uint32(attempt), time: lineT, sf: sf, diskOff: sf.lineStart, lines: 1, partial: true, done: done}
		if spill || bp == nil {
			r.disk = sf.pos - sf.lineStart
		} else {
			r.mem, r.buf = (*bp)[:carry], bp
			bp = nil
		}
		sf.lineStart = sf.pos
		w.tap(code, attempt, r.mem)
	}
	if bp != nil {
		w.rec.bufs.Put(bp)
	}
	w.runs <- r
	<-done
	return w.firstErr()
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
		case r.sync:
			*r.syncErr = w.syncFiles()
		}
		if r.buf != nil {
			w.rec.bufs.Put(r.buf)
		}
		if r.done != nil {
			close(r.done)
		}
		if len(w.runs) == 0 && (r.end || r.sf != nil) {
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
	if !w.catchUp(false) {
		err = errors.New("runs held back before it") // written after them, in order
	} else {
		err = w.appendRun(r)
	}
	if err != nil {
		w.holdBack(r)
	}
	return err
}

// holdBack adds run r, which combined.log could not take, to its stream's segment.
func (w *Writer) holdBack(r *run) {
	total := r.disk + int64(len(r.mem))
	w.addMissing(r.code, r.lines)
	b := &w.behind[r.code]
	if b.active && (b.to != r.diskOff || b.attempt != r.attempt) {
		// Not contiguous (another attempt): the segment held back is given up.
		*b = segment{}
	}
	if !b.active {
		*b = segment{active: true, from: r.diskOff, to: r.diskOff, time: r.time, attempt: r.attempt}
	}
	b.to += total
	b.lines += r.lines
	b.partial = r.partial
}

// catchUp writes the segments held back to combined.log, from the stream files, in
// the order their first lines were read, and reports whether none is left. A stream
// whose file lost bytes too (Lost) cannot give them back: its segment is given up.
// At the end (final) what is still held back is given up: those lines stay missing.
func (w *Writer) catchUp(final bool) bool {
	for {
		code := uint8(0)
		for c := codeStdout; c <= codeStderr; c++ {
			if b := w.behind[c]; b.active && (code == 0 || b.time < w.behind[code].time) {
				code = uint8(c)
			}
		}
		if code == 0 {
			return true
		}
		b := &w.behind[code]
		w.mu.Lock()
		lost := w.lost[code]
		w.mu.Unlock()
		if lost > 0 {
			*b = segment{}
			continue
		}
		r := run{code: code, attempt: b.attempt, time: b.time, sf: w.streams[code], diskOff: b.from,
			disk: b.to - b.from, lines: b.lines, partial: b.partial}
		if err := w.appendRun(&r); err != nil {
			if final {
				*b = segment{}
				continue
			}
			return false
		}
		w.addMissing(code, -b.lines)
		*b = segment{}
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
		w.rewind()
		return fmt.Errorf("write %s: %w", filepath.Join(w.dir, CombinedFile), err)
	}
	var b [recordSize]byte
	rec.encode(&b)
	if _, err := w.idx.Write(b[:]); err != nil {
		w.rewind()
		return fmt.Errorf("write %s: %w", filepath.Join(w.dir, IndexFile), err)
	}
	w.combOff += total + gap
	w.idxOff += recordSize
	return nil
}

// rewind keeps combined.log and the index consistent after a failed write (a full
// disk): both go back to where the last complete record says they end, and the run
// is skipped.
func (w *Writer) rewind() {
	_ = w.comb.Truncate(w.combOff)
	_, _ = w.comb.Seek(w.combOff, io.SeekStart)
	_ = w.idx.Truncate(w.idxOff)
	_, _ = w.idx.Seek(w.idxOff, io.SeekStart)
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
