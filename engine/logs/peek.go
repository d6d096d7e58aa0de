package logs

import (
	"fmt"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// A replica's bytes leave its pipe only by moving into its stream's file: Copy
// splices them from the pipe to the file (splice(2): what it moves is in the file,
// what it has not moved is still in the pipe, whenever the writer is killed), then
// reads them back from the page cache to find the lines. A writer killed at any
// moment (kill -9 of the supervisor) leaves every byte the replica wrote either in the
// file or in the pipe, where whoever else holds the pipe's read end (the reaper)
// drains it into the file: nothing is lost, nothing recorded twice.

// spliceIn moves up to len(buf) bytes of the pipe fd to the end of sf's file and reads
// them into buf. It returns what a read(2) of fd would (n, and EAGAIN or nil), how
// many of those n bytes the file took (all of them, or none), and false when fd is not
// something splice takes (Copy then reads as any reader does). A failed write to the
// file is recorded as Copy records one, and what could not be moved is read out of the
// pipe into buf, so that the replica never blocks: those bytes are not in the file.
func (w *Writer) spliceIn(fd int, sf *streamFile, code uint8, buf []byte) (n, inFile int, rerr error, ok bool) {
	var m int64
	var err error
	for {
		m, err = unix.Splice(fd, nil, int(sf.f.Fd()), nil, len(buf), unix.SPLICE_F_NONBLOCK|unix.SPLICE_F_MOVE)
		if err != unix.EINTR {
			break
		}
	}
	switch {
	case err == unix.EAGAIN:
		return 0, 0, err, true
	case err == unix.EINVAL || err == unix.ENOSYS:
		return 0, 0, nil, false
	case err != nil:
		// The file refused (a full disk): the bytes are still in the pipe.
		w.fail(fmt.Errorf("write %s: %w", filepath.Join(w.dir, streamFileName(code)), err))
		for {
			n, rerr := unix.Read(fd, buf)
			if rerr == unix.EINTR {
				continue
			}
			if n > 0 {
				w.addLost(code, int64(n))
			}
			return n, 0, rerr, true
		}
	case m == 0:
		return 0, 0, nil, true // end of file: no writer left and nothing in the pipe
	}
	w.rec.stall()
	got := 0
	for got < int(m) {
		n, err := unix.Pread(int(sf.f.Fd()), buf[got:m], sf.pos+int64(got))
		if err == unix.EINTR {
			continue
		}
		if err != nil || n <= 0 {
			// The bytes are on disk but cannot be read back: they count as lines of
			// zero bytes read; stdout.log holds them. (Not seen in practice.)
			clear(buf[got:m])
			break
		}
		got += n
	}
	return int(m), int(m), nil, true
}
