package ranks

import (
	"slices"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// NodeReport is what one replica of a failed app reported, for RootCause: a torchrun
// node (its workers are the ranks), or a plain replica (Plain: the replica is the
// process that failed, a script run by python, a shell).
type NodeReport struct {
	// Role is the replica's role, Replica its index; NProc its nproc_per_node (0 if
	// unknown, or not torchrun).
	Role           string
	Replica, NProc int
	// GroupRank is the node's group rank when known otherwise (the workers' own
	// GROUP_RANK, a rendezvous block), else -1.
	GroupRank int
	// Failures is what its stderr lines said.
	Failures *Failures
	// Exits are when the node's workers exited, by pid, when the scheduler saw it
	// (a local supervisor does); nil when unknown.
	Exits map[int]time.Time
	// Hosted is set when the scheduler saw a process of the job itself listen on
	// the rendezvous port that this node could not bind: the node's failure to bind
	// was the normal one of a node whose peer on the same machine hosts the store.
	Hosted bool
	// Plain is set for a replica that is not a torchrun node: its own tracebacks
	// and its own end are its failure, named "ROLE/REPLICA".
	Plain bool
	// Exit is how a plain replica ended, when it failed on its own (not stopped by
	// the scheduler); nil when it did not fail, or is not known to have.
	Exit *Exit
}

// Exit is how a replica's process ended, as its scheduler saw it.
type Exit struct {
	// Code is its exit code (a shell's 128+N included); Signal the signal that
	// killed it, 0 when none did.
	Code, Signal int
	// OOM is set when the kernel's OOM killer killed it (its cgroup, or the
	// container runtime, says so).
	OOM bool
	// Time is when it ended; Exact is set when that is when the scheduler saw the
	// process exit, not a later look at it.
	Time  time.Time
	Exact bool
}

// Cause is the root cause of a failed app: the first failure of a rank, or of a
// plain replica.
type Cause struct {
	// Role and Replica are the replica (torchrun node) where it happened.
	Role    string
	Replica int
	// Plain is set when the replica is not a torchrun node: the cause is named by
	// its role and index ("python/0: ValueError: ...").
	Plain bool
	// Rank is the global rank that failed first, -1 if it cannot be told; Ranks then
	// are the ranks it may be (the node's failed ranks).
	Rank  int
	Ranks []int
	// What is what happened: the original exception's line ("RuntimeError: ..."),
	// "exit code 3", "killed by SIGSEGV", or "rendezvous port N is in use".
	What string
	// Where is the innermost frame of its traceback, "FILE:LINE in FUNC", if any.
	Where string
	// Traceback is the traceback that ends with What, if any.
	Traceback []string
	// Time is when it happened, as well as it is known; Began, when its traceback
	// began.
	Time, Began time.Time
	// Local is set when the traceback's lines carried the rank's prefix.
	Prefixed bool
}

// String is the cause as wick shows it: "rank 3: RuntimeError: ...", "python/0:
// exit code 3".
func (c Cause) String() string {
	switch {
	case c.Plain:
		return c.Role + "/" + strconv.Itoa(c.Replica) + ": " + c.What
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

// SummaryTime is how torchrun prints a failure's time (datetime.isoformat(sep="_")
// of a whole second, in the node's local time).
const SummaryTime = "2006-01-02_15:04:05"

// RootCause picks the first failure of a failed app from its replicas' reports:
//
//  1. A rendezvous port that no node could bind (every node says so, or some node
//     does and no worker failed): another program holds it, and whatever failed
//     next followed from that.
//  2. Else the failure that happened first, of every kind and replica: a traceback
//     (by the time its exception line was written), a worker or replica killed by a
//     signal, one that exited with a code of its own (sys.exit(3): no traceback).
//     Times the scheduler saw (a line's, an exit the supervisor watched) come before
//     torchrun's summary's (its monitor's whole second, up to 5 s late): a failure
//     known only from a summary wins only where nothing has an exact time.
//  3. A collective that failed because a peer was gone (gloo's "Connection closed by
//     peer", a broken pipe, NCCL's abort) is never the cause while another failure
//     is known: it is the cause only where it is all there is.
//
// ok is false when the reports say nothing of a failure.
func RootCause(nodes []NodeReport) (c Cause, ok bool) {
	if port, ok := commonUnbound(torchrunNodes(nodes)); ok {
		n := nodes[0]
		for _, x := range nodes {
			if !x.Plain {
				n = x
				break
			}
		}
		return Cause{Role: n.Role, Replica: n.Replica, Rank: -1, What: PortInUse(port)}, true
	}
	var cands []candidate
	for i := range nodes {
		n := &nodes[i]
		if n.Plain {
			cands = append(cands, n.plainCandidates()...)
		} else {
			cands = append(cands, n.torchrunCandidates()...)
		}
	}
	var best *candidate
	for i := range cands {
		if x := &cands[i]; best == nil || x.before(best) {
			best = x
		}
	}
	if best == nil {
		return Cause{}, false
	}
	return best.c, true
}

// candidate is a failure RootCause weighs.
type candidate struct {
	c Cause
	// exact is set when c.Time is when it happened (not torchrun's summary's second);
	// secondary when it is a peer's consequence; root when torchrun's summary put it
	// under "Root Cause".
	exact, secondary, root bool
	// kind orders failures seen at one time by what they say: a traceback, a
	// signal, an exit code.
	kind int
}

// Kinds of candidate, in the order they win a tie.
const (
	kindTraceback = iota
	kindSignal
	kindExit
)

// before reports whether x is a better cause than y: not secondary over secondary,
// then exact times over summary ones, then the earlier; at a tie, the kind that says
// more, then torchrun's own choice.
func (x *candidate) before(y *candidate) bool {
	switch {
	case x.secondary != y.secondary:
		return !x.secondary
	case x.exact != y.exact:
		return x.exact
	case !x.c.Time.Equal(y.c.Time):
		return x.c.Time.Before(y.c.Time)
	case x.kind != y.kind:
		return x.kind < y.kind
	}
	return x.root && !y.root
}

// torchrunNodes are the nodes that run torchrun.
func torchrunNodes(nodes []NodeReport) []NodeReport {
	var out []NodeReport
	for _, n := range nodes {
		if !n.Plain {
			out = append(out, n)
		}
	}
	return out
}

// plainCandidates are the failures of a plain replica: the last traceback it wrote
// (a Python process dies of its last one, and exits 1), else its exit code, else
// the signal that killed it.
func (n *NodeReport) plainCandidates() []candidate {
	e := n.Exit
	if e == nil {
		return nil
	}
	base := Cause{Role: n.Role, Replica: n.Replica, Plain: true, Rank: -1, Time: e.Time}
	if e.Signal != 0 {
		c := base
		c.What = "killed by " + signalName(e.Signal)
		if e.OOM {
			c.What = "killed by the kernel's OOM killer (" + signalName(e.Signal) + ")"
		}
		return []candidate{{c: c, exact: e.Exact, kind: kindSignal}}
	}
	if n.Failures != nil {
		if tbs := n.Failures.WorkerTracebacks(); len(tbs) > 0 && e.Code == 1 {
			tb := tbs[len(tbs)-1]
			c := n.cause(tb)
			c.Plain, c.Rank, c.Ranks = true, -1, nil
			return []candidate{{c: c, exact: true, secondary: tb.Secondary()}}
		}
	}
	c := base
	c.What = "exit code " + strconv.Itoa(e.Code)
	return []candidate{{c: c, exact: e.Exact, kind: kindExit}}
}

// torchrunCandidates are the failures of a torchrun node's workers: their tracebacks,
// the signals that killed some (torchrun's summary), the exit codes of those that
// exited with one of their own and wrote no traceback.
func (n *NodeReport) torchrunCandidates() []candidate {
	f := n.Failures
	if f == nil {
		return nil
	}
	var out []candidate
	tbs := f.WorkerTracebacks()
	for _, tb := range tbs {
		out = append(out, candidate{c: n.cause(tb), exact: true, secondary: tb.Secondary()})
	}
	for _, s := range f.Summary {
		if s.Rank < 0 || s.ExitCode == 0 {
			continue
		}
		t, exact := n.Exits[s.PID]
		if !exact {
			t, _ = time.ParseInLocation(SummaryTime, s.Time, time.Local)
		}
		x := candidate{c: Cause{Role: n.Role, Replica: n.Replica, Rank: s.Rank, Time: t}, exact: exact, root: s.Root}
		switch {
		case s.Signal() != "":
			x.c.What, x.kind = "killed by "+s.Signal(), kindSignal
		case s.ExitCode == 1 && len(tbs) > 0:
			continue // an exception's exit: its traceback is the candidate
		default:
			x.c.What, x.kind = "exit code "+strconv.Itoa(s.ExitCode), kindExit
		}
		out = append(out, x)
	}
	return out
}

// signalName names signal sig ("SIGSEGV").
func signalName(sig int) string {
	if name := unix.SignalName(unix.Signal(sig)); name != "" {
		return name
	}
	return "signal " + strconv.Itoa(sig)
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
	what := tb.Origin
	if what == "" {
		what = tb.Exception
	}
	c := Cause{Role: n.Role, Replica: n.Replica, Rank: -1, What: what, Where: tb.Frame, Traceback: tb.Lines, Time: tb.Time, Began: tb.Began, Prefixed: tb.Local >= 0}
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
