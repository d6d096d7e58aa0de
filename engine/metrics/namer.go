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
}

type nodeKey struct {
	role    string
	replica int
}

// NewNamer returns the Namer of app's ranks (app may be nil: every rank is then
// named role/replica[:local]).
func NewNamer(app *spec.AppDef) *Namer {
	n := &Namer{nproc: map[string]int{}, nodes: map[nodeKey]*ranks.Node{}, names: map[Rank]string{}}
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
		node = ranks.NewNode(l.Replica, n.nproc[l.Role])
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
	if node := n.nodes[nodeKey{r.Role, r.Replica}]; node != nil && r.Local >= 0 {
		if g := node.Global(r.Local); g >= 0 {
			s = "rank " + strconv.Itoa(g)
			if n.roles > 1 {
				s = r.Role + " " + s
			}
		}
	}
	n.names[r] = s
	return s
}
