package metrics

import (
	"strconv"

	"github.com/wick-dev/wick/engine/ranks"
	"github.com/wick-dev/wick/engine/sched"
	"github.com/wick-dev/wick/engine/spec"
)

// Namer names the ranks of metric series as training people do: a torchrun worker by
// its global rank ("rank 3"), learned from its node's own lines as `wick log --rank`
// does; anything else role/replica. It learns from every committed line (Observe).
type Namer struct {
	roles int
	nproc map[string]int
	nodes map[nodeKey]*ranks.Node
	names map[Rank]string
	desc  *sched.Description // what the scheduler knows of the nodes, or nil
}

type nodeKey struct {
	role    string
	replica int
}

// NewNamer returns the Namer of app's ranks (app may be nil: every rank is then
// named role/replica[:local]).
func NewNamer(app *spec.AppDef) *Namer {
	return NewNamerOf(&sched.Description{App: app})
}

// NewNamerOf returns the Namer of the ranks of the app d describes: its AppDef says
// which roles run torchrun, its status each node's group rank when the scheduler
// learned it (without LOGLEVEL=INFO, torchrun's lines do not say it).
func NewNamerOf(d *sched.Description) *Namer {
	app := d.App
	n := &Namer{nproc: map[string]int{}, nodes: map[nodeKey]*ranks.Node{}, names: map[Rank]string{}, desc: d}
	if app != nil {
		n.roles = len(app.Roles)
		for _, r := range app.Roles {
			n.nproc[r.Name] = ranks.NProcPerNode(append([]string{r.Entrypoint}, r.Args...))
		}
	}
	return n
}

// Observe learns from a committed line of a node (its rendezvous result).
func (n *Namer) Observe(l sched.Line) {
	if l.Pending {
		return
	}
	key := nodeKey{l.Role, l.Replica}
	node := n.nodes[key]
	if node == nil {
		node = ranks.NodeOf(n.desc, l.Role, l.Replica, n.nproc[l.Role])
		n.nodes[key] = node
	}
	if node.Observe(l.Text) {
		clear(n.names) // a new rendezvous: ranks may have moved
	}
}

// Name is the rank's name: "rank G" (with the role when the app has several) for a
// torchrun worker whose global rank is known, else role/replica[:local].
func (n *Namer) Name(r Rank) string {
	if s, ok := n.names[r]; ok {
		return s
	}
	s := r.String()
	if node := n.nodes[nodeKey{r.Role, r.Replica}]; node != nil && (r.Local >= 0 || n.nproc[r.Role] == 1) {
		if g := node.Global(max(r.Local, 0)); g >= 0 {
			s = "rank " + strconv.Itoa(g)
			if n.roles > 1 {
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
		if s.Rank.Local >= 0 || n.nproc[s.Rank.Role] > 0 {
			prefixed[s.Rank.Role] = true
		}
	}
	seen := map[string]bool{}
	for _, s := range series {
		r := s.Rank
		if r.Local < 0 && prefixed[r.Role] && n.nproc[r.Role] != 1 {
			continue // a node's own line
		}
		seen[n.Name(r)] = true
	}
	return len(seen)
}
