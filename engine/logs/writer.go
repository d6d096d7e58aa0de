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
	// at one buffer whatever the line length.
	maxCarry = 16 << 10
	bufSize  = readSize + maxCarry
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

// Writer writes one replica's log files (see the package documentation). Copy may be
// running for stdout and stderr at once; the combined file and the index are written
// under a lock, so runs keep their arrival order.
type Writer struct {
	rec *Recorder
	dir string

	// Per stream, used only by the one Copy of that stream at a time.
	streams [3]*streamFile // indexed by codeStdout, codeStderr

	mu      sync.Mutex
	comb    *os.File
	idx     *os.File
	combOff int64
	lastT   int64 // run times never go backwards, whatever the wall clock does
	ended   bool
	err     error // the first write error, reported by Close
}

type streamFile struct {
	f         *os.File
	pos       int64 // bytes written
	lineStart int64 // offset of the first byte not yet in combined.log
}

// Create creates (or truncates) the log files of one replica in dir, which must exist.
func (r *Recorder) Create(dir string) (*Writer, error) {
	w := &Writer{rec: r, dir: dir}
	open := func(name string) (*os.File, error) {
		// Not O_APPEND: combined.log receives copy_file_range output, which refuses an
		// O_APPEND destination. This writer is the only one, so offsets are its own.
		return os.OpenFile(filepath.Join(dir, name), os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o644)
	}
	var err error
	files := []struct {
		name string
		dst  **os.File
	}{{CombinedFile, &w.comb}, {IndexFile, &w.idx}}
	for _, f := range files {
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
	return w, nil
}

// Dir returns the replica's log directory.
func (w *Writer) Dir() string { return w.dir }

// Copy reads src until it ends or is closed, writing what it reads as stream s of the
// given attempt. It keeps reading after a write error (a full disk), so that the
// replica never blocks on a pipe nobody reads, and returns the first error. Closing
// src from another goroutine makes Copy flush and return.
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
		werr  error
	)
	defer func() {
		if bp != nil {
			w.rec.bufs.Put(bp)
		}
	}()
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
		buf := *bp
		chunk := buf[carry : carry+n]
		if _, err := sf.f.Write(chunk); err != nil && werr == nil {
			werr = fmt.Errorf("write %s: %w", filepath.Join(w.dir, streamFileName(code)), err)
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
		lines := int64(bytes.Count(chunk[:nl+1], []byte{'\n'}))
		var mem []byte
		if spill {
			mem = chunk[:nl+1]
		} else {
			mem = buf[:carry+nl+1]
		}
		end := sf.pos - int64(n-(nl+1))
		if err := w.emit(code, attempt, sf, end, mem, lines, false); err != nil && werr == nil {
			werr = err
		}
		carry = copy(buf, chunk[nl+1:])
		spill = false
		if carry > maxCarry {
			spill, carry = true, 0
		}
	}
	if sf.lineStart < sf.pos {
		// The stream ended inside a line: it is delivered whole, marked partial.
		var mem []byte
		if !spill && bp != nil {
			mem = (*bp)[:carry]
		}
		if err := w.emit(code, attempt, sf, sf.pos, mem, 1, true); err != nil && werr == nil {
			werr = err
		}
	}
	w.mu.Lock()
	if werr != nil && w.err == nil {
		w.err = werr
	}
	w.mu.Unlock()
	return werr
}

func streamFileName(code uint8) string {
	if code == codeStderr {
		return StderrFile
	}
	return StdoutFile
}

// emit appends one run to combined.log and its record to the index. The run is the
// bytes of sf from sf.lineStart to end: the first ones copied from the stream file when
// the line was too long to carry, the last len(mem) from mem.
func (w *Writer) emit(code uint8, attempt int, sf *streamFile, end int64, mem []byte, lines int64, partial bool) error {
	total := end - sf.lineStart
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.ended {
		return errors.New("log already ended")
	}
	t := w.rec.now().UnixNano()
	if t < w.lastT {
		t = w.lastT
	}
	w.lastT = t
	rec := record{
		time:      t,
		combOff:   w.combOff,
		streamOff: sf.lineStart,
		length:    total,
		lines:     lines,
		attempt:   uint32(attempt),
		stream:    code,
	}
	if partial {
		rec.flags |= flagPartial
	}
	var err error
	if disk := total - int64(len(mem)); disk > 0 {
		err = w.copyFromStream(sf, sf.lineStart, disk)
	}
	if err == nil {
		_, err = w.comb.Write(mem)
	}
	if err != nil {
		// Keep combined.log and the index consistent: put combined.log back where the
		// index says it ends, and skip the record.
		_ = w.comb.Truncate(w.combOff)
		_, _ = w.comb.Seek(w.combOff, io.SeekStart)
		sf.lineStart += total
		return fmt.Errorf("write %s: %w", filepath.Join(w.dir, CombinedFile), err)
	}
	var b [recordSize]byte
	rec.encode(&b)
	if _, err := w.idx.Write(b[:]); err != nil {
		return fmt.Errorf("write %s: %w", filepath.Join(w.dir, IndexFile), err)
	}
	w.combOff += total
	sf.lineStart += total
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

// End writes the end mark: followers of these logs stop once they have read
// everything. Nothing can be written after it.
func (w *Writer) End() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.ended {
		return nil
	}
	w.ended = true
	return writeEnd(w.idx, max(w.rec.now().UnixNano(), w.lastT))
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

// Close closes the files and returns the first write error of the logs.
func (w *Writer) Close() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.closeFiles()
	return w.err
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
