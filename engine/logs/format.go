// Package logs reads, writes, follows, filters and merges the log streams of replicas.
//
// A replica's logs live in one directory, in TorchX's layout plus one index file:
//
//	stdout.log    what the replica wrote to stdout, byte for byte
//	stderr.log    what the replica wrote to stderr, byte for byte
//	combined.log  both, in the order wick read them, whole lines only
//	lines.idx     the index: which bytes of combined.log came from which stream, when
//
// The writer (a supervisor) reads a replica's stdout and stderr from pipes. Every chunk
// it reads goes to stdout.log or stderr.log at once. The complete lines of the chunk
// (and the start of the line that the chunk completes) are then appended to
// combined.log as one run, and a fixed-size record describing the run is appended to
// the index: its read time, stream, attempt, offsets, length and line count. A line is
// never split across runs and never merged with another: a line is appended to
// combined.log only when its newline arrives, or, without a newline, when its stream
// ends. Runs from the two streams therefore interleave in combined.log at line
// boundaries, in true arrival order, and the index gives every line its stream and
// the time it was read.
//
// Readers never trust a file beyond the last complete index record: a run is visible
// once its record is written, and its bytes were written to combined.log before it.
// A final record marks the end of the replica's logs.
package logs

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/wick-dev/wick/engine/sched"
)

// File names inside a replica's log directory.
const (
	StdoutFile   = "stdout.log"
	StderrFile   = "stderr.log"
	CombinedFile = "combined.log"
	IndexFile    = "lines.idx"
)

// The index is a header followed by records, all recordSize bytes. 64 divides the page
// size, so a record never straddles a page and a reader that reads up to the file's
// size never sees half of one.
const recordSize = 64

var indexMagic = [8]byte{'W', 'I', 'C', 'K', 'I', 'D', 'X', 0}

const indexVersion = 1

// Stream codes in records.
const (
	codeEnd    = 0
	codeStdout = 1
	codeStderr = 2
)

// Record flags.
const (
	flagPartial = 1 << 0 // the run is a final line without a newline (combined.log has one after the run, outside it)
	flagEnd     = 1 << 1 // no run follows: the replica will write no more
	// flagStream: the run's bytes are in stdout.log or stderr.log only (at streamOff),
	// not in combined.log, which could not take them (a full disk); combOff is where
	// combined.log was then, and the run takes no room there.
	flagStream = 1 << 2
	// flagGap: lines lines of the stream were read but neither its file nor
	// combined.log holds them (a full disk); streamOff is where its file is after
	// them, and the record takes no room in either. The views show a line saying so.
	flagGap = 1 << 3
)

// ErrBadIndex is wrapped when an index file is not one wick wrote.
var ErrBadIndex = errors.New("not a wick log index")

// record describes one run of whole lines in combined.log, or the end of the logs.
type record struct {
	time      int64 // unix nanoseconds when the first byte of the run's first line was read
	combOff   int64 // offset of the run in combined.log
	streamOff int64 // offset of the same bytes in stdout.log or stderr.log
	length    int64 // bytes in the run
	lines     int64 // lines in the run (the last may be partial)
	attempt   uint32
	stream    uint8
	flags     uint8
}

func (r *record) end() bool     { return r.flags&flagEnd != 0 }
func (r *record) partial() bool { return r.flags&flagPartial != 0 }

// inComb reports whether the run's bytes are in combined.log.
func (r *record) inComb() bool { return r.flags&(flagStream|flagGap|flagEnd) == 0 }

// combLen returns the bytes the record takes in combined.log, with the newline after
// a partial run.
func (r *record) combLen() int64 {
	if !r.inComb() {
		return 0
	}
	if r.partial() {
		return r.length + 1
	}
	return r.length
}

func (r *record) streamName() sched.Stream {
	if r.stream == codeStderr {
		return sched.Stderr
	}
	return sched.Stdout
}

func streamCode(s sched.Stream) uint8 {
	if s == sched.Stderr {
		return codeStderr
	}
	return codeStdout
}

func (r *record) encode(b *[recordSize]byte) {
	*b = [recordSize]byte{}
	le := binary.LittleEndian
	le.PutUint64(b[0:], uint64(r.time))
	le.PutUint64(b[8:], uint64(r.combOff))
	le.PutUint64(b[16:], uint64(r.streamOff))
	le.PutUint64(b[24:], uint64(r.length))
	le.PutUint64(b[32:], uint64(r.lines))
	le.PutUint32(b[40:], r.attempt)
	b[44] = r.stream
	b[45] = r.flags
}

func decodeRecord(b []byte) record {
	le := binary.LittleEndian
	return record{
		time:      int64(le.Uint64(b[0:])),
		combOff:   int64(le.Uint64(b[8:])),
		streamOff: int64(le.Uint64(b[16:])),
		length:    int64(le.Uint64(b[24:])),
		lines:     int64(le.Uint64(b[32:])),
		attempt:   le.Uint32(b[40:]),
		stream:    b[44],
		flags:     b[45],
	}
}

func encodeHeader(b *[recordSize]byte) {
	*b = [recordSize]byte{}
	copy(b[:8], indexMagic[:])
	binary.LittleEndian.PutUint32(b[8:], indexVersion)
	binary.LittleEndian.PutUint32(b[12:], recordSize)
}

func checkHeader(b []byte) error {
	if len(b) < recordSize || [8]byte(b[:8]) != indexMagic {
		return ErrBadIndex
	}
	if v := binary.LittleEndian.Uint32(b[8:]); v != indexVersion {
		return fmt.Errorf("%w: version %d (this wick reads %d)", ErrBadIndex, v, indexVersion)
	}
	if n := binary.LittleEndian.Uint32(b[12:]); n != recordSize {
		return fmt.Errorf("%w: record size %d", ErrBadIndex, n)
	}
	return nil
}
