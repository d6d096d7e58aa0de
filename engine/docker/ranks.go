package docker

import (
	"context"
	"path"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/wick-dev/wick/engine/ranks"
	"github.com/wick-dev/wick/engine/sched"
	"github.com/wick-dev/wick/engine/spec"
)

// torchrun roles on local_docker: which ranks each node got, and why a job failed,
// as the local schedulers say them (engine/ranks), from what the Engine keeps.
//
//   - Group ranks. Under c10d's rendezvous (dist.ddp's) torch 1.13 gives the nodes
//     their group ranks in the sorted order of their descriptors, (fqdn, agent pid,
//     local id): dynamic_rendezvous.py's _mark_rendezvous_complete enumerates
//     sorted(state.participants). Each container is a host of its own, named after
//     its replica, so the order of the containers' host names is the order of the
//     group ranks; the Engine knows the names at any time, even after the app ended,
//     and no process needs watching (no supervisor runs beside the containers).
//   - The root cause of a failed app: the oldest error file, a worker's (@record),
//     named with its global rank from its node's torchrun summary; without one, the
//     workers' tracebacks and torchrun's summaries on the nodes' stderr, read through
//     the Engine (ranks.RootCause). Docker stamps each line when it reads it; the
//     order of the nodes' exits is not known, but a sampler in each container
//     watched its workers (see watch.go), so two failed workers of one node with
//     unprefixed tracebacks are told apart by when each began to end, or read "rank
//     2 or 3" where its samples did not order them.

// causeTailLines bounds the stderr lines of a node read for its failure.
const causeTailLines = 4000

// maxFailuresCache bounds the nodes' failures remembered across Describe calls.
const maxFailuresCache = 1024

// roleArgv is a role's command: entrypoint and arguments.
func roleArgv(r spec.Role) []string { return append([]string{r.Entrypoint}, r.Args...) }

// groupRanks sets the group rank of each replica of the app's torchrun roles that
// rendezvous with c10d across several containers: the place of its host name among
// its role's.
func groupRanks(d *sched.Description) {
	if d.App == nil {
		return
	}
	for _, role := range d.App.Roles {
		argv := roleArgv(role)
		if role.NumReplicas < 2 || !ranks.RunsTorchrun(argv) || ranks.Flag(argv, "rdzv_backend") != "c10d" {
			continue
		}
		for i := range d.Status.Roles {
			rs := &d.Status.Roles[i]
			if rs.Role != role.Name {
				continue
			}
			names := make([]string, 0, len(rs.Replicas))
			for _, r := range rs.Replicas {
				names = append(names, r.Hostname)
			}
			slices.Sort(names)
			if len(names) != role.NumReplicas || slices.Contains(names, "") || len(slices.Compact(slices.Clone(names))) != len(names) {
				continue // a missing or shared host name: the order is not known
			}
			for k := range rs.Replicas {
				g, _ := slices.BinarySearch(names, rs.Replicas[k].Hostname)
				rs.Replicas[k].GroupRank = spec.IntPtr(g)
			}
		}
	}
}

// torchrunCause names the root cause of a failed app, as the local schedulers do: the
// first failure by time of its torchrun nodes ("rank 3: RuntimeError: ...") and of
// its other replicas that failed on their own (a plain script's traceback on its
// stderr, "python/0: ValueError: ...", else its end: "python/0: exit code 3",
// "killed by SIGSEGV", the OOM killer as such). A plain replica's error file
// (@record) keeps its error, as on local.
func (s *Scheduler) torchrunCause(ctx context.Context, d *sched.Description, reps []*replica) {
	st := &d.Status
	if st.State != spec.Failed || d.App == nil {
		return
	}
	torchrun := map[string]spec.Role{}
	for _, role := range d.App.Roles {
		if ranks.RunsTorchrun(roleArgv(role)) {
			torchrun[role.Name] = role
		}
	}
	byKey := map[string]*replica{}
	for _, r := range reps {
		byKey[r.role()+"/"+strconv.Itoa(r.id())] = r
	}
	var best *ranks.Cause
	var bestRole string
	for _, rs := range st.Roles {
		var c ranks.Cause
		var ok bool
		if role, tr := torchrun[rs.Role]; tr {
			c, ok = s.roleCause(ctx, role, rs, byKey)
		} else {
			nodes, files := s.plainReports(ctx, rs, byKey)
			if files {
				return // its error file says what failed
			}
			c, ok = ranks.RootCause(nodes)
		}
		if ok && (best == nil || c.Time.Before(best.Time)) {
			best, bestRole = &c, rs.Role
		}
	}
	if best == nil {
		return
	}
	best.Apply(st, bestRole)
}

// plainReports are the reports of a plain role's replicas that failed: their exit as
// the Engine saw it and their stderr. files is set when one of them wrote an error
// file (@record): its error stands.
func (s *Scheduler) plainReports(ctx context.Context, rs spec.RoleStatus, byKey map[string]*replica) (nodes []ranks.NodeReport, files bool) {
	for _, rst := range rs.Replicas {
		r := byKey[rs.Role+"/"+strconv.Itoa(rst.ID)]
		if rst.State != spec.Failed || r == nil || r.info == nil || r.info.State == nil || r.info.State.Running {
			continue
		}
		if r.err.first != "" {
			return nil, true
		}
		code := r.info.State.ExitCode
		e := &ranks.Exit{Code: code, OOM: r.info.State.OOMKilled, Time: parseTime(r.info.State.FinishedAt), Exact: true}
		if code > 128 && code < 128+65 { // the Engine's 128+N for a process killed by signal N
			e.Signal = code - 128
		}
		nodes = append(nodes, ranks.NodeReport{Role: rs.Role, Replica: rst.ID, GroupRank: -1, Plain: true, Exit: e, Failures: s.nodeFailures(ctx, r)})
	}
	return nodes, false
}

// roleCause is the first failure of a torchrun role's nodes: a rendezvous port in
// use, else the oldest worker's error file, else what the nodes' stderr says.
func (s *Scheduler) roleCause(ctx context.Context, role spec.Role, rs spec.RoleStatus, byKey map[string]*replica) (ranks.Cause, bool) {
	nproc := ranks.NProcPerNode(roleArgv(role))
	var nodes []ranks.NodeReport
	var oldest *replica // the node with the role's oldest error file
	for _, rst := range rs.Replicas {
		r := byKey[rs.Role+"/"+strconv.Itoa(rst.ID)]
		if r == nil || r.info == nil || r.info.State == nil || r.info.State.Running {
			continue
		}
		n := ranks.NodeReport{Replica: rst.ID, NProc: nproc, GroupRank: -1, Failures: s.nodeFailures(ctx, r)}
		if rst.GroupRank != nil {
			n.GroupRank = *rst.GroupRank
		}
		if watches(roleArgv(role), errorFileOf(r.info)) && unprefixed(n.Failures) {
			n.Workers = s.nodeWorkers(ctx, r, n.Failures.FirstBegan())
		}
		nodes = append(nodes, n)
		if r.err.first != "" && (oldest == nil || r.err.at.Before(oldest.err.at)) {
			oldest = r
		}
	}
	c, ok := ranks.RootCause(nodes)
	if ok && c.Rank < 0 && len(c.Traceback) == 0 && strings.HasPrefix(c.What, "rendezvous port ") {
		return c, true
	}
	// A worker killed by SIGKILL in a container the kernel's OOM killer acted in
	// (its memory limit, memMB): the OOM killer killed it.
	if r := byKey[rs.Role+"/"+strconv.Itoa(c.Replica)]; ok && c.What == "killed by SIGKILL" && r != nil && r.info != nil && r.info.State != nil && r.info.State.OOMKilled {
		c.What = "killed by the kernel's OOM killer (SIGKILL)"
	}
	// The oldest worker's error file, when there is one, as on local.
	if fc, fok := errorFileCause(nodes, oldest); fok {
		return fc, true
	}
	return c, ok
}

// errorFileCause is the cause a worker's error file gives, named with its rank; ok is
// false when the oldest file is not a worker's or its rank cannot be told.
func errorFileCause(nodes []ranks.NodeReport, oldest *replica) (ranks.Cause, bool) {
	if oldest == nil || oldest.err.path == errorFileOf(oldest.info) {
		return ranks.Cause{}, false
	}
	p := oldest.err.path
	local, err := strconv.Atoi(path.Base(path.Dir(p)))
	if err != nil {
		local = -1
	}
	for i := range nodes {
		n := &nodes[i]
		if n.Replica != oldest.id() {
			continue
		}
		rank := n.RankOfErrorFile(p, local)
		msg := firstLine(spec.ErrorMessage(oldest.err.first))
		if rank < 0 || msg == "" {
			return ranks.Cause{}, false
		}
		return n.ErrorFileCause(rank, msg, ranks.Callstack(oldest.err.first), oldest.err.at), true
	}
	return ranks.Cause{}, false
}

// nodeFailures reads the end of a stopped container's stderr.
func (s *Scheduler) nodeFailures(ctx context.Context, r *replica) *ranks.Failures {
	key := r.sum.ID + "@" + r.info.State.FinishedAt
	if f, ok := s.failures.get(key); ok {
		return f
	}
	f := &ranks.Failures{}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	it, err := s.Logs(ctx, r.sum.Labels[LabelAppID], r.role(), r.id(), sched.LogOptions{Streams: sched.Stderr, Tail: causeTailLines})
	if err != nil {
		return f
	}
	defer it.Close()
	for {
		l, err := it.Next(ctx)
		if err != nil {
			break
		}
		f.Feed(l.Text, l.Time)
	}
	if ctx.Err() == nil {
		s.failures.put(key, f, maxFailuresCache)
	}
	return f
}
