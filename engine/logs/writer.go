package logs

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
	"time"

	"golang.org/x/sys/unix"

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
	lastT   int64 // run times never go backwards, whatever the wall clock does
	ended   bool

	mu  sync.Mutex
	err error // the first write error, reported by Copy and Close
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
	done    chan struct{} // closed once written
}

// Create creates (or truncates) the log files of one replica in dir, which must exist.
// Close must be called to end its combiner goroutine.
func (r *Recorder) Create(dir string) (*Writer, error) {
	w := &Writer{rec: r, dir: dir, runs: make(chan run, runQueue)}
	open := func(name string) (*os.File, error) {
		// Not O_APPEND: combined.log receives copy_file_range output, which refuses an
		// O_APPEND destination. This writer is the only one, so offsets are its own.
		return os.OpenFile(filepath.Join(dir, name), os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o644)
	}
	var err error
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
	)
	for {
		var n int
		var rerr error
		err := rc.Read(func(fd uintptr) bool {
			if bp == nil {
				bp = w.rec.bufs.Get().(*[]byte)
			}
			for {
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
		buf := *bp
		chunk := buf[carry : carry+n]
		if _, err := sf.f.Write(chunk); err != nil {
			w.fail(fmt.Errorf("write %s: %w", filepath.Join(w.dir, streamFileName(code)), err))
		}
		sf.pos += int64(n)
		nl := bytes.LastIndexByte(chunk, '\n')
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
			time:    t,
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
		sf.lineStart += r.disk + int64(len(r.mem))
		// The buffer goes with the run; what follows the last newline starts the
		// next buffer.
		tail := chunk[nl+1:]
		bp, carry, spill = nil, 0, false
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
		r = run{code: code, attempt: uint32(attempt), time: w.rec.now().UnixNano(), sf: sf, diskOff: sf.lineStart, lines: 1, partial: true, done: done}
		if spill || bp == nil {
			r.disk = sf.pos - sf.lineStart
		} else {
			r.mem, r.buf = (*bp)[:carry], bp
			bp = nil
		}
		sf.lineStart = sf.pos
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
				w.ended = true
				if err := writeEnd(w.idx, max(w.rec.now().UnixNano(), w.lastT)); err != nil {
					w.fail(err)
				}
			}
		case r.sf != nil:
			if err := w.writeRun(&r); err != nil {
				w.fail(err)
			}
		}
		if r.buf != nil {
			w.rec.bufs.Put(r.buf)
		}
		if r.done != nil {
			close(r.done)
		}
	}
}

// writeRun appends one run to combined.log and its record to the index.
func (w *Writer) writeRun(r *run) error {
	if w.ended {
		return errors.New("log already ended")
	}
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
	var err error
	if r.disk > 0 {
		err = w.copyFromStream(r.sf, r.diskOff, r.disk)
	}
	if err == nil {
		_, err = w.comb.Write(r.mem)
	}
	if err != nil {
		// Keep combined.log and the index consistent: put combined.log back where the
		// index says it ends, and skip the record.
		_ = w.comb.Truncate(w.combOff)
		_, _ = w.comb.Seek(w.combOff, io.SeekStart)
		return fmt.Errorf("write %s: %w", filepath.Join(w.dir, CombinedFile), err)
	}
	var b [recordSize]byte
	rec.encode(&b)
	if _, err := w.idx.Write(b[:]); err != nil {
		return fmt.Errorf("write %s: %w", filepath.Join(w.dir, IndexFile), err)
	}
	w.combOff += total
	return nil
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
// there. It is for the process that takes over after a writer died; it must not run
// while a Writer still writes in dir.
func MarkEnd(dir string) error {
	f, err := os.OpenFile(filepath.Join(dir, IndexFile), os.O_RDWR|os.O_APPEND, 0)
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
