package ranks

import (
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// What a torchrun node writes when a worker fails, read without torchelastic's error
// files (a script without @record writes none):
//
//   - The worker's Python traceback, on the node's stderr: unprefixed unless torchrun
//     tees the worker's stderr (--tee 2 or 3), then each line "[<local rank>]:...".
//   - torchrun's failure summary, the message of the ChildFailedError the agent dies
//     of (torch/distributed/elastic/multiprocessing/errors/__init__.py, torch 1.13,
//     _FAILURE_FORMAT_TEMPLATE), one block per failed worker:
//
//     Root Cause (first observed failure):
//     [0]:
//       time      : 2026-11-25_20:58:48
//       host      : localhost
//       rank      : 2 (local_rank: 0)
//       exitcode  : 1 (pid: 23145)
//       error_file: <N/A>
//       traceback : To enable traceback see: https://pytorch.org/docs/stable/elastic/errors.html
//
//     Without an error file a failure's time is when the agent's monitor (every 5 s)
//     saw it: the rank that raised and the ranks that failed in gloo after it share
//     one time, and torchrun's "Root Cause" is then the lowest local rank of them,
//     not the one that raised. The summary is good for which ranks failed, with which
//     exit code or signal (exitcode -9: SIGKILL), and pid; the tracebacks and their
//     times say which failed first.
//   - c10d's store server, when it cannot bind the rendezvous port:
//     "[c10d] The server socket has failed to bind to [::]:29500 (errno: 98 - Address
//     already in use)." One node of a local job always says it (the nodes share the
//     host; one of them binds first, the others connect); every node saying it means
//     another program holds the port.

// Failure is a failed worker as torchrun's summary reports it.
type Failure struct {
	Rank, Local int
	// ExitCode is the worker's exit code; negative: the signal that killed it.
	ExitCode int
	PID      int
	// Time is when torchrun saw the failure, to the second, as it prints it.
	Time string
	// Root is set for the failure under "Root Cause (first observed failure)".
	Root bool
	// Traceback is the first line of the block's traceback field: the error file's
	// message, a signal's, or torchrun's pointer to @record.
	Traceback string
	// ErrorFile is the worker's error file (@record wrote it), "" when it had none.
	ErrorFile string
}

// Signal is the name of the signal that killed the worker ("SIGKILL"), or "".
func (f Failure) Signal() string {
	if f.ExitCode >= 0 || f.ExitCode < -64 {
		return ""
	}
	if name := unix.SignalName(unix.Signal(-f.ExitCode)); name != "" {
		return name
	}
	return "signal " + strconv.Itoa(-f.ExitCode)
}

// Traceback is a Python traceback read from a node's lines.
type Traceback struct {
	// Local is the local rank whose prefixed lines held it, -1 when unprefixed.
	Local int
	// Start and End are the indices (as fed) of its first line and of its exception
	// line; Time is when the exception line was written.
	Start, End int
	// Began and Time are when its first line and its exception line were written.
	Began, Time time.Time
	// Exception is the line that ends it: "RuntimeError: ...".
	Exception string
	// Lines are its lines, as fed (prefixes taken off), at most maxTracebackLines.
	Lines []string
	// Agent is set for torchrun's own traceback (the agent's, not a worker's).
	Agent bool
	// Origin is the original exception's line: the first of a chain ("The above
	// exception was the direct cause of the following exception:", "During handling
	// of the above exception, another exception occurred:", CPython's traceback.py),
	// or the one a wrapper carries in its message (torch's ExceptionWrapper, which a
	// DataLoader worker's exception comes back in: "Caught ValueError in DataLoader
	// worker process 0." then "Original Traceback (most recent call last):",
	// torch/_utils.py). Exception itself when there is neither.
	Origin string
	// Frame is the innermost frame of the original exception, "FILE:LINE in FUNC",
	// from CPython's frame lines ('  File "{}", line {}, in {}', traceback.py's
	// StackSummary.format_frame_summary); "" when it had none.
	Frame string
	// open is set when another traceback of the same stream was open at the same
	// time: their lines may be interleaved.
	open bool
	// frame is the last frame line read; wrap is set while the traceback goes on
	// with the original one of a wrapper.
	frame string
	wrap  bool
}

// wrapperOrigin is what precedes the traceback a wrapper exception carries in its
// message (torch/_utils.py, ExceptionWrapper: "Caught {type} {where}.\nOriginal
// {formatted traceback}").
const wrapperOrigin = "Original"

// frameOf reads CPython's frame line ('File "train.py", line 88, in step') as
// "train.py:88 in step", or returns "".
func frameOf(trim string) string {
	rest, ok := strings.CutPrefix(trim, `File "`)
	if !ok {
		return ""
	}
	file, rest, ok := strings.Cut(rest, `", line `)
	if !ok {
		return ""
	}
	line, fn, _ := strings.Cut(rest, ", in ")
	if _, err := strconv.Atoi(line); err != nil {
		return ""
	}
	if fn == "" {
		return file + ":" + line
	}
	return file + ":" + line + " in " + fn
}

// Secondary reports whether the traceback is a worker failing because a peer did: a
// collective whose connection was closed when the peer died.
func (tb Traceback) Secondary() bool {
	what := tb.Exception
	if tb.Origin != "" {
		what = tb.Origin
	}
	if _, _, timeout := collectiveTimeout(what, tb.Frame); timeout {
		return false // gloo's own timeout: this rank waited, no peer went away
	}
	return secondary(what)
}

// secondary reports whether an exception's line is one of secondaryErrors, or
// multiprocessing's bare "EOFError" (its connection's peer process is gone: the queue
// of a DataLoader worker killed meanwhile; an EOFError with a message, pickle's "Ran
// out of input", is a failure of its own).
func secondary(exception string) bool {
	if exception == "EOFError" {
		return true
	}
	for _, s := range secondaryErrors {
		if strings.Contains(exception, s) {
			return true
		}
	}
	return false
}

// loaderWorkerGone reports whether an exception's line is torch's DataLoader saying
// that a worker process died: "DataLoader worker (pid N) is killed by signal: ..." or
// "... exited unexpectedly with exit code N" (torch/csrc/DataLoader.cpp, raised by
// the SIGCHLD handler of torch/utils/data/_utils/signal_handling.py), "DataLoader
// worker (pid(s) N) exited unexpectedly" (torch/utils/data/dataloader.py).
func loaderWorkerGone(exception string) bool {
	return strings.Contains(exception, "Error: DataLoader worker (pid")
}

// secondaryErrors are what a rank raises when a peer of its collective is gone
// (gloo's tcp transport, NCCL's abort).
var secondaryErrors = []string{
	"Connection closed by peer",
	"Connection reset by peer",
	"Broken pipe",
	"gloo/transport/tcp",
	"NCCL communicator was aborted",
	"Socket Timeout",
	"got end of file during message", // multiprocessing's connection, its peer gone
}

// Bounds on what a Failures keeps, whatever a node writes.
const (
	maxTracebackLines = 400
	maxTracebacks     = 64
	maxFailures       = 1024
	maxOpen           = 16
)

const (
	tracebackHead = "Traceback (most recent call last):"
	chainCause    = "The above exception was the direct cause of the following exception:"
	chainContext  = "During handling of the above exception, another exception occurred:"
	rootCauseHead = "Root Cause (first observed failure):"
)

// What CPython writes when it cannot print an uncaught exception (a signal handler
// raised while the traceback was written: torch's SIGCHLD handler, a DataLoader worker
// killed meanwhile): pythonrun.c's _PyErr_Display dumps the exception with
// _PyObject_Dump ("object address  : ...", "object refcount : ...", "object type     :
// ...", then these two), straight to the C stderr, and says "lost sys.stderr". The
// traceback, if begun, is cut where the printing failed, and the first line of the
// dump may be glued to its last.
const (
	dumpAddress  = "object address  : "
	dumpTypeName = "object type name: "
	dumpRepr     = "object repr     : "
	lostStderr   = "lost sys.stderr"
)

// Failures reads, from a node's lines fed in order, its workers' tracebacks, torchrun's
// failure summary and the ports its store could not bind. The zero value is ready.
// Lines may carry torchrun's "[local_rank]:" prefix.
type Failures struct {
	// Tracebacks are the completed tracebacks, in the order their exception lines came
	// (the oldest are dropped past maxTracebacks).
	Tracebacks []Traceback
	// Summary is the failure summary torchrun printed last (one per failed attempt).
	Summary []Failure
	// Unbound are the ports c10d's store server could not bind, as it said.
	Unbound []int
	// Timeouts are the collectives' timeouts written as log lines (NCCL's watchdog).
	Timeouts []Timeout

	n       int
	streams map[int]*tbStream // local rank (-1: unprefixed) -> open tracebacks
	sum     *summaryReader
}

// tbStream is the state of one stream's tracebacks: those open, oldest first (two
// ranks raising at once interleave theirs on an unprefixed stream), and the last one
// closed, which a chained exception continues.
type tbStream struct {
	open    []*Traceback
	last    *Traceback
	chained bool
	// dumpName and dumpRepr are CPython's dump of an exception it could not print,
	// until its "lost sys.stderr"; dump are their lines.
	dumpName, dumpRepr string
	dump               []string
}

// Feed reads the next line of the node.
func (f *Failures) Feed(text string, t time.Time) {
	i := f.n
	f.n++
	local := -1
	// Inside a summary, "[0]:" alone heads a failure's block; elsewhere it is a
	// worker's empty line.
	if l, rest, ok := Parse(text); ok && (rest != "" || f.sum == nil) {
		local, text = l, rest
	}
	// A \r progress bar's frames that a traceback line was glued to: the last frame.
	if k := strings.LastIndexByte(text, '\r'); k >= 0 {
		text = text[k+1:]
	}
	if local < 0 {
		if port, ok := BindFailed(text); ok && len(f.Unbound) < 16 {
			f.Unbound = append(f.Unbound, port)
		}
		f.readSummary(text)
	}
	f.readTimeout(local, text, t)
	f.readTraceback(local, i, text, t)
}

func (f *Failures) stream(local int) *tbStream {
	if f.streams == nil {
		f.streams = map[int]*tbStream{}
	}
	s := f.streams[local]
	if s == nil {
		if len(f.streams) >= maxOpen*4 {
			return nil
		}
		s = &tbStream{}
		f.streams[local] = s
	}
	return s
}

func (f *Failures) readTraceback(local, i int, text string, t time.Time) {
	s := f.stream(local)
	if s == nil {
		return
	}
	if k := strings.Index(text, dumpAddress); k > 0 {
		text = text[:k] // the line the printing failed in, as far as it got
	}
	trim := strings.TrimSpace(text)
	if k := strings.Index(text, tracebackHead); k >= 0 {
		f.beginTraceback(s, local, i, text, k, t)
		return
	}
	if trim == chainCause || trim == chainContext {
		s.chained = s.last != nil
		return
	}
	if f.readDump(s, local, i, text, trim, t) {
		return
	}
	if len(s.open) == 0 {
		if trim != "" {
			s.chained = false
		}
		return
	}
	if trim == "" || strings.HasPrefix(text, " ") || strings.HasPrefix(text, "\t") {
		// A frame, its source line or its ^^^ marks: the oldest open traceback's, as
		// far as one can tell.
		s.open[0].addFrameLine(text, trim)
		return
	}
	if !exceptionLine(trim) {
		return // a line of something else, written meanwhile
	}
	f.endTraceback(s, i, t, trim, text)
}

// beginTraceback reads a "Traceback (most recent call last):" at text[k:], line i: a
// new traceback of s, or the next part of a chain or of a wrapper's exception.
func (f *Failures) beginTraceback(s *tbStream, local, i int, text string, k int, t time.Time) {
	wrapped := s.last != nil && strings.TrimSpace(text[:k]) == wrapperOrigin && strings.Contains(s.last.Exception, "Caught ")
	if s.chained && s.last != nil || wrapped {
		// The next exception of a chain, or the original one a wrapper carries:
		// the traceback goes on.
		s.chained = false
		f.drop(s.last)
		s.open = append(s.open, s.last)
		s.last.wrap = wrapped
		s.last.Lines = appendLine(s.last.Lines, text)
		s.last = nil
		return
	}
	if len(s.open) >= maxOpen {
		s.open = s.open[1:]
	}
	tb := &Traceback{Local: local, Start: i, Began: t, Lines: []string{text[k:]}, open: len(s.open) > 0}
	for _, o := range s.open {
		o.open = true
	}
	s.open = append(s.open, tb)
}

// readDump reads CPython's dump of an exception it could not print (its type, its
// repr, then "lost sys.stderr", which ends the traceback): whether text was one of
// its lines.
func (f *Failures) readDump(s *tbStream, local, i int, text, trim string, t time.Time) bool {
	if name, ok := strings.CutPrefix(text, dumpTypeName); ok {
		s.dumpName, s.dumpRepr, s.dump = name, "", []string{text}
		return true
	}
	if repr, ok := strings.CutPrefix(text, dumpRepr); ok && s.dumpName != "" {
		s.dumpRepr, s.dump = repr, append(s.dump, text)
		return true
	}
	if trim != lostStderr || s.dumpName == "" || s.dumpRepr == "" {
		return false
	}
	// The uncaught exception whose printing failed ends its traceback; it had none
	// when the printing failed at its first line.
	exc := dumpedException(s.dumpName, s.dumpRepr)
	if len(s.open) == 0 {
		s.chained = false
		s.open = append(s.open, &Traceback{Local: local, Start: i, Began: t})
	}
	for _, l := range s.dump {
		s.open[0].Lines = appendLine(s.open[0].Lines, l)
	}
	s.dumpName, s.dumpRepr, s.dump = "", "", nil
	f.endTraceback(s, i, t, exc, text)
	return true
}

// addFrameLine adds a frame's line (or its source line, its ^^^ marks) to tb: its
// innermost frame so far, and whether it runs in torchrun's agent.
func (tb *Traceback) addFrameLine(text, trim string) {
	tb.Lines = appendLine(tb.Lines, text)
	if fr := frameOf(trim); fr != "" {
		tb.frame = fr
	}
	if strings.HasPrefix(trim, "File ") && (strings.Contains(trim, `torchrun"`) || strings.Contains(trim, "torch/distributed/run.py")) {
		tb.Agent = true
	}
}

// endTraceback ends the oldest open traceback of s with exception exc, read from line
// i (text) written at t.
func (f *Failures) endTraceback(s *tbStream, i int, t time.Time, exc, text string) {
	tb := s.open[0]
	s.open = s.open[1:]
	tb.End, tb.Time, tb.Exception = i, t, exc
	// The original: the chain's first, unless that was a peer's consequence (a
	// DataLoader whose killed worker's queue said "Connection reset by peer" before
	// its "worker ... is killed by signal"); a wrapper's inner one; a DataLoader's
	// worker gone, whatever was in flight when torch's SIGCHLD handler said so (a
	// KeyError os.getenv was about to catch, chained to it as "During handling").
	if tb.Origin == "" || tb.wrap || secondary(tb.Origin) && !secondary(exc) || loaderWorkerGone(exc) && !loaderWorkerGone(tb.Origin) {
		tb.Origin, tb.Frame = exc, tb.frame
	}
	tb.wrap = false
	tb.Lines = appendLine(tb.Lines, text)
	if strings.Contains(exc, "ChildFailedError") {
		tb.Agent = true
	}
	if len(f.Tracebacks) >= maxTracebacks {
		f.Tracebacks = f.Tracebacks[1:]
	}
	f.Tracebacks = append(f.Tracebacks, *tb)
	s.last = tb
}

// drop takes the completed traceback of a chain that goes on out of Tracebacks.
func (f *Failures) drop(tb *Traceback) {
	for k := len(f.Tracebacks) - 1; k >= 0; k-- {
		if f.Tracebacks[k].Start == tb.Start && f.Tracebacks[k].Local == tb.Local {
			f.Tracebacks = append(f.Tracebacks[:k], f.Tracebacks[k+1:]...)
			return
		}
	}
}

func appendLine(lines []string, s string) []string {
	if len(lines) >= maxTracebackLines {
		return lines
	}
	return append(lines, s)
}

// exceptionLine reports whether s ends a traceback: an exception's (dotted) name,
// alone or followed by ": " and its message.
func exceptionLine(s string) bool {
	name, _, hasMsg := strings.Cut(s, ":")
	if name == "" || !hasMsg && name != s {
		return false
	}
	if hasMsg && len(s) > len(name)+1 && s[len(name)+1] != ' ' {
		return false // "ERROR:torch.distributed...": a log line
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		if !(c == '_' || c == '.' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || i > 0 && c >= '0' && c <= '9') {
			return false
		}
	}
	// A Python exception class: CamelCase, its last dotted part capitalized, named
	// as exceptions are (a log line "Epoch: 3" is not one).
	last := name[strings.LastIndexByte(name, '.')+1:]
	if last == "" || last[0] < 'A' || last[0] > 'Z' || strings.ToUpper(last) == last {
		return false
	}
	for _, suffix := range exceptionSuffixes {
		if strings.HasSuffix(last, suffix) {
			return true
		}
	}
	return false
}

// exceptionSuffixes end the names of Python's exceptions (builtin and, by
// convention, others'): ValueError, KeyboardInterrupt, SystemExit, StopIteration,
// OutOfMemoryError, ChildFailedError, a script's InjectedFailure.
var exceptionSuffixes = []string{"Error", "Exception", "Interrupt", "Exit", "Iteration", "Failure", "Warning", "Fault", "Timeout", "Abort"}

// BindFailed reads c10d's "The server socket has failed to bind to HOST:PORT (errno:
// 98 - Address already in use)" and returns the port.
func BindFailed(text string) (port int, ok bool) {
	const mark = "The server socket has failed to bind to "
	i := strings.Index(text, mark)
	if i < 0 || !strings.Contains(text, "errno: 98") {
		return 0, false
	}
	addr, _, _ := strings.Cut(text[i+len(mark):], " ")
	k := strings.LastIndexByte(addr, ':')
	if k < 0 {
		return 0, false
	}
	p, err := strconv.Atoi(strings.TrimRight(addr[k+1:], ".,"))
	if err != nil || p <= 0 || p > 65535 {
		return 0, false
	}
	return p, true
}

// summaryReader reads the blocks of torchrun's failure summary.
type summaryReader struct {
	blocks []Failure
	cur    *Failure
	inRoot bool
}

func (f *Failures) readSummary(text string) {
	trim := strings.TrimSpace(text)
	switch {
	case strings.HasSuffix(trim, "ChildFailedError:"), strings.HasSuffix(trim, "ChildFailedError"):
		f.sum = &summaryReader{}
		return
	case f.sum == nil:
		return
	case trim == "Failures:":
		f.sum.inRoot = false
		return
	case trim == rootCauseHead:
		f.sum.inRoot = true
		return
	case strings.HasPrefix(trim, "====") && f.sum.cur != nil:
		// The summary's end.
		f.endSummary()
		return
	}
	s := f.sum
	if len(trim) > 2 && trim[0] == '[' && trim[len(trim)-1] == ':' && trim[len(trim)-2] == ']' {
		if len(s.blocks) < maxFailures {
			s.blocks = append(s.blocks, Failure{Rank: -1, Local: -1, Root: s.inRoot})
			s.cur = &s.blocks[len(s.blocks)-1]
		}
		return
	}
	if s.cur == nil {
		return
	}
	k, v, ok := strings.Cut(trim, ":")
	if !ok {
		return
	}
	v = strings.TrimSpace(v)
	switch strings.TrimSpace(k) {
	case "time":
		s.cur.Time = v
	case "rank":
		// "3 (local_rank: 1)"
		num, rest, _ := strings.Cut(v, " ")
		s.cur.Rank = atoiOr(num, -1)
		if _, l, ok := strings.Cut(rest, "local_rank:"); ok {
			s.cur.Local = atoiOr(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(l), ")")), -1)
		}
	case "exitcode":
		// "1 (pid: 23148)"
		num, rest, _ := strings.Cut(v, " ")
		s.cur.ExitCode = atoiOr(num, 0)
		if _, p, ok := strings.Cut(rest, "pid:"); ok {
			s.cur.PID = atoiOr(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(p), ")")), 0)
		}
	case "error_file":
		if v != "<N/A>" {
			s.cur.ErrorFile = v
		}
	case "traceback":
		if s.cur.Traceback == "" {
			s.cur.Traceback = v
		}
	}
}

func (f *Failures) endSummary() {
	var out []Failure
	for _, b := range f.sum.blocks {
		if b.Rank >= 0 {
			out = append(out, b)
		}
	}
	if len(out) > 0 {
		f.Summary = out
	}
	f.sum = nil
}

func atoiOr(s string, def int) int {
	n, err := strconv.Atoi(s)
	if err != nil {
		return def
	}
	return n
}

// WorkerTracebacks are the node's tracebacks written by workers (not by the agent),
// in the order they ended.
func (f *Failures) WorkerTracebacks() []Traceback {
	var out []Traceback
	for _, tb := range f.Tracebacks {
		if !tb.Agent {
			out = append(out, tb)
		}
	}
	return out
}

// osErrors are the builtin exceptions whose str of (errno, strerror) is "[Errno N]
// strerror" (OSError and its subclasses, socket's gaierror and herror).
var osErrors = map[string]bool{
	"OSError": true, "IOError": true, "EnvironmentError": true, "BlockingIOError": true,
	"ChildProcessError": true, "ConnectionError": true, "BrokenPipeError": true,
	"ConnectionAbortedError": true, "ConnectionRefusedError": true, "ConnectionResetError": true,
	"FileExistsError": true, "FileNotFoundError": true, "InterruptedError": true,
	"IsADirectoryError": true, "NotADirectoryError": true, "PermissionError": true,
	"ProcessLookupError": true, "TimeoutError": true, "gaierror": true, "herror": true,
}

// dumpedException is the exception line Python would have printed of the exception
// CPython dumped, from its type's name and its repr: "ValueError('boom')" is
// "ValueError: boom", "ConnectionResetError(104, 'Connection reset by peer')"
// "ConnectionResetError: [Errno 104] Connection reset by peer", "KeyError('x')"
// "KeyError: 'x'", "StopIteration()" "StopIteration"; a repr of another shape is
// shown as it is, after the type's name.
func dumpedException(typeName, repr string) string {
	name := typeName[strings.LastIndexByte(typeName, '.')+1:]
	inner, ok := strings.CutPrefix(repr, name+"(")
	if !ok || !strings.HasSuffix(inner, ")") {
		return typeName + ": " + repr
	}
	inner = inner[:len(inner)-1]
	if inner == "" {
		return typeName
	}
	if msg, rest, ok := pyString(inner); ok && rest == "" {
		if name == "KeyError" {
			return typeName + ": " + inner // its str is its key's repr
		}
		// Its first line, as a traceback's exception line is read.
		msg, _, _ = strings.Cut(msg, "\n")
		return typeName + ": " + msg
	}
	if errno, rest, ok := strings.Cut(inner, ", "); ok && osErrors[name] {
		if _, err := strconv.Atoi(errno); err == nil {
			if msg, tail, ok := pyString(rest); ok && tail == "" {
				return typeName + ": [Errno " + errno + "] " + msg
			}
		}
	}
	return typeName + ": " + repr
}

// pyString reads the Python string literal (as repr writes one: quoted with ' or ",
// escapes \\ \' \" \n \r \t \xNN \uNNNN \UNNNNNNNN) at the start of s and returns
// its value and what follows it; ok is false when s does not start with one.
func pyString(s string) (val, rest string, ok bool) {
	if s == "" || s[0] != '\'' && s[0] != '"' {
		return "", "", false
	}
	q := s[0]
	var b strings.Builder
	for i := 1; i < len(s); i++ {
		c := s[i]
		switch {
		case c == q:
			return b.String(), s[i+1:], true
		case c != '\\':
			b.WriteByte(c)
			continue
		}
		if i+1 >= len(s) {
			return "", "", false
		}
		i++
		switch e := s[i]; e {
		case '\\', '\'', '"':
			b.WriteByte(e)
		case 'n':
			b.WriteByte('\n')
		case 'r':
			b.WriteByte('\r')
		case 't':
			b.WriteByte('\t')
		case 'x', 'u', 'U':
			n := 2
			switch e {
			case 'u':
				n = 4
			case 'U':
				n = 8
			}
			if i+n >= len(s) {
				return "", "", false
			}
			r, err := strconv.ParseUint(s[i+1:i+1+n], 16, 32)
			if err != nil {
				return "", "", false
			}
			b.WriteRune(rune(r))
			i += n
		default:
			return "", "", false
		}
	}
	return "", "", false
}
