package sched

import (
	"context"
	"errors"
	"fmt"
	"io"
	"regexp"
	"time"
)

// Stream names a log stream.
type Stream string

// The streams. A line is Stdout or Stderr; Combined selects both, and marks a line
// whose stream is not known (read from a combined log whose index is damaged).
const (
	Stdout   Stream = "stdout"
	Stderr   Stream = "stderr"
	Combined Stream = "combined"
)

// ParseStream reads "stdout", "stderr" or "combined" ("" means combined).
func ParseStream(s string) (Stream, error) {
	switch Stream(s) {
	case Stdout, Stderr, Combined:
		return Stream(s), nil
	case "":
		return Combined, nil
	}
	return "", fmt.Errorf("unknown stream %q (want stdout, stderr or combined)", s)
}

// Line is one log line of one replica.
type Line struct {
	// Time is when wick (or the Engine) read the line's first byte. Times in one
	// replica's log never go backwards: a line begun before a line of the other stream
	// ended takes that line's time.
	Time    time.Time `json:"time"`
	Stream  Stream    `json:"stream"`
	Role    string    `json:"role"`
	Replica int       `json:"replica"`
	// Attempt counts the replica's restarts before the run that wrote the line.
	Attempt int `json:"attempt,omitempty"`
	// Text is the line without its newline. A final line that had no newline is
	// delivered whole, with Partial set.
	Text    string `json:"text"`
	Partial bool   `json:"partial,omitempty"`
	// Pending marks a line still being written (a progress bar redrawn with \r): the
	// replica has not ended it yet. Only iterators asked for LogOptions.Pending yield
	// such lines. Text is its last \r segment so far and Time is when its first byte
	// arrived. A pending line stands until the next line of the same stream, pending
	// or not, replaces it; the committed line that ends it comes with Pending false.
	Pending bool `json:"pending,omitempty"`
	// Cut marks a line of which only the start is given: a pending line longer than
	// an iterator holds of an unfinished line (see logs.MaxPending), or a committed
	// line longer than an iterator yields whole (see logs.MaxLine).
	Cut bool `json:"cut,omitempty"`
	// Gap marks a line that stands in for lines the replica wrote and the log files
	// could not keep (a full disk): Text says how many, of which stream.
	Gap bool `json:"gap,omitempty"`
	// Size is the full length in bytes of a cut committed line (0 otherwise).
	Size int64 `json:"size,omitempty"`
	// Full, when not nil, reads the whole of a cut committed line, byte for byte
	// (without its newline), for views that print lines as stored. It stays valid
	// until its iterator is closed.
	Full *io.SectionReader `json:"-"`
}

// LogOptions select and shape the lines a LogIterator yields.
type LogOptions struct {
	// Regex keeps only lines it matches anywhere (nil keeps all).
	Regex *regexp.Regexp
	// Since and Until bound the lines' times; zero means unbounded. Since is inclusive,
	// Until exclusive.
	Since, Until time.Time
	// Follow keeps reading until the replica is terminal and every line is read.
	Follow bool
	// Streams selects stdout, stderr or both ("" or Combined).
	Streams Stream
	// Tail, when positive, starts with only the last Tail lines available.
	Tail int
	// Pending, when following, also yields each stream's unfinished line as it
	// changes (see Line.Pending). Readers that print committed lines only leave it off.
	Pending bool
}

// Match reports whether a line passes the options' stream, time and regex filters.
func (o LogOptions) Match(l Line) bool {
	if o.Streams != "" && o.Streams != Combined && l.Stream != o.Streams {
		return false
	}
	if !o.Since.IsZero() && l.Time.Before(o.Since) {
		return false
	}
	if !o.Until.IsZero() && !l.Time.Before(o.Until) {
		return false
	}
	return o.Regex == nil || o.Regex.MatchString(l.Text)
}

// LogIterator yields log lines in order.
type LogIterator interface {
	// Next blocks until a line is available, the lines end (io.EOF) or ctx is done.
	Next(ctx context.Context) (Line, error)
	// Close releases the iterator's files and goroutines.
	Close() error
}

// Readier is implemented by iterators that can tell, without blocking, whether Next
// would return at once: a line is ready, the lines have ended, or the iterator failed.
// Like Next, Ready is called from one goroutine at a time. Readers use it to take many
// lines in one go (the wall's batches) and to keep several replicas in time order
// (engine/logs.Merge). Iterators of every scheduler should implement it.
type Readier interface {
	Ready() bool
}

// ErrNoRawLog is returned by RawLog when a replica's log cannot be read as stored:
// the scheduler keeps no such file, or this one's lines must be read one by one.
var ErrNoRawLog = errors.New("the scheduler keeps no raw log files")

// RawLogReader is implemented by schedulers whose logs are files: it opens one stream
// of a replica as stored, for reading a whole log fast when nothing is filtered. What
// it gives is what printing the replica's lines one by one gives, each line ended by
// a newline; when it cannot give that, it returns ErrNoRawLog.
type RawLogReader interface {
	RawLog(ctx context.Context, appID, role string, replica int, stream Stream) (io.ReadCloser, error)
}

// RunReader is implemented by log iterators that can hand over their lines a run at
// a time: consecutive lines that share their time, stream and attempt, as one text.
// Printing a whole log of several replicas in time order merges runs, not lines: the
// order is the same (lines of one time keep their order), at the cost of a copy.
type RunReader interface {
	// NextRun returns the next run: its lines, each ended by a newline except a
	// partial last one, in Text, and their time, stream, role, replica and attempt.
	// It returns ok false, and no error, when the next line is not part of a run it
	// holds (a line too long to hold): Next returns that line. At the end it returns
	// io.EOF. It must not be mixed with Next otherwise, nor used with a regex, Tail or
	// Pending. The run's Text is valid only until the next call: print it at once.
	NextRun(ctx context.Context) (run Line, ok bool, err error)
}

// ReplicaRef names one replica of an app: its role and its id.
type ReplicaRef struct {
	Role    string
	Replica int
}

// MultiLogger is implemented by schedulers that open the logs of many replicas of an
// app at once more cheaply than one by one (the local scheduler reads the app's state
// once instead of once per replica). The iterators are in the order of refs; on error
// none is left open.
type MultiLogger interface {
	LogsOf(ctx context.Context, appID string, refs []ReplicaRef, opts LogOptions) ([]LogIterator, error)
}
