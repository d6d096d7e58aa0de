package metrics

import (
	"strconv"

	"github.com/wick-dev/wick/engine/ranks"
	"github.com/wick-dev/wick/engine/sched"
)

// Namer names the ranks of metric series as training people do: a torchrun worker by
// its global rank ("rank 3"), learned as `wick log --rank` and the wall learn it (a
// ranks.Tracker: the node's group rank from its status, its own lines); anything else
// role/replica. It learns from every committed line (Observe) and every newer
// description (Update).
type Namer struct {
	ranks *ranks.Tracker
	names map[Rank]string
}

// NewNamerOf returns the Namer of the ranks of the app d describes (d may be nil: every
// rank is then named role/replica[:local]): its AppDef says which roles run torchrun,
// its status each node's group rank when the scheduler learned it (without
// LOGLEVEL=INFO, torchrun's lines do not say it).
func NewNamerOf(d *sched.Description) *Namer {
	return &Namer{ranks: ranks.NewTracker(d), names: map[Rank]string{}}
}

// Update takes a newer description of the app (a node's group rank learned since).
func (n *Namer) Update(d *sched.Description) {
	n.ranks.Update(d)
	clear(n.names) // ranks moved, or became known
}

// Observe learns from a committed line of a node (its rendezvous result).
func (n *Namer) Observe(l sched.Line) {
	if n.ranks.Observe(l) {
		clear(n.names) // a new rendezvous: ranks may have moved
	}
}

// Split returns the lines torchrun's tee glued into the committed line l, each its
// rank's, as the wall and `wick log --rank` split it (ranks.Tracker.Split); nil when l
// is one line.
func (n *Namer) Split(l sched.Line) []sched.Line { return n.ranks.Split(l) }

// Name is the rank's name: "rank G" (with the role when the app has several) for a
// torchrun worker whose global rank is known, else role/replica[:local].
func (n *Namer) Name(r Rank) string {
	if s, ok := n.names[r]; ok {
		return s
	}
	s := r.String()
	// A node whose group rank is not known yet (c10d: node k need not be group rank
	// k) is named by its replica, not by a rank it may not be.
	if (r.Local >= 0 || n.ranks.NProc(r.Role) == 1) && n.ranks.Known(r.Role, r.Replica) {
		if g := n.ranks.Node(r.Role, r.Replica).Global(max(r.Local, 0)); g >= 0 {
			s = "rank " + strconv.Itoa(g)
			if n.ranks.Roles() > 1 {
				s = r.Role + " " + s
			}
		}
	}
	n.names[r] = s
	return s
}

// Ranks counts the ranks among the series of a metric: distinct global ranks (two
// attempts' series of one rank are one rank). A torchrun node's own lines (no "[N]:"
// prefix: the agent's, and a worker's stderr that torchrun does not tee, such as rank
// 0's progress bar) are not a rank's, unless the node runs a single worker, whose
// they then are. A role is taken to run torchrun when its command does or when some
// of its lines carry torchrun's prefix; any other role's replicas are its ranks.
func (n *Namer) Ranks(series []*Series) int {
	prefixed := map[string]bool{}
	for _, s := range series {
		if s.Rank.Local >= 0 || n.ranks.NProc(s.Rank.Role) > 0 {
			prefixed[s.Rank.Role] = true
		}
	}
	seen := map[string]bool{}
	for _, s := range series {
		r := s.Rank
		if r.Local < 0 && prefixed[r.Role] && n.ranks.NProc(r.Role) != 1 {
			continue // a node's own line
		}
		seen[n.Name(r)] = true
	}
	return len(seen)
}
