package local

import (
	"bytes"
	"os"
	"strconv"
	"strings"

	"github.com/wick-dev/wick/engine/ranks"
	"github.com/wick-dev/wick/engine/sched"
	"github.com/wick-dev/wick/engine/spec"
)

// A torchrun node whose workers failed does not end: torch 1.13's agent stops its
// other workers and then waits in its exit barrier for the other nodes' agents, up to
// exit_barrier_timeout (300 s, torch/distributed/elastic/agent/server/api.py,
// SimpleElasticAgent._invoke_run), before it prints its failure summary and exits.
// Its peers meanwhile wait for the failed ranks in their collectives (gloo's timeout is
// 30 minutes) or in init_process_group. The app would read RUNNING for minutes.
//
// The supervisor sees the failure as it happens, in two ways:
//
//   - The workers are its descendants (workers.go): the moment one exits, its pidfd
//     wakes the watch, which reads the exit status the zombie still holds
//     (/proc/PID/stat's exit_code, proc(5)) before torchrun reaps it (torchrun polls
//     its workers every monitor_interval, 5 s by default).
//   - torchrun's agent logs each failed round of its workers on its stderr, before
//     the barrier: "ERROR:torch.distributed.elastic.multiprocessing.api:failed
//     (exitcode: 1) local_rank: 0 (pid: 29562) of binary: /usr/bin/python3.11"
//     (torch/distributed/elastic/multiprocessing/api.py, SubprocessContext._poll);
//     it is read as it is written (logs.Writer.Tap).
//
// A node with no restarts left (torchrun's --max_restarts, 0 by default and in
// dist.ddp) whose worker failed has failed: it is FAILED at once, and the role's
// retry policy decides as for a replica that exited (TorchX's default, APPLICATION
// with no retries: the app fails and the other replicas are stopped).

// agentFailedMark is in the line torchrun's agent logs when a worker failed.
const agentFailedMark = "failed (exitcode: "

// isAgentFailure reports whether line is torchrun's agent reporting a failed worker.
func isAgentFailure(line []byte) bool {
	i := bytes.Index(line, []byte(agentFailedMark))
	return i >= 0 && bytes.Contains(line[i:], []byte(" local_rank: ")) && !bytes.HasPrefix(bytes.TrimSpace(line), []byte("["))
}

// tapStderr reads the stderr of attempt a of r as it is written: for the rendezvous
// port a node could not bind (rdzvheld.go), and for a torchrun node, its agent's
// report of a failed worker.
func (sv *supervisor) tapStderr(r *replica, a int) {
	if r.w == nil {
		return
	}
	rdzv := sv.rendezvousTap(r, a)
	agent := runsTorchrun(r.req.Argv)
	if rdzv == nil && !agent {
		return
	}
	r.agentFailures.Store(0)
	r.w.Tap(sched.Stderr, func(attempt int, lines []byte) bool {
		if attempt != a {
			return attempt < a // the last lines of the attempt before: ours follow
		}
		if rdzv != nil && !rdzv(lines) {
			rdzv = nil
		}
		if agent && bytes.Contains(lines, []byte(agentFailedMark)) {
			for line := range bytes.Lines(lines) {
				if isAgentFailure(line) {
					r.agentFailures.Add(1)
					sv.wakeNodes()
				}
			}
		}
		return rdzv != nil || agent
	})
}

// wakeNodes asks the supervisor's loop to look at its nodes' failures (checkNodes).
func (sv *supervisor) wakeNodes() {
	select {
	case sv.learned <- struct{}{}:
	default: // one wake-up is enough: learnRanks looks at every node
	}
}

// maxRestartsOf is a torchrun node's --max_restarts (0 when not given, as torchrun's
// default).
func maxRestartsOf(argv []string) int {
	n, err := strconv.Atoi(ranks.Flag(argv, "max_restarts"))
	if err != nil || n < 0 {
		return 0
	}
	return n
}

// checkNodes fails, at once, the running torchrun nodes whose workers failed with no
// restart of theirs left.
func (sv *supervisor) checkNodes() {
	for _, r := range sv.all {
		if r.phase != running || r.stopping || r.nodeFailed || !runsTorchrun(r.req.Argv) {
			continue
		}
		restarts := maxRestartsOf(r.req.Argv)
		rounds := int(r.agentFailures.Load())
		failed := rounds > restarts
		if !failed && restarts == 0 && r.workers != nil {
			failed = r.workers.Failed() > 0
		}
		if failed {
			sv.nodeFailed(r)
		}
	}
}

// nodeFailed marks node r FAILED while its torchrun still runs (in its exit barrier),
// and applies its role's retry policy as to a replica that failed: a restart, or the
// app's failure, which stops every replica (r too).
func (sv *supervisor) nodeFailed(r *replica) {
	r.nodeFailed = true
	r.st.State = spec.Failed
	sv.dirty = true
	sv.logf("%s: its workers failed; torchrun waits in its exit barrier: the node is failed now", r.name())
	if sv.target != 0 {
		return
	}
	if sv.retry(r) {
		return
	}
	sv.target = spec.Failed
	sv.st.Msg = r.name() + ": its workers failed"
	sv.st.StructuredError = sv.st.Msg
	// The cause as far as it is known now, shown while the others stop; the end
	// reads it again (rootCause).
	if c, ok := ranks.RootCause(sv.failureReports(sv.torchrunReports())); ok {
		sv.applyCause(c)
	}
	sv.stopAll()
}

// zombieExitStatus reads the exit status (as wait(2) reports it) of pid, a process
// that has exited and is not reaped yet: proc(5)'s /proc/PID/stat field 52
// (exit_code, Linux 3.5+). ok is false when it is gone or not a zombie.
func zombieExitStatus(pid int) (status int, ok bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, false
	}
	s := string(b)
	k := strings.LastIndexByte(s, ')')
	if k < 0 {
		return 0, false
	}
	f := strings.Fields(s[k+1:])
	// f[0] is field 3 (state); exit_code is field 52.
	if len(f) < 50 || f[0] != "Z" {
		return 0, false
	}
	n, err := strconv.Atoi(f[49])
	if err != nil {
		return 0, false
	}
	return n, true
}
