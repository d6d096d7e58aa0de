package slurm

import (
	"context"
	"os"
	"strings"
	"time"

	"github.com/wick-dev/wick/engine/ranks"
	"github.com/wick-dev/wick/engine/sched"
	"github.com/wick-dev/wick/engine/spec"
)

// The root cause of a failed torchrun job on Slurm, as the local schedulers and
// local_docker name it ("rank 3: RuntimeError: ...", "rank 2: killed by SIGKILL"):
// from each node's stderr file, its workers' tracebacks and torchrun's failure
// summary (ranks.RootCause). A worker that raised writes its traceback there with or
// without @record (record re-raises). Slurm does not say in which order a node's
// workers ended: the replica's wrapper watches them (.watch, see wrapper), and two
// failed workers of one node with unprefixed tracebacks are told apart by when each
// began to end, as on local; where the wrapper saw them at one sample they read "rank
// 2 or 3".

// causeTailLines bounds the stderr lines of a node read for its failure: its summary
// and its workers' tracebacks are at the end.
const causeTailLines = 4000

// causeTimeout bounds the reading of the nodes' stderr files.
const causeTimeout = 10 * time.Second

// torchrunCause names the root cause of a failed app, from the stderr of its replicas:
// every node of its torchrun roles, and each other replica that failed (a plain
// script's traceback, "python/0: ValueError: ...", or its exit: "python/0: exit code
// 3"), the first failure by time. Its message and error become the cause's, and so
// does the error of the replica where it happened.
func (s *Scheduler) torchrunCause(ctx context.Context, appID string, st *spec.AppStatus, app *spec.AppDef) {
	if st.State != spec.Failed || app == nil || refusedStatus(st, app) {
		return
	}
	torchrun := map[string]spec.Role{}
	for _, role := range app.Roles {
		if ranks.RunsTorchrun(append([]string{role.Entrypoint}, role.Args...)) {
			torchrun[role.Name] = role
		}
	}
	ctx, cancel := context.WithTimeout(ctx, causeTimeout)
	defer cancel()
	rec, _ := s.loadRecord(appID)
	recorded := errorFiles(rec)
	exitFiles := map[replicaKey]string{}
	if rec != nil {
		for _, r := range rec.Replicas {
			exitFiles[replicaKey{r.Role, r.Replica}] = r.ExitFile
		}
	}
	var best *ranks.Cause
	var bestRole string
	for _, rs := range st.Roles {
		var nodes []ranks.NodeReport
		if role, ok := torchrun[rs.Role]; ok {
			nproc := ranks.NProcPerNode(append([]string{role.Entrypoint}, role.Args...))
			for _, r := range rs.Replicas {
				n := ranks.NodeReport{Replica: r.ID, NProc: nproc, GroupRank: -1, Failures: s.nodeFailures(ctx, appID, rs.Role, r.ID)}
				if r.GroupRank != nil {
					n.GroupRank = *r.GroupRank
				}
				if exit := exitFiles[replicaKey{rs.Role, r.ID}]; exit != "" {
					watchWorkers(&n, exit)
				}
				nodes = append(nodes, n)
			}
		} else {
			for _, r := range rs.Replicas {
				if r.State != spec.Failed || r.ExitCode == nil {
					continue
				}
				if recorded[replicaKey{rs.Role, r.ID}] {
					return // its error file (@record) says what failed, as on local
				}
				nodes = append(nodes, ranks.NodeReport{Role: rs.Role, Replica: r.ID, GroupRank: -1, Plain: true,
					Exit: shellExit(*r.ExitCode, r.Ended), Failures: s.nodeFailures(ctx, appID, rs.Role, r.ID)})
			}
		}
		if c, ok := ranks.RootCause(nodes); ok && (best == nil || c.Time.Before(best.Time)) {
			best, bestRole = &c, rs.Role
		}
	}
	if best == nil {
		return
	}
	best.Apply(st, bestRole)
}

// shellExit is how a plain replica ended, from the status its Slurm wrapper (a shell)
// recorded: 128+N is signal N, as a shell's $? says it. Slurm's end time is to the
// second, not when the process exited.
func shellExit(code int, ended time.Time) *ranks.Exit {
	e := &ranks.Exit{Code: code, Time: ended}
	if code > 128 && code < 128+65 {
		e.Signal = code - 128
	}
	return e
}

// replicaKey names a replica of an app.
type replicaKey struct {
	role string
	id   int
}

// errorFiles says which replicas of the app (its record, rec) left a torchelastic
// error file (an @record or TORCHELASTIC_ERROR_FILE writer's): their status already
// holds its message (applyExitFile), which is the error they name themselves.
func errorFiles(rec *record) map[replicaKey]bool {
	if rec == nil {
		return nil
	}
	out := map[replicaKey]bool{}
	for _, r := range rec.Replicas {
		if fi, err := os.Stat(errorFile(r.ExitFile)); err == nil && fi.Size() > 0 {
			out[replicaKey{r.Role, r.Replica}] = true
		}
	}
	return out
}

// nodeFailures reads the end of a node's stderr file.
func (s *Scheduler) nodeFailures(ctx context.Context, appID, role string, k int) *ranks.Failures {
	f := &ranks.Failures{}
	it, err := s.Logs(ctx, appID, role, k, sched.LogOptions{Streams: sched.Stderr, Tail: causeTailLines})
	if err != nil {
		return f
	}
	defer it.Close()
	for {
		l, err := it.Next(ctx)
		if err != nil {
			break
		}
		f.Feed(strings.TrimSuffix(l.Text, "\r"), l.Time)
	}
	return f
}

// maxRefusedTail is how much of the end of the batch log is read for its line of a
// port in use: nothing of the script follows that line.
const maxRefusedTail = 16 << 10

// portRefusedCause gives a failed app whose batch script stopped before srun, a
// chosen rendezvous port being in use on rank 0's node (portCheckLines), the root
// cause the local schedulers give it: "rendezvous port N is in use" as its message
// and its error. None of its replicas started: they read CANCELLED, as on local,
// saying why, and neither the batch script's exit status nor the allocation's start
// is theirs.
func portRefusedCause(rec *record, st *spec.AppStatus) {
	if rec == nil || st.State != spec.Failed || len(chosenPorts(rec.App)) == 0 || refusedStatus(st, rec.App) {
		return // refusedStatus: given already (a record's last status), the log unread
	}
	tail, _, err := readTail(rec.BatchLog, maxRefusedTail)
	if err != nil {
		return
	}
	p := portRefused(tail, rec.App)
	if p == 0 {
		return
	}
	cause := ranks.PortInUse(p)
	st.Msg, st.StructuredError = cause, cause
	for i := range st.Roles {
		for j := range st.Roles[i].Replicas {
			rep := &st.Roles[i].Replicas[j]
			rep.State, rep.ExitCode, rep.StructuredError = spec.Cancelled, nil, "not started: "+cause
			rep.Started = time.Time{} // Slurm's start is the allocation's
		}
	}
}

// refusedStatus reports whether st is that of an app stopped before srun
// (portRefusedCause): its nodes' stderr, an earlier attempt's if any, says nothing of
// this end.
func refusedStatus(st *spec.AppStatus, app *spec.AppDef) bool {
	for _, p := range chosenPorts(app) {
		if cause := ranks.PortInUse(p); st.Msg == cause && st.StructuredError == cause {
			return true
		}
	}
	return false
}
