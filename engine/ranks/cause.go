package ranks

import (
	"cmp"
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
	// Downs are when the node's workers began to end while they ran, by pid (their
	// threads began to go for good: a Python process finalizing after its traceback),
	// when the scheduler saw it; nil when unknown. A worker that raised may finalize
	// for seconds and exit after a peer that failed of it: its Down comes first.
	Downs map[int]time.Time
	// Workers are the node's workers by pid as the scheduler watched them (Slurm's
	// replica wrapper does), every worker it saw, not only the failed ones torchrun's
	// summary lists; nil when unknown. They say which worker wrote each unprefixed
	// traceback (see rankByWorkers).
	Workers map[int]Watched
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

// Watched is what a scheduler's sampler saw of one worker of a torchrun node. Its
// times are the stamps of samples that look at every worker, then at the node's log
// files, and stamp all they saw changed with one time (the lines' times included): an
// event seen at a sample happened after the sample before it (Prev) and by the one
// that saw it, and events seen at one sample have no order.
type Watched struct {
	// Rank is its global rank.
	Rank int
	// Down is the sample that saw its thread count begin to fall for good while it
	// ran (a Python process finalizing after its traceback), DownPrev the sample
	// before it, and Settled the sample that saw its last fall; zero when its count
	// did not fall before it went (it went at once, or between two samples).
	DownPrev, Down, Settled time.Time
	// Fell is the sample that saw its count fall first from when the node's first
	// traceback began on (the first argument of watch.Parse), even a fall that a
	// later rise undid, or, where its count had been falling since before then with
	// no rise between, the first fall of that run; FellPrev the sample before it;
	// zero when its count did not fall from then on. A worker that raised may start
	// a thread while it finalizes (Go's runtime does; a Python atexit may), so its
	// fall is not forgotten: where a rise undid it, Down is later or zero, and Fell
	// is where its end may have begun.
	FellPrev, Fell time.Time
	// Gone is the sample that saw it gone, GonePrev the one before; zero when not
	// seen gone.
	GonePrev, Gone time.Time
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
	if n.Failures != nil && len(n.Failures.Timeouts) > 0 {
		// NCCL's watchdog took the process down (SIGABRT) after it said why.
		to := n.Failures.Timeouts[0]
		c := base
		c.What, c.Time, c.Traceback = to.What, to.Time, []string{to.Line}
		return []candidate{{c: c, exact: true}}
	}
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
	out := n.timeoutCandidates()
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

// timeoutCandidates are the collectives' timeouts that the node's workers wrote as
// log lines (NCCL's watchdog, which then takes the process down with SIGABRT): the
// rank of the line's prefix, else the one it names.
func (n *NodeReport) timeoutCandidates() []candidate {
	var out []candidate
	for _, to := range n.Failures.Timeouts {
		c := Cause{Role: n.Role, Replica: n.Replica, Rank: to.Rank, What: to.What, Traceback: []string{to.Line},
			Time: to.Time, Began: to.Time, Prefixed: to.Local >= 0}
		if to.Local >= 0 {
			if r, _ := n.RankOf(Traceback{Local: to.Local}); r >= 0 {
				c.Rank = r
			}
		}
		out = append(out, candidate{c: c, exact: true})
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
	named := -1
	if w, rank, ok := collectiveTimeout(what, tb.Frame); ok {
		what, named = w, rank
	}
	c := Cause{Role: n.Role, Replica: n.Replica, Rank: -1, What: what, Where: tb.Frame, Traceback: tb.Lines, Time: tb.Time, Began: tb.Began, Prefixed: tb.Local >= 0}
	c.Rank, c.Ranks = n.RankOf(tb)
	if c.Rank < 0 && named >= 0 && (len(c.Ranks) == 0 || slices.Contains(c.Ranks, named)) {
		c.Rank, c.Ranks = named, nil // NCCL's "[Rank N]": the rank said it
	}
	return c
}

// RankOf says which global rank wrote a traceback of the node: the local rank of its
// prefix, or for an unprefixed one the node's only failed worker, or the worker that
// exited in the same order among them as the traceback ended among the node's (the
// first to raise exits first; the ranks that fail in gloo after it, later). When it
// cannot be told, rank is -1 and maybe are the ranks it may be (the node's failed
// ranks, or all of its ranks), nil when not even those are known.
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
	if rank, maybe, ok := n.rankByWorkers(tb); ok {
		return rank, maybe
	}
	var failed []Failure
	for _, s := range f.Summary {
		if s.ExitCode > 0 {
			failed = append(failed, s)
		}
	}
	switch {
	case len(failed) == 1 && n.unwatched() && n.unprefixedTracebacks() > 1:
		// More tracebacks than failed workers: torchrun's poll found one worker
		// ended, the raising one or the peer that failed of it while the raising
		// one still finalized (which torchrun then stopped, unlisted). Nothing
		// watched the workers to tell which: the node's tie.
		return -1, n.nodeRanks()
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
	end := n.endTimes(f.WorkerTracebacks())
	known := 0
	for _, s := range failed {
		if _, ok := end[s.PID]; ok {
			known++
		}
	}
	if idx < 0 || idx >= len(failed) || known != len(failed) {
		return -1, ranks
	}
	slices.SortStableFunc(failed, func(a, b Failure) int { return end[a.PID].Compare(end[b.PID]) })
	// Workers seen to end at one moment (the watch woke once for both, as on a busy
	// machine) have no order: the traceback is one of theirs, not told which.
	t := end[failed[idx].PID]
	var tied []int
	for _, s := range failed {
		if end[s.PID].Equal(t) {
			tied = append(tied, s.Rank)
		}
	}
	if len(tied) > 1 {
		slices.Sort(tied)
		return -1, tied
	}
	return failed[idx].Rank, nil
}

// unwatched reports whether the scheduler saw nothing of the node's workers' ends.
func (n *NodeReport) unwatched() bool {
	return len(n.Exits) == 0 && len(n.Downs) == 0 && len(n.Workers) == 0
}

// unprefixedTracebacks counts the node's worker tracebacks without a rank's prefix.
func (n *NodeReport) unprefixedTracebacks() int {
	k := 0
	for _, tb := range n.Failures.WorkerTracebacks() {
		if tb.Local < 0 {
			k++
		}
	}
	return k
}

// nodeRanks are the global ranks of the node's workers, nil when its group rank or
// its workers per node are not known (a rank alone would read as sure).
func (n *NodeReport) nodeRanks() []int {
	g := n.groupRank()
	if g < 0 || n.NProc < 2 {
		return nil
	}
	ranks := make([]int, n.NProc)
	for i := range ranks {
		ranks[i] = g*n.NProc + i
	}
	return ranks
}

// rankByWorkers puts an unprefixed worker traceback of the node on the worker that
// began to end in the same order among the node's workers as the traceback among its
// unprefixed ones (see RankOf), over every worker the scheduler watched (Workers),
// not only those torchrun's summary lists: a poll of torchrun's that found the
// raising worker still finalizing lists only its peer, which failed of it and exited
// first, and stops the raising one with SIGTERM. Workers killed by a signal (the
// summary says so) wrote no traceback. ok is false when the workers were not
// watched, or fewer of them were seen to end than there are tracebacks.
//
// A worker is named only when the samples order it apart from every other: each
// worker began to end within an interval of samples (ends), and the worker whose
// interval lies after those of the workers before it and before those after it is
// the one; workers whose intervals overlap (seen at one sample, as on a loaded
// machine whose sampler wakes seldom) are a tie, "rank 2 or 3". A wrong rank said
// as sure is worse than a tie.
func (n *NodeReport) rankByWorkers(tb Traceback) (rank int, maybe []int, ok bool) {
	if len(n.Workers) == 0 {
		return -1, nil, false
	}
	tbs := n.Failures.WorkerTracebacks()
	idx, count := -1, 0
	for _, o := range tbs {
		if o.Local >= 0 {
			continue
		}
		if o.Start == tb.Start && o.End == tb.End {
			idx = count
		}
		count++
	}
	killed := map[int]bool{}
	for _, s := range n.Failures.Summary {
		if s.ExitCode < 0 {
			killed[s.PID] = true
		}
	}
	first := firstBegan(tbs)
	var ws []ended
	for pid, w := range n.Workers {
		// (A worker that ended before the tracebacks began is an earlier attempt's.)
		if e, seen := w.ended(first); seen && !killed[pid] && !e.by.Before(first) {
			ws = append(ws, e)
		}
	}
	if idx < 0 {
		return -1, nil, false
	}
	if len(ws) < count {
		return n.unseenTie(first, killed)
	}
	slices.SortFunc(ws, func(a, b ended) int {
		return cmp.Or(a.by.Compare(b.by), a.after.Compare(b.after), a.rank-b.rank)
	})
	all := func() []int {
		var out []int
		for _, e := range ws {
			out = append(out, e.rank)
		}
		slices.Sort(out)
		return slices.Compact(out)
	}
	// A worker begins to end after it wrote its traceback (Python prints it, then
	// finalizes): one seen to have ended before the traceback put on it was in the
	// file did not write it, or its stderr reached the file late; either way the
	// order says nothing sure.
	k := 0
	for _, o := range tbs {
		if o.Local >= 0 {
			continue
		}
		if k < len(ws) && !o.Time.IsZero() && ws[k].by.Before(o.Time) {
			return -1, all(), true
		}
		k++
	}
	w := ws[idx]
	tied := []int{w.rank}
	for i, o := range ws {
		if i < idx && o.by.After(w.after) || i > idx && w.by.After(o.after) {
			tied = append(tied, o.rank)
		}
	}
	if len(tied) > 1 {
		slices.Sort(tied)
		return -1, slices.Compact(tied), true
	}
	return w.rank, nil, true
}

// unseenTie is the cause of a node whose workers were watched but one's end went
// unseen (the container or step ended before the next sample): which began to end
// first is not known. torchrun's summary names the first to exit, which is the peer
// when the one that raised was still finalizing (it is then sent SIGTERM), so it is no
// better: the watched workers that may have written the traceback are a tie, those
// killed by a signal and those of an earlier attempt (ended before first) left out.
// ok is false when fewer than two remain.
func (n *NodeReport) unseenTie(first time.Time, killed map[int]bool) (rank int, maybe []int, ok bool) {
	for pid, w := range n.Workers {
		if e, seen := w.ended(first); killed[pid] || seen && e.by.Before(first) {
			continue
		}
		maybe = append(maybe, w.Rank)
	}
	slices.Sort(maybe)
	if maybe = slices.Compact(maybe); len(maybe) < 2 {
		return -1, nil, false
	}
	return -1, maybe, true
}

// ended is when a watched worker began to end: after the sample at after, by the
// one at by.
type ended struct {
	rank      int
	after, by time.Time
}

// ended is when w began to end, given when the node's first traceback began
// (first): from the sample before its thread count began to fall for good to the one
// that saw its last fall; a fall seen before the first traceback began may be a
// thread of its work that ended (or its stderr reached the file late), so then by
// when it was gone. A worker whose count did not fall began to end between the
// samples around its going. Where its count fell from the first traceback on and
// then rose (Fell before Down, or Down zero), it may have begun to end at that fall:
// the interval starts at the sample before it, so a worker whose rise would have put
// it after its peer ties with it instead. seen is false when neither was seen.
func (w Watched) ended(first time.Time) (e ended, seen bool) {
	e, seen = w.fromDown(first)
	if seen && !w.Fell.IsZero() && w.FellPrev.Before(e.after) {
		e.after = w.FellPrev
	}
	return e, seen
}

// fromDown is ended as its falls since its last rise (Down) and its going say.
func (w Watched) fromDown(first time.Time) (e ended, seen bool) {
	e.rank = w.Rank
	switch {
	case !w.Down.IsZero() && !w.Down.Before(first):
		e.after, e.by = w.DownPrev, w.Settled
	case !w.Down.IsZero() && !w.Gone.IsZero():
		e.after, e.by = w.DownPrev, w.Gone
	case !w.Down.IsZero():
		return e, false
	case !w.Gone.IsZero():
		e.after, e.by = w.GonePrev, w.Gone
	default:
		return e, false
	}
	return e, true
}

// endTimes are when the node's workers ended, by pid, in the order their tracebacks
// were written: when each began to end (Downs), else when it exited (Exits). A Down
// before the first of the node's worker tracebacks tbs began is a thread of the
// worker's work that ended, not its end.
func (n *NodeReport) endTimes(tbs []Traceback) map[int]time.Time {
	first := firstBegan(tbs)
	out := make(map[int]time.Time, len(n.Exits))
	for pid, t := range n.Exits {
		out[pid] = t
	}
	for pid, t := range n.Downs {
		exit, exited := out[pid]
		if !first.IsZero() && !t.Before(first) && (!exited || t.Before(exit)) {
			out[pid] = t
		}
	}
	return out
}

// FirstBegan is when the first of the node's worker tracebacks began (f's lines'
// times); zero when none did, or their times are not known. A sampler's file is read
// (watch.Parse) knowing it: a worker's thread count that falls from then on is a
// worker that may have begun to end.
func (f *Failures) FirstBegan() time.Time {
	if f == nil {
		return time.Time{}
	}
	return firstBegan(f.WorkerTracebacks())
}

// firstBegan is when the first of tbs began; zero when none did.
func firstBegan(tbs []Traceback) time.Time {
	var first time.Time
	for _, tb := range tbs {
		if first.IsZero() || tb.Began.Before(first) {
			first = tb.Began
		}
	}
	return first
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
