package slurm

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/wick-dev/wick/engine/sched"
)

// RawLog opens one stream of a replica's files for `wick log` of the whole log: the
// file as the line-by-line reading prints it (a \r before each newline dropped, a last
// line without its newline given one), read a block at a time. The combined stream is
// the one file that holds anything; when both do, their lines must be put in time order
// one by one, and RawLog returns sched.ErrNoRawLog, as it does for a job wick has no
// record of.
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
	var out, errf string
	for _, r := range rec.Replicas {
		if r.Role == role && r.Replica == k {
			out, errf = r.Stdout, r.Stderr
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
			return nil, sched.ErrNoRawLog
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
	return &lineFile{f: f, buf: make([]byte, readChunk)}, nil
}

// fileSize is the size of the file at path; 0 when it is missing.
func fileSize(path string) int64 {
	fi, err := os.Stat(path)
	if err != nil {
		return 0
	}
	return fi.Size()
}

// lineFile reads a replica's file as fileIter delivers its lines: the one \r before
// a newline is dropped (fileIter.emit), and a last line without a newline gets one.
type lineFile struct {
	f      *os.File
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
		n, err := l.f.Read(l.buf)
		chunk := l.buf[:n]
		if err == io.EOF {
			l.eof = true
			// A last line without a newline ends, without the \r before its end.
			if l.heldCR || l.some && l.last != '\n' {
				l.pend = []byte{'\n'}
			}
			l.heldCR = false
			break
		}
		if err != nil {
			return 0, err
		}
		l.pend = l.strip(chunk)
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

func (l *lineFile) Close() error { return l.f.Close() }
