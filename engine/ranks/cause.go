package ranks

import (
	"slices"
	"strconv"
	"strings"
	"time"
)

// NodeReport is what one torchrun node of a failed job reported, for RootCause.
type NodeReport struct {
	// Replica is the node's replica index; NProc its nproc_per_node (0 if unknown).
	Replica, NProc int
	// GroupRank is the node's group rank when known otherwise (the workers' own
	// GROUP_RANK, a rendezvous block), else -1.
	GroupRank int
	// Failures is what its lines said.
	Failures *Failures
	// Exits are when the node's workers exited, by pid, when the scheduler saw it
	// (a local supervisor does); nil when unknown.
	Exits map[int]time.Time
	// Hosted is set when the scheduler saw a process of the job itself listen on
	// the rendezvous port that this node could not bind: the node's failure to bind
	// was the normal one of a node whose peer on the same machine hosts the store.
	Hosted bool
}

// Cause is the root cause of a failed torchrun job: the first failure of a rank.
type Cause struct {
	// Replica is the node where it happened.
	Replica int
	// Rank is the global rank that failed first, -1 if it cannot be told; Ranks then
	// are the ranks it may be (the node's failed ranks).
	Rank  int
	Ranks []int
	// What is what happened: the exception line ("RuntimeError: ..."), "killed by
	// SIGKILL", or "rendezvous port N is in use".
	What string
	// Traceback is the traceback that ends with What, if any.
	Traceback []string
	// Time is when it happened, as well as it is known; Began, when its traceback
	// began.
	Time, Began time.Time
	// Local is set when the traceback's lines carried the rank's prefix.
	Prefixed bool
}

// String is the cause as wick shows it: "rank 3: RuntimeError: ...".
func (c Cause) String() string {
	switch {
	case c.Rank >= 0:
		return "rank " + strconv.Itoa(c.Rank) + ": " + c.What
	case len(c.Ranks) > 0:
		s := make([]string, len(c.Ranks))
		for i, r := range c.Ranks {
			s[i] = strconv.Itoa(r)
		}
		return "rank " + strings.Join(s, " or ") + ": " + c.What
	}
	return c.What
}

// PortInUse is the cause of a rendezvous whose port another program held.
func PortInUse(port int) string {
	return "rendezvous port " + strconv.Itoa(port) + " is in use"
}

// summaryTime is how torchrun prints a failure's time (datetime.isoformat(sep="_")
// of a whole second, in the node's local time).
const summaryTime = "2006-01-02_15:04:05"

// RootCause picks the first failure of a failed torchrun job from its nodes' reports:
//
//  1. A rendezvous port that no node could bind (every node says so, or some node
//     does and no worker failed): another program holds it, and whatever failed
//     next followed from that.
//  2. Else the earliest traceback that is not a collective failing because a peer
//     died, across nodes, by the time its exception line was written; a signal that
//     killed a worker (no traceback: the OOM killer, SIGSEGV) wins when it is known to
//     come first, or when there is no such traceback.
//  3. Else the earliest traceback of all.
//
// ok is false when the reports say nothing of a worker's failure.
func RootCause(nodes []NodeReport) (c Cause, ok bool) {
	if port, ok := commonUnbound(nodes); ok {
		return Cause{Replica: nodes[0].Replica, Rank: -1, What: PortInUse(port)}, true
	}
	type tbAt struct {
		node *NodeReport
		tb   Traceback
	}
	var primary, any *tbAt
	for i := range nodes {
		n := &nodes[i]
		if n.Failures == nil {
			continue
		}
		for _, tb := range n.Failures.WorkerTracebacks() {
			if any == nil || tb.Time.Before(any.tb.Time) {
				any = &tbAt{n, tb}
			}
			if !tb.Secondary() && (primary == nil || tb.Time.Before(primary.tb.Time)) {
				primary = &tbAt{n, tb}
			}
		}
	}
	sig, sigNode, sigExact := earliestSignal(nodes)
	switch {
	case sig != nil && (primary == nil || sigExact && sig.t.Before(primary.tb.Time)):
		return Cause{Replica: sigNode.Replica, Rank: sig.f.Rank, What: "killed by " + sig.f.Signal(), Time: sig.t}, true
	case primary != nil:
		return primary.node.cause(primary.tb), true
	case any != nil:
		return any.node.cause(any.tb), true
	}
	// No traceback, no signal: a worker that exited with a code of its own (a script
	// that is not there, sys.exit(2)). torchrun's summary still names its rank.
	if f, n, t, ok := firstExit(nodes); ok {
		return Cause{Replica: n.Replica, Rank: f.Rank, What: "exit code " + strconv.Itoa(f.ExitCode), Time: t}, true
	}
	return Cause{}, false
}

// firstExit finds, in torchrun's summaries, the worker that failed first with an exit
// code (of equal times, the one under "Root Cause"), and when.
func firstExit(nodes []NodeReport) (best Failure, node *NodeReport, at time.Time, ok bool) {
	for i := range nodes {
		n := &nodes[i]
		if n.Failures == nil {
			continue
		}
		for _, f := range n.Failures.Summary {
			if f.ExitCode <= 0 || f.Rank < 0 {
				continue
			}
			t, _ := time.ParseInLocation(summaryTime, f.Time, time.Local)
			if et, exact := n.Exits[f.PID]; exact {
				t = et
			}
			if !ok || t.Before(at) || t.Equal(at) && f.Root && !best.Root {
				best, node, at, ok = f, n, t, true
			}
		}
	}
	return best, node, at, ok
}

type signalAt struct {
	f Failure
	t time.Time
}

// earliestSignal finds the first worker killed by a signal, with when (exact when the
// scheduler saw it exit, else torchrun's second).
func earliestSignal(nodes []NodeReport) (best *signalAt, node *NodeReport, exact bool) {
	for i := range nodes {
		n := &nodes[i]
		if n.Failures == nil {
			continue
		}
		for _, f := range n.Failures.Summary {
			if f.Signal() == "" {
				continue
			}
			t, ok := n.Exits[f.PID]
			if !ok {
				t, _ = time.ParseInLocation(summaryTime, f.Time, time.Local)
			}
			if best == nil || t.Before(best.t) {
				best, node, exact = &signalAt{f, t}, n, ok
			}
		}
	}
	return best, node, exact
}

// commonUnbound returns the rendezvous port every node failed to bind.
func commonUnbound(nodes []NodeReport) (int, bool) {
	var ports []int
	said, every, past := 0, true, false
	for _, n := range nodes {
		past = past || n.Hosted || n.Failures != nil && n.Failures.pastRendezvous()
		if n.Failures == nil || len(n.Failures.Unbound) == 0 {
			every = false
			continue
		}
		if said == 0 {
			ports = slices.Clone(n.Failures.Unbound)
		} else {
			ports = slices.DeleteFunc(ports, func(p int) bool { return !slices.Contains(n.Failures.Unbound, p) })
		}
		said++
	}
	// Nodes on one machine all try to host the store, so a node that could not bind
	// is normal when another did. The port is the cause when every node says so, or
	// when some node says so and nothing shows that the job got past its store: no
	// worker failed (none ran), no agent died of anything but its rendezvous or a
	// stop signal, and the scheduler saw no process of the job hold the port. A node
	// that said nothing was then stopped before it could.
	if said == 0 || len(ports) == 0 || !every && past {
		return 0, false
	}
	return ports[0], true
}

// pastRendezvous reports whether the node's lines show that it got past its store:
// a worker failed, or its agent died of something else than its rendezvous (torch's
// Rendezvous*Error: a store that does not answer, or closes) or a stop
// (SignalException), such as a crash while starting its workers.
func (f *Failures) pastRendezvous() bool {
	if len(f.Summary) > 0 {
		return true
	}
	for _, tb := range f.Tracebacks {
		if !tb.Agent {
			return true
		}
		name, _, _ := strings.Cut(tb.Exception, ":")
		name = name[strings.LastIndexByte(name, '.')+1:]
		if !strings.HasPrefix(name, "Rendezvous") && name != "SignalException" {
			return true
		}
	}
	return false
}

// cause names the rank of a traceback of node n.
func (n *NodeReport) cause(tb Traceback) Cause {
	c := Cause{Replica: n.Replica, Rank: -1, What: tb.Exception, Traceback: tb.Lines, Time: tb.Time, Began: tb.Began, Prefixed: tb.Local >= 0}
	c.Rank, c.Ranks = n.RankOf(tb)
	return c
}

// RankOf says which global rank wrote a traceback of the node: the local rank of its
// prefix, or for an unprefixed one the node's only failed worker, or the worker that
// exited in the same order among them as the traceback ended among the node's (the
// first to raise exits first; the ranks that fail in gloo after it, later). When it
// cannot be told, rank is -1 and maybe are the node's failed ranks.
func (n *NodeReport) RankOf(tb Traceback) (rank int, maybe []int) {
	f := n.Failures
	if tb.Local >= 0 {
		for _, s := range f.Summary {
			if s.Local == tb.Local {
				return s.Rank, nil
			}
		}
		if g := n.groupRank(); g >= 0 && n.NProc > 0 {
			return g*n.NProc + tb.Local, nil
		}
		return -1, nil
	}
	var failed []Failure
	for _, s := range f.Summary {
		if s.ExitCode > 0 {
			failed = append(failed, s)
		}
	}
	switch {
	case len(failed) == 1:
		return failed[0].Rank, nil
	case len(failed) == 0 && n.NProc == 1 && n.groupRank() >= 0:
		return n.groupRank(), nil
	case len(failed) == 0:
		return -1, nil
	}
	var ranks []int
	for _, s := range failed {
		ranks = append(ranks, s.Rank)
	}
	slices.Sort(ranks)
	// Which unprefixed worker traceback of the node it is, in the order they ended.
	idx := -1
	var ended int
	for _, o := range f.WorkerTracebacks() {
		if o.Local >= 0 {
			continue
		}
		if o.Start == tb.Start && o.End == tb.End {
			idx = ended
		}
		ended++
	}
	known := 0
	for _, s := range failed {
		if _, ok := n.Exits[s.PID]; ok {
			known++
		}
	}
	if idx < 0 || idx >= len(failed) || known != len(failed) {
		return -1, ranks
	}
	slices.SortStableFunc(failed, func(a, b Failure) int { return n.Exits[a.PID].Compare(n.Exits[b.PID]) })
	// Workers seen to exit at one moment (the watch woke once for both, as on a busy
	// machine) have no order: the traceback is one of theirs, not told which.
	t := n.Exits[failed[idx].PID]
	var tied []int
	for _, s := range failed {
		if n.Exits[s.PID].Equal(t) {
			tied = append(tied, s.Rank)
		}
	}
	if len(tied) > 1 {
		slices.Sort(tied)
		return -1, tied
	}
	return failed[idx].Rank, nil
}

// groupRank is the node's group rank: as known, else read off its summary.
func (n *NodeReport) groupRank() int {
	if n.GroupRank >= 0 {
		return n.GroupRank
	}
	if n.NProc > 0 && n.Failures != nil {
		for _, s := range n.Failures.Summary {
			if s.Rank >= s.Local && s.Local >= 0 {
				return (s.Rank - s.Local) / n.NProc
			}
		}
	}
	return -1
}

// RankOfErrorFile says which global rank wrote the error file at path, a worker's
// (@record) of local rank local on the node: as torchrun's summary names its file, else
// from the node's group rank. -1 when it cannot be told.
func (n *NodeReport) RankOfErrorFile(path string, local int) int {
	if n.Failures != nil {
		for _, s := range n.Failures.Summary {
			if s.ErrorFile == path {
				return s.Rank
			}
		}
		for _, s := range n.Failures.Summary {
			if local >= 0 && s.Local == local {
				return s.Rank
			}
		}
	}
	if g := n.groupRank(); g >= 0 && n.NProc > 0 && local >= 0 && local < n.NProc {
		return g*n.NProc + local
	}
	return -1
}

// WroteErrorFile reports whether torchrun's summary of the node names the error file
// at path.
func (n *NodeReport) WroteErrorFile(path string) bool {
	if n.Failures == nil {
		return false
	}
	for _, s := range n.Failures.Summary {
		if s.ErrorFile == path {
			return true
		}
	}
	return false
}

// ErrorFileCause is the cause of a failure that a worker's error file (@record)
// recorded: rank's message msg ("RuntimeError: ..."), as RootCause words it. The
// traceback is the one the node's lines hold for it (so that its lines are shown as
// the rank's), else callstack, the error file's.
func (n *NodeReport) ErrorFileCause(rank int, msg, callstack string, t time.Time) Cause {
	c := Cause{Replica: n.Replica, Rank: rank, What: msg, Time: t}
	if n.Failures != nil {
		tbs := n.Failures.WorkerTracebacks()
		for i := len(tbs) - 1; i >= 0; i-- {
			tb := tbs[i]
			if !strings.HasSuffix(tb.Exception, msg) {
				continue
			}
			if r, _ := n.RankOf(tb); r >= 0 && r != rank {
				continue
			}
			c.Traceback, c.Began, c.Prefixed = tb.Lines, tb.Began, tb.Local >= 0
			if !tb.Time.IsZero() {
				c.Time = tb.Time
			}
			return c
		}
	}
	if callstack = strings.TrimRight(callstack, "\n"); callstack != "" {
		c.Traceback = strings.Split(callstack, "\n")
	}
	return c
}
