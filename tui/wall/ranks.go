package wall

import (
	"strconv"
	"strings"

	"github.com/wick-dev/wick/engine/ranks"
	"github.com/wick-dev/wick/engine/sched"
	"github.com/wick-dev/wick/engine/spec"
	"github.com/wick-dev/wick/tui/render"
)

// A pane per rank. A replica of a role that runs torchrun is a node of
// nproc_per_node workers, whose lines torchrun's tee writes into the node's output
// prefixed "[local_rank]:" (see package ranks, which also learns the node's global
// ranks from torchrun's rendezvous result). Such a role gets a pane per global rank,
// holding that rank's lines without the prefix, and keeps a pane per node for the
// node's own lines (the agent, the rendezvous). A torchrun that tees nothing leaves
// the rank panes empty and everything in the node panes.

// replica is one source of the feed: a replica of the app, read once, whose lines go
// to one pane, or for a torchrun node to its rank panes and its node pane.
type replica struct {
	role string
	k    int
	// pane is the pane of the replica's lines (a node's own lines).
	pane int
	// Set for a torchrun node.
	nproc int
	node  *ranks.Node
	ranks map[int]int // global rank -> pane
	// src is the replica's index in the wall's sources and panes the wall's panes,
	// for moving the panes of the node's ranks to it (see place).
	src   int
	panes []*pane
	// routed is set once a line went to a rank's pane; misrouted when the node's
	// ranks changed after that.
	routed, misrouted bool
}

// route says which pane line l of replica r goes to, and takes torchrun's prefix off
// a rank's line. Committed lines teach the node its ranks first.
func (r *replica) route(l *sched.Line) int {
	if r.node == nil {
		return r.pane
	}
	if !l.Pending && r.node.Observe(l.Text) {
		r.place()
		// Lines of its ranks went to the panes of the ranks the node was taken to
		// have: the wall reads them again (Model.reset).
		r.misrouted = r.misrouted || r.routed
	}
	if g, rest, ok := r.node.AttributeLine(l); ok {
		if p, ok := r.ranks[g]; ok {
			l.Text = rest
			r.routed = true
			return p
		}
	}
	return r.pane
}

// split returns the lines torchrun's tee glued into line l of a torchrun node, each
// part a line of its own (see ranks.Node.Glued); nil when l is one line.
func (r *replica) split(l sched.Line) []sched.Line {
	if r.node == nil {
		return nil
	}
	return r.node.Split(l)
}

// place moves the panes of the global ranks the node's rendezvous gave it onto the
// node, with its status. With c10d's rendezvous a node's group rank is the order in
// which it joined, not its replica index; a rank that writes no line would otherwise
// stay on the node first assumed, showing that node's status and another rank's
// numbers. (A rank's line moves its pane too, see ingest: without a rendezvous block,
// the lines are all there is to go by.)
func (r *replica) place() {
	np := r.panes[r.pane]
	for local := range r.nproc {
		if pi, ok := r.ranks[r.node.Global(local)]; ok {
			p := r.panes[pi]
			p.k, p.src, p.st, p.known = r.k, r.src, np.st, np.known
		}
	}
}

// layOutReplicas makes the sources and the panes: a pane per replica, or for a
// torchrun role a pane per global rank (the world is replicas x nproc_per_node)
// followed by a pane per node.
func (m *Model) layOutReplicas(d *sched.Description) {
	type roleReps struct {
		role string
		ks   []int
	}
	var roles []roleReps
	for _, role := range d.Status.Roles {
		rr := roleReps{role: role.Role}
		for _, r := range role.Replicas {
			rr.ks = append(rr.ks, r.ID)
		}
		roles = append(roles, rr)
	}
	if len(roles) == 0 && d.App != nil {
		for _, role := range d.App.Roles {
			rr := roleReps{role: role.Name}
			for k := range role.NumReplicas {
				rr.ks = append(rr.ks, k)
			}
			roles = append(roles, rr)
		}
	}
	// One tracker of the ranks for the wall, as for wick log --rank and the metrics:
	// the nodes' group ranks from their status and their lines.
	m.ranks = ranks.NewTracker(d)
	for _, rr := range roles {
		nproc := m.ranks.NProc(rr.role)
		if nproc <= 0 || len(rr.ks)*nproc > maxRankPanes {
			for _, k := range rr.ks {
				m.srcs = append(m.srcs, replica{role: rr.role, k: k, pane: len(m.panes)})
				m.panes = append(m.panes, &pane{role: rr.role, k: k, rank: -1, src: len(m.srcs) - 1})
			}
			continue
		}
		first := len(m.srcs)
		world := len(rr.ks) * nproc
		byRank := map[int]int{}
		for g := range world {
			// Until its lines come, a rank is taken to be on node g / nproc (static
			// rendezvous); the pane moves to the node that writes its lines.
			k := rr.ks[g/nproc]
			byRank[g] = len(m.panes)
			m.panes = append(m.panes, &pane{role: rr.role, k: k, rank: g, nproc: nproc, world: world, src: first + g/nproc, ranks: m.ranks})
		}
		for _, k := range rr.ks {
			m.srcs = append(m.srcs, replica{role: rr.role, k: k, pane: len(m.panes), nproc: nproc, node: m.ranks.Node(rr.role, k), ranks: byRank})
			m.panes = append(m.panes, &pane{role: rr.role, k: k, rank: -1, node: true, nproc: nproc, world: world, src: len(m.srcs) - 1, ranks: m.ranks})
		}
	}
	for i := range m.srcs {
		m.srcs[i].src, m.srcs[i].panes = i, m.panes
	}
}

// maxRankPanes bounds the panes a torchrun role gets: a bigger world is shown a pane
// per node.
const maxRankPanes = 256

// filter returns what selects the lines of pane p among its replica's, for reading
// them back from the logs: a fresh node tracker (told the node's status) fed every
// line in order, as route does; nil when the pane has all the replica's lines.
func (p *pane) filter() *lineFilter {
	if p.nproc <= 0 || p.ranks == nil {
		return nil
	}
	return &lineFilter{node: p.ranks.Fresh(p.role, p.k), rank: p.rank, world: p.world}
}

// lineFilter selects the lines of a pane among its replica's (see pane.filter).
type lineFilter struct {
	node        *ranks.Node
	rank, world int
}

// split returns the lines torchrun's tee glued into l, each to be selected on its own
// as ingest routes them (replica.split); nil when l is one line.
func (f *lineFilter) split(l sched.Line) []sched.Line {
	return f.node.Split(l)
}

// keep reports whether l is the pane's, and takes torchrun's prefix off a rank's line.
func (f *lineFilter) keep(l *sched.Line) bool {
	f.node.Observe(l.Text)
	g, rest, ok := f.node.AttributeLine(l)
	if ok && g >= 0 && g < f.world {
		if g == f.rank {
			l.Text = rest
			return true
		}
		return false
	}
	return f.rank < 0
}

// rootCauseLines bounds how far back from a node's last line its failure summary is
// looked for.
const rootCauseLines = 2000

// failedRank reads, from the failure summary torchrun prints when a worker fails, the
// global rank that raised err (the app's error, first line): the rank of the summary's
// block whose traceback ends with it, else the rank torchrun calls the root cause.
//
//	Root Cause (first observed failure):
//	[0]:
//	  time      : ...
//	  rank      : 1 (local_rank: 1)
//	  traceback : Traceback (most recent call last):
//	    ...
//	  InjectedFailure: rank 1 fails on purpose
func failedRank(r *ring, err string) (int, bool) {
	raised, root := summaryRanks(r, err)
	if raised >= 0 {
		return raised, true
	}
	return root, root >= 0
}

// summaryRanks reads a node's failure summary: the rank whose traceback holds err
// (-1 if none does) and the rank torchrun calls the root cause (-1 if none).
func summaryRanks(r *ring, err string) (raised, root int) {
	err = strings.TrimSpace(err)
	cur, root := -1, -1
	inRoot := false
	for seq := max(r.first, r.n-rootCauseLines); seq < r.n; seq++ {
		text := plainText(r.at(seq).text)
		trim := strings.TrimSpace(text)
		switch {
		case strings.HasPrefix(trim, "Root Cause"):
			cur, inRoot = -1, true
		case strings.HasPrefix(trim, "Failures:"), strings.HasPrefix(trim, "----"), strings.HasPrefix(trim, "===="):
			cur, inRoot = -1, false
		}
		if k, v, ok := strings.Cut(trim, ":"); ok && strings.TrimSpace(k) == "rank" {
			num, _, _ := strings.Cut(strings.TrimSpace(v), " ")
			if g, e := strconv.Atoi(num); e == nil && g >= 0 {
				cur = g
				if inRoot && root < 0 {
					root = g
				}
			}
			continue
		}
		if cur >= 0 && err != "" && strings.Contains(trim, err) {
			return cur, root
		}
	}
	return -1, root
}

// causePane is the pane that shows the app's root cause when it names a rank ("rank 3:
// RuntimeError: ...", found by the scheduler without an error file): the rank's pane
// when the exception is in it, else the pane of the node where it happened, whose
// lines hold the traceback (it went there while the app ran, before the root cause
// was known) or torchrun's word of a signal.
func (m *Model) causePane() (int, bool) {
	msg := render.FirstLine(spec.ErrorMessage(m.status.StructuredError))
	rank, what, ok := causeRank(msg)
	if !ok {
		return 0, false
	}
	for ni, node := range m.panes {
		if !node.node || !node.known || spec.ErrorMessage(node.st.StructuredError) != spec.ErrorMessage(m.status.StructuredError) {
			continue
		}
		for i, p := range m.panes {
			if p.rank == rank && p.role == node.role && ringHas(p.ring, what) {
				return i, true
			}
		}
		return ni, true
	}
	return 0, false
}

// causeRank reads "rank N: what" (ranks.Cause.String).
func causeRank(msg string) (rank int, what string, ok bool) {
	rest, found := strings.CutPrefix(msg, "rank ")
	num, what, found2 := strings.Cut(rest, ": ")
	if !found || !found2 {
		return 0, "", false
	}
	g, err := strconv.Atoi(num)
	if err != nil || g < 0 {
		return 0, "", false
	}
	return g, what, true
}

// ringHas reports whether one of the last rootCauseLines lines of r holds s.
func ringHas(r *ring, s string) bool {
	for seq := max(r.first, r.n-rootCauseLines); seq < r.n; seq++ {
		if strings.Contains(plainText(r.at(seq).text), s) {
			return true
		}
	}
	return false
}

// paneCount says what the panes are, for the header: "2 nodes · 4 ranks" for a
// torchrun role (a pane per rank, and one per node for the node's own lines), plus
// the other roles' replicas; "3 replicas" for an app without torchrun roles.
func (m *Model) paneCount() string {
	nodes, ranks, others := 0, 0, 0
	for _, p := range m.panes {
		switch {
		case p.node:
			nodes++
		case p.rank >= 0:
			ranks++
		default:
			others++
		}
	}
	if nodes == 0 && ranks == 0 {
		return spec.Count(others, "replica")
	}
	s := spec.Count(nodes, "node") + " · " + spec.Count(ranks, "rank")
	if others > 0 {
		s += " · " + spec.Count(others, "replica")
	}
	return s
}

// reattribute moves to a rank's pane the lines of its traceback that reached the
// node's pane before the app's root cause put them on the rank (a worker's stderr is
// not teed: its traceback arrives unprefixed, and which rank wrote it is known only
// once the app has failed). A wall opened after that routes them so as they are read
// (replica.route); one that watched the app fail moves them here, so that the rank's
// pane shows its traceback either way. It reports whether lines moved.
func (m *Model) reattribute(src *replica) bool {
	b, ok := src.node.Blamed()
	if !ok {
		return false
	}
	rp, ok := src.ranks[b.Rank]
	if !ok || src.pane >= len(m.panes) || rp >= len(m.panes) {
		return false
	}
	from, to := b.From.UnixNano(), b.To.UnixNano()
	np, rank := m.panes[src.pane], m.panes[rp]
	var moved []entry
	for seq := np.ring.first; seq < np.ring.n; seq++ {
		if e := np.ring.at(seq); blamed(e, from, to) {
			moved = append(moved, *e)
		}
	}
	if len(moved) == 0 {
		return false
	}
	np.ring = rebuilt(np.ring, func(e *entry) bool { return !blamed(e, from, to) }, nil)
	rank.ring = rebuilt(rank.ring, nil, moved)
	// Sequence numbers changed in both panes: windows read back and reads under way
	// are of the old numbering, views are kept within the lines held.
	for _, pi := range []int{src.pane, rp} {
		m.panes[pi].far = nil
		if pi < len(m.back.busy) {
			m.back.busy[pi] = false
		}
		for _, s := range m.scrollers() {
			if pi < len(s.anchor) {
				s.anchor[pi] = min(s.anchor[pi], m.panes[pi].ring.n)
			}
		}
	}
	m.back.epoch++
	m.mb = newMergedBack(len(m.panes))
	return true
}

// blamed reports whether e is a line of the node's that a Blame of [from, to] covers.
func blamed(e *entry, from, to int64) bool {
	return !e.divider() && e.stderr() && e.time >= from && e.time <= to
}

// rebuilt is a ring of r's held entries that keep selects (nil: all) with extra
// merged in by time (a replica's lines are in time order; ring.after relies on it),
// numbered from r's first held entry.
func rebuilt(r *ring, keep func(*entry) bool, extra []entry) *ring {
	w := newRing(r.limit)
	w.base, w.first, w.n, w.back = r.first, r.first, r.first, r.back
	x := 0
	for seq := r.first; seq < r.n; seq++ {
		e := r.at(seq)
		if keep != nil && !keep(e) {
			continue
		}
		for x < len(extra) && extra[x].time < e.time {
			w.push(extra[x])
			x++
		}
		w.push(*e)
	}
	for ; x < len(extra); x++ {
		w.push(extra[x])
	}
	return w
}

// scrollers are every view's scroller: each pane's and the merged view's.
func (m *Model) scrollers() []*scroller {
	out := make([]*scroller, 0, len(m.panes)+1)
	for _, p := range m.panes {
		if p.view != nil {
			out = append(out, p.view)
		}
	}
	if m.mview != nil {
		out = append(out, m.mview)
	}
	return out
}
