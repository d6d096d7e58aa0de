package ranks

import (
	"strconv"
	"strings"
	"time"
)

// Collective timeouts: a collective that a peer never joined (a rank stuck in its data
// loader, a deadlock, a rank that skipped a collective) fails after the process
// group's timeout (30 minutes by default) with the backend's own words, which wick
// names as "collective timeout (OP after N ms)":
//
//   - gloo (facebookincubator/gloo, gloo/transport/tcp/unbound_buffer.cc, as vendored
//     by torch 1.13), UnboundBuffer::waitRecv and waitSend throw
//     GLOO_ERROR_MSG("Timed out waiting ", timeout.count(), "ms for recv operation to
//     complete") (send for waitSend), which the rank's collective raises as
//     "RuntimeError: [./gloo/transport/tcp/unbound_buffer.cc:81] Timed out waiting
//     5000ms for recv operation to complete"; before throwing they signal
//     "Application timeout caused pair closure" to the context's other pairs, which
//     other operations of the same rank then raise.
//   - NCCL (pytorch/pytorch, torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp, torch
//     1.13): the watchdog logs c10::str("[Rank ", rank_, "] ", "Watchdog caught
//     collective operation timeout: ", work, " ran for ", timeElapsed.count(), "
//     milliseconds before timing out.") and takes the process down (SIGABRT); with
//     NCCL_BLOCKING_WAIT the wait() raises "[Rank N] Caught collective operation
//     timeout: ..." instead. The work prints as "WorkNCCL(SeqNum=S, OpType=ALLREDUCE,
//     [TensorShape=[...], ]Timeout(ms)=T)".

// c10dFile is the Python file of torch's collectives (all_reduce, barrier, ...): the
// innermost frame of a gloo timeout raised there names the collective.
const c10dFile = "distributed_c10d.py"

// collectiveTimeout reads a collective's timeout in an exception line (or a log line),
// with frame the innermost frame of its traceback ("FILE:LINE in FUNC", "" if none),
// and words it "collective timeout (all_reduce after 5000 ms)"; rank is the rank the
// line names (NCCL's "[Rank N]"), -1 when it names none.
func collectiveTimeout(text, frame string) (what string, rank int, ok bool) {
	if op, ms, rank, ok := ncclTimeout(text); ok {
		return timeoutWhat(op, ms), rank, true
	}
	op := c10dOp(frame)
	if ms, dir, ok := glooTimeout(text); ok {
		if op == "" {
			op = dir
		}
		return timeoutWhat(op, ms), -1, true
	}
	if strings.Contains(text, "Application timeout caused pair closure") {
		if op == "" {
			return "collective timeout (pair closed by another operation's timeout)", -1, true
		}
		return "collective timeout (" + op + ": pair closed by another operation's timeout)", -1, true
	}
	return "", -1, false
}

// timeoutWhat words a timeout of op after ms milliseconds.
func timeoutWhat(op string, ms int64) string {
	return "collective timeout (" + op + " after " + strconv.FormatInt(ms, 10) + " ms)"
}

// c10dOp is the collective of torch's distributed_c10d.py that frame is in, or "".
func c10dOp(frame string) string {
	file, fn, ok := strings.Cut(frame, " in ")
	if !ok || !strings.Contains(file, c10dFile) || fn == "" || strings.HasPrefix(fn, "_") {
		return ""
	}
	return fn
}

// glooTimeout reads gloo's "Timed out waiting 5000ms for recv operation to complete".
func glooTimeout(text string) (ms int64, dir string, ok bool) {
	const head = "Timed out waiting "
	i := strings.Index(text, head)
	if i < 0 {
		return 0, "", false
	}
	rest := text[i+len(head):]
	num, rest, ok := strings.Cut(rest, "ms for ")
	if !ok {
		return 0, "", false
	}
	ms, err := strconv.ParseInt(num, 10, 64)
	if err != nil || ms < 0 {
		return 0, "", false
	}
	dir, rest, ok = strings.Cut(rest, " operation to complete")
	if !ok || dir != "recv" && dir != "send" || rest != "" && rest != "." {
		return 0, "", false
	}
	return ms, dir, true
}

// ncclTimeout reads ProcessGroupNCCL's "[Rank 3] Watchdog caught collective operation
// timeout: WorkNCCL(SeqNum=668, OpType=ALLREDUCE, Timeout(ms)=1800000) ran for 1800125
// milliseconds before timing out." (or "Caught collective operation timeout", the
// blocking wait's).
func ncclTimeout(text string) (op string, ms int64, rank int, ok bool) {
	const mark = "aught collective operation timeout: WorkNCCL("
	i := strings.Index(text, mark)
	if i < 0 {
		return "", 0, -1, false
	}
	head, rest := text[:i], text[i+len(mark):]
	rank = -1
	if k := strings.LastIndex(head, "[Rank "); k >= 0 {
		if n, _, ok := strings.Cut(head[k+len("[Rank "):], "]"); ok {
			rank = atoiOr(n, -1)
		}
	}
	work, rest, ok := strings.Cut(rest, ") ran for ")
	if !ok {
		return "", 0, -1, false
	}
	num, _, ok := strings.Cut(rest, " milliseconds before timing out")
	if !ok {
		return "", 0, -1, false
	}
	ms, err := strconv.ParseInt(num, 10, 64)
	if err != nil || ms < 0 {
		return "", 0, -1, false
	}
	for _, field := range strings.Split(work, ", ") {
		if v, ok := strings.CutPrefix(field, "OpType="); ok {
			op = v
		}
	}
	if op == "" {
		op = "a collective"
	}
	return op, ms, rank, true
}

// Timeout is a collective's timeout that a node wrote as a log line, not in a
// traceback (NCCL's watchdog, before it takes the process down).
type Timeout struct {
	// Rank is the rank the line names, -1 if none; Local the local rank of its
	// prefix, -1 when unprefixed.
	Rank, Local int
	// What is the timeout as wick words it; Line the line.
	What, Line string
	// Time is when it was written.
	Time time.Time
}

// maxTimeouts bounds the timeouts a Failures keeps.
const maxTimeouts = 64

// readTimeout keeps a line of NCCL's watchdog.
func (f *Failures) readTimeout(local int, text string, t time.Time) {
	if !strings.Contains(text, "collective operation timeout") || len(f.Timeouts) >= maxTimeouts {
		return
	}
	op, ms, rank, ok := ncclTimeout(text)
	if !ok {
		return
	}
	for _, o := range f.Timeouts {
		if o.Rank == rank && o.Local == local {
			return // the same timeout again (the watchdog's log, then terminate's what())
		}
	}
	f.Timeouts = append(f.Timeouts, Timeout{Rank: rank, Local: local, What: timeoutWhat(op, ms), Line: strings.TrimSpace(text), Time: t})
}
