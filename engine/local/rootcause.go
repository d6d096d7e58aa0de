package local

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/wick-dev/wick/engine/logs"
	"github.com/wick-dev/wick/engine/ranks"
	"github.com/wick-dev/wick/engine/sched"
	"github.com/wick-dev/wick/engine/spec"
)

// Bounds of the search for the root cause of a failed app, so that a PET_LOG_DIR
// full of old runs cannot make the end of an app slow.
const (
	// maxErrorDirEntries bounds the entries read of each directory level below a
	// PET_LOG_DIR (runs, attempts, ranks).
	maxErrorDirEntries = 1024
	// stderrTail is how much of the end of a replica's stderr.log is searched for
	// the root-cause message, to tell which node a worker's error file belongs to.
	stderrTail = 1 << 20
	// mtimeSlack is how far a file's mtime may lag the clock: the kernel stamps
	// files with a clock updated once per tick (1-10 ms).
	mtimeSlack = 20 * time.Millisecond
)

// errorCandidate is an error file that may hold the app's root cause.
type errorCandidate struct {
	path  string
	mtime time.Time
	r     *replica // the replica whose TORCHELASTIC_ERROR_FILE it is; nil for a worker's
	role  string   // for a worker's file: the role whose PET_LOG_DIR holds it
	local int      // for a worker's file: its local rank, from its directory
}

// stoppedBySignal reports whether a replica that exited while the supervisor was
// stopping it ended because of the stop (a signal, a shell's 128+N, or torchrun's
// SignalException), rather than failing on its own meanwhile.
func (sv *supervisor) stoppedBySignal(r *replica, ws unix.WaitStatus, code int) bool {
	if ws.Signaled() || code > 128 && code <= 128+64 {
		return true
	}
	return strings.Contains(spec.ErrorMessage(sv.errorFile(r)), "SignalException")
}

// rootCause picks the error of a failed app as TorchX does, from the error file with
// the oldest modification time, over the replicas' error files and torchelastic's
// per-worker error files (PET_LOG_DIR/<run>/attempt_N/<local rank>/error.json) of
// the current run: the first exception raised anywhere, not the first replica to
// exit (in a DDP job the others then fail too, in gloo). The replica that holds it is
// FAILED, even if it was being stopped when it exited.
func (sv *supervisor) rootCause() {
	if sv.heldPortCause() {
		return
	}
	reports := sv.torchrunReports()
	// A rendezvous port another program held comes first: the error files that follow
	// (the agent's RendezvousConnectionError) are its consequences.
	for _, rep := range reports {
		if c, ok := ranks.RootCause(rep.nodes); ok && rep.port(c) {
			sv.setCause(rep, c)
			return
		}
	}
	if sv.errorFileCause(reports) {
		return
	}
	// No error file (a script without @record): the first failure of any replica,
	// from the workers' tracebacks and torchrun's summaries, the plain replicas'
	// tracebacks and ends.
	if c, ok := ranks.RootCause(sv.failureReports(reports)); ok {
		if r := sv.replicaOf(c.Role, c.Replica); r != nil && c.Plain {
			switch {
			case r.execErr != "":
				// Its program never ran: why it could not be started says more than
				// the shell's 127 or 126 standing for it.
				c.What = r.execErr
			case c.What == noTorchError:
				if msg := noTorchCause(r); msg != "" {
					c.What = strings.TrimPrefix(msg, r.name()+" failed: ")
				}
			}
		}
		sv.applyCause(c)
		return
	}
	sv.noTorchRootCause()
}

// failureReports are the reports of every replica for RootCause: each torchrun node
// of reports, and each other replica that failed on its own, with how it ended.
func (sv *supervisor) failureReports(reports []*torchrunReport) []ranks.NodeReport {
	var out []ranks.NodeReport
	for _, rep := range reports {
		out = append(out, rep.nodes...)
	}
	for _, r := range sv.all {
		if runsTorchrun(r.req.Argv) || r.st.State != spec.Failed || r.st.ExitCode == nil {
			continue
		}
		e := &ranks.Exit{Code: *r.st.ExitCode, Signal: r.sig, OOM: r.oom, Time: r.st.Ended, Exact: true}
		out = append(out, ranks.NodeReport{Role: r.role.req.Name, Replica: r.req.ID, GroupRank: -1, Plain: true, Exit: e, Failures: sv.nodeFailures(r)})
	}
	return out
}

// errorFileCause picks the root cause from error files; it reports whether one did. A
// worker's file (@record) of a torchrun role is worded as a cause found without one
// ("rank 3: RuntimeError: ..."), with the global rank torchrun's summary or the node's
// group rank gives it.
func (sv *supervisor) errorFileCause(reports []*torchrunReport) bool {
	best := sv.firstErrorFile()
	if best == nil {
		return false
	}
	text := readErrorFile(best.path)
	msg := firstLine(spec.ErrorMessage(text))
	if text == "" || msg == "" {
		return false
	}
	if best.r == nil && sv.workerCause(reports, best, text, msg) {
		return true
	}
	sv.fileCause(best, text, msg)
	return true
}

// firstErrorFile returns the error file written first by the current attempts, of a
// replica (TORCHELASTIC_ERROR_FILE) or of a torchrun worker (under PET_LOG_DIR), or
// nil when there is none.
func (sv *supervisor) firstErrorFile() *errorCandidate {
	since := sv.attemptsSince()
	var best *errorCandidate
	consider := func(c errorCandidate) {
		role := c.role
		if c.r != nil {
			role = c.r.role.req.Name
		}
		if c.mtime.Before(since[role]) {
			return // an earlier run's
		}
		if c.r != nil && strings.Contains(spec.ErrorMessage(readErrorFile(c.path)), "SignalException") {
			return // torchrun's agent stopped by a signal: the stop, not a failure
		}
		if best == nil || c.mtime.Before(best.mtime) {
			best = &c
		}
	}
	pets := map[string]string{} // PET_LOG_DIR -> role
	for _, r := range sv.all {
		if p := r.req.Env[envErrorFile]; p != "" && sv.errorFile(r) != "" {
			if st, err := os.Stat(p); err == nil {
				consider(errorCandidate{path: p, mtime: st.ModTime(), r: r})
			}
		}
		if p := r.req.Env[envPetLogDir]; p != "" {
			pets[p] = r.role.req.Name
		}
	}
	for pet, role := range pets {
		workerErrorFiles(pet, role, consider)
	}
	return best
}

// attemptsSince returns, per role, when its current attempts began: files older than
// that are an earlier run's. A role retried alone (ROLE, REPLICA) that recovered
// leaves the files of its failed attempt, older than the other roles' current ones.
// File times come from the kernel's coarse clock, which lags time.Now by up to a
// tick; a file of the previous attempt is older than its recorded end, even when the
// restart came within the tick.
func (sv *supervisor) attemptsSince() map[string]time.Time {
	since := map[string]time.Time{}
	for _, r := range sv.all {
		if r.forkAt.IsZero() {
			continue
		}
		t := r.forkAt.Add(-mtimeSlack)
		if n := len(r.st.Attempts); n > 0 && r.st.Attempts[n-1].Ended.After(t) {
			t = r.st.Attempts[n-1].Ended
		}
		if name := r.role.req.Name; since[name].IsZero() || t.Before(since[name]) {
			since[name] = t
		}
	}
	return since
}

// workerErrorFiles hands consider the error files of the torchrun workers of role
// under its PET_LOG_DIR pet: RUN/attempt_N/LOCAL_RANK/error.json.
func workerErrorFiles(pet, role string, consider func(errorCandidate)) {
	for _, run := range subdirs(pet) {
		for _, att := range subdirs(run) {
			if !strings.HasPrefix(filepath.Base(att), "attempt_") {
				continue
			}
			for _, rank := range subdirs(att) {
				local, err := strconv.Atoi(filepath.Base(rank))
				if err != nil {
					continue
				}
				p := filepath.Join(rank, errorFileName)
				if st, err := os.Lstat(p); err == nil && st.Mode().IsRegular() {
					consider(errorCandidate{path: p, mtime: st.ModTime(), role: role, local: local})
				}
			}
		}
	}
}

// fileCause makes the error file best (its text, and msg, the first line of its
// message) the app's cause, named after the replica that wrote it, or the node of the
// worker that did.
func (sv *supervisor) fileCause(best *errorCandidate, text, msg string) {
	r, who := best.r, ""
	if r == nil {
		r = sv.workerNode(best.role, filepath.Dir(filepath.Dir(filepath.Dir(best.path))), msg)
		who = fmt.Sprintf("local rank %d of ", best.local)
		if r == nil {
			who = fmt.Sprintf("a worker (local rank %d) of role %s", best.local, best.role)
		}
	}
	if r != nil {
		who += r.name()
		if r.st.State == spec.Cancelled {
			// It failed before the stop reached it: its failure, not a cancel.
			r.st.State = spec.Failed
		}
		if r.st.StructuredError == "" || !strings.Contains(spec.ErrorMessage(r.st.StructuredError), msg) {
			r.st.StructuredError = text
		}
	}
	sv.st.Msg = who + " failed: " + msg
	sv.st.StructuredError = text
	sv.dirty = true
}

// workerCause makes a worker's error file, of a torchrun role, the app's cause, named
// with its global rank; it reports whether the rank could be told.
func (sv *supervisor) workerCause(reports []*torchrunReport, best *errorCandidate, text, msg string) bool {
	var rep *torchrunReport
	for _, x := range reports {
		if x.role == best.role {
			rep = x
		}
	}
	if rep == nil {
		return false
	}
	// The node whose summary names the file, else the one workerNode finds.
	var node *ranks.NodeReport
	for i := range rep.nodes {
		if rep.nodes[i].WroteErrorFile(best.path) {
			node = &rep.nodes[i]
		}
	}
	if node == nil {
		r := sv.workerNode(best.role, filepath.Dir(filepath.Dir(filepath.Dir(best.path))), msg)
		for i := range rep.nodes {
			if r != nil && rep.nodes[i].Replica == r.req.ID {
				node = &rep.nodes[i]
			}
		}
	}
	if node == nil {
		return false
	}
	rank := node.RankOfErrorFile(best.path, best.local)
	if rank < 0 {
		return false
	}
	sv.setCause(rep, node.ErrorFileCause(rank, msg, ranks.Callstack(text), best.mtime))
	return true
}

// workerNode finds the replica (a torchrun node) of role whose worker wrote msg: the
// one whose own error file holds it (torchrun copies its first failure there), or
// else the one whose stderr.log ends with it (the worker's traceback). Nodes of a role
// share their PET_LOG_DIR, so the file's path does not say. It returns nil when no
// replica, or more than one, matches.
func (sv *supervisor) workerNode(role, runDir, msg string) *replica {
	var found []*replica
	for _, r := range sv.all {
		if r.role.req.Name == role && strings.Contains(spec.ErrorMessage(sv.errorFile(r)), msg) {
			found = append(found, r)
		}
	}
	if len(found) == 1 {
		return found[0]
	}
	found = found[:0]
	for _, r := range sv.all {
		if r.role.req.Name == role && tailContains(filepath.Join(r.req.LogDir, logs.StderrFile), msg) {
			found = append(found, r)
		}
	}
	if len(found) == 1 {
		return found[0]
	}
	return nil
}

// subdirs lists the directories in dir, at most maxErrorDirEntries of them, without
// following symbolic links.
func subdirs(dir string) []string {
	f, err := os.Open(dir)
	if err != nil {
		return nil
	}
	defer f.Close()
	entries, _ := f.ReadDir(maxErrorDirEntries)
	var out []string
	for _, e := range entries {
		if e.IsDir() {
			out = append(out, filepath.Join(dir, e.Name()))
		}
	}
	return out
}

// readErrorFile reads an error file, at most maxErrorFile bytes of it.
func readErrorFile(path string) string {
	f, err := os.OpenFile(path, os.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK, 0)
	if err != nil {
		return ""
	}
	defer f.Close()
	if st, err := f.Stat(); err != nil || !st.Mode().IsRegular() {
		return ""
	}
	b, _ := io.ReadAll(io.LimitReader(f, maxErrorFile))
	return strings.TrimSpace(string(b))
}

// tailContains reports whether the last stderrTail bytes of the file at path contain s.
func tailContains(path, s string) bool {
	f, err := os.Open(path)
	if err != nil {
		return false
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return false
	}
	off := max(st.Size()-stderrTail, 0)
	b, _ := io.ReadAll(io.NewSectionReader(f, off, st.Size()-off))
	return bytes.Contains(b, []byte(s))
}

// causeTailLines bounds the lines of a node's stderr read for its failure: its
// summary and its workers' tracebacks are at the end.
const causeTailLines = 4000

// torchrunReport is what the nodes of one torchrun role reported.
type torchrunReport struct {
	role  string
	nodes []ranks.NodeReport
	reps  map[int]*replica // by replica index
}

// port reports whether c is a rendezvous port in use.
func (rep *torchrunReport) port(c ranks.Cause) bool {
	return c.Rank < 0 && len(c.Traceback) == 0 && strings.HasPrefix(c.What, "rendezvous port ")
}

// torchrunReports reads the failures of the app's torchrun roles from the end of each
// node's stderr (the lines of its last attempt) and from its workers' watch.
func (sv *supervisor) torchrunReports() []*torchrunReport {
	var out []*torchrunReport
	byRole := map[string]*torchrunReport{}
	for _, r := range sv.all {
		if !runsTorchrun(r.req.Argv) {
			continue
		}
		rep := byRole[r.role.req.Name]
		if rep == nil {
			rep = &torchrunReport{role: r.role.req.Name, reps: map[int]*replica{}}
			byRole[rep.role] = rep
			out = append(out, rep)
		}
		n := ranks.NodeReport{Role: r.role.req.Name, Replica: r.req.ID, NProc: ranks.NProcPerNode(r.req.Argv), GroupRank: -1, Failures: sv.nodeFailures(r)}
		// Its failure to bind the rendezvous port was a peer's hosting the store.
		n.Hosted = int(r.unbound.Load()) == r.attempt+1 && portHolder(r.held.Load()) == holderApp
		if r.workers != nil {
			n.GroupRank = r.workers.GroupRank()
			n.Exits, n.Downs = r.workers.Exits(), r.workers.Downs()
			if len(n.Failures.Summary) == 0 {
				// Stopped before its agent printed its summary (nodefail.go).
				n.Failures.Summary = r.workers.Summary()
			}
		}
		rep.nodes = append(rep.nodes, n)
		rep.reps[r.req.ID] = r
	}
	return out
}

// nodeFailures reads the stderr lines of r's last attempt.
func (sv *supervisor) nodeFailures(r *replica) *ranks.Failures {
	f := &ranks.Failures{}
	it, err := logs.Open(logs.Source{Dir: r.req.LogDir, Role: r.role.req.Name, Replica: r.req.ID},
		sched.LogOptions{Streams: sched.Stderr, Tail: causeTailLines})
	if err != nil {
		return f
	}
	defer it.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for {
		l, err := it.Next(ctx)
		if err != nil {
			break
		}
		if l.Attempt == r.attempt {
			f.Feed(l.Text, l.Time)
		}
	}
	return f
}

// setCause makes c, found in rep, the app's error (applyCause).
func (sv *supervisor) setCause(rep *torchrunReport, c ranks.Cause) {
	if c.Role == "" {
		c.Role = rep.role
	}
	sv.applyCause(c)
}

// applyCause makes c the app's error: "rank 3: RuntimeError: ..." (or "python/0:
// ValueError: ...") as its message, and as its structured error a torchelastic error
// file's JSON with the traceback, as @record would have written it. The replica where
// it happened is FAILED, even if it was being stopped when it exited.
func (sv *supervisor) applyCause(c ranks.Cause) {
	text := c.JSON()
	if r := sv.replicaOf(c.Role, c.Replica); r != nil {
		if r.st.State == spec.Cancelled {
			r.st.State = spec.Failed
		}
		r.st.StructuredError = text
	}
	sv.st.Msg = c.String()
	sv.st.StructuredError = text
	sv.dirty = true
}

// replicaOf is replica k of role, or nil.
func (sv *supervisor) replicaOf(role string, k int) *replica {
	for _, r := range sv.all {
		if r.role.req.Name == role && r.req.ID == k {
			return r
		}
	}
	return nil
}
