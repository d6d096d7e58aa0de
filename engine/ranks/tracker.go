package ranks

import (
	"github.com/wick-dev/wick/engine/sched"
	"github.com/wick-dev/wick/engine/spec"
)

// Tracker keeps the rank bookkeeping of one app for every reader of its lines (the
// log wall's rank panes, `wick log --rank`, the metrics' rank names), so that all of
// them call a line's rank by the same number: how many workers each role's nodes run
// (its nproc_per_node, from the AppDef: 0 for a role that does not run torchrun), and
// a Node per replica of such a role, told what the scheduler knows of it (its status:
// the group rank its workers reported, which under c10d or Slurm need not be the
// replica index; the traceback the root cause puts on one of its ranks) and fed the
// replica's committed lines (torchrun's rendezvous result, its failure summary).
// A Tracker is not safe for concurrent use.
type Tracker struct {
	desc  *sched.Description // the latest description, or nil
	roles int
	nproc map[string]int
	// placed are the roles whose nodes' group ranks need not follow their replica
	// index (several nodes of a c10d rendezvous): until learned, their ranks are
	// not known.
	placed map[string]bool
	nodes  map[replicaKey]*Node
	// The node of the last line: lines come in runs of one replica.
	lastKey  replicaKey
	lastNode *Node
}

type replicaKey struct {
	role string
	k    int
}

// NewTracker returns the tracker of the app d describes (d and its App may be nil:
// no role is then known to run torchrun).
func NewTracker(d *sched.Description) *Tracker {
	t := &Tracker{nproc: map[string]int{}, nodes: map[replicaKey]*Node{}, placed: map[string]bool{}}
	if d != nil && d.App != nil {
		t.roles = len(d.App.Roles)
		for _, r := range d.App.Roles {
			argv := append([]string{r.Entrypoint}, r.Args...)
			t.nproc[r.Name] = NProcPerNode(argv)
			t.placed[r.Name] = r.NumReplicas > 1 && RunsTorchrun(argv) && Flag(argv, "rdzv_backend") == "c10d"
		}
	}
	t.desc = d
	return t
}

// Known reports whether the ranks of replica k of role are known: its group rank was
// learned (from the scheduler's status or its own lines), or its role's nodes take
// their replica index as group rank (one node, or a static rendezvous). Under c10d
// node k need not be group rank k: until it is learned, a line of the node may be any
// of several ranks'.
func (t *Tracker) Known(role string, k int) bool {
	return !t.placed[role] || t.Node(role, k).Known()
}

// StatusKnows reports whether the latest description gives the group rank of every
// node whose ranks are not known otherwise (see Known): asking the scheduler again
// teaches nothing more.
func (t *Tracker) StatusKnows() bool {
	if t.desc == nil || t.desc.App == nil {
		return true
	}
	for _, role := range t.desc.App.Roles {
		if !t.placed[role.Name] {
			continue
		}
		known := 0
		for _, rs := range t.desc.Status.Roles {
			for _, r := range rs.Replicas {
				if rs.Role == role.Name && r.GroupRank != nil {
					known++
				}
			}
		}
		if known < role.NumReplicas {
			return false
		}
	}
	return true
}

// Roles is how many roles the app has (0 when its AppDef is not known): a rank is
// named with its role when there are several.
func (t *Tracker) Roles() int { return t.roles }

// NProc returns the workers per node of a role that runs torchrun (its
// --nproc_per_node), or 0 for any other role and when the number is not written.
func (t *Tracker) NProc(role string) int { return t.nproc[role] }

// Node returns the tracker of replica k of role, made on first use and told what the
// latest description knows of it. Every replica has one; one whose role's nproc is
// unknown learns it from a rendezvous block, if torchrun prints one.
func (t *Tracker) Node(role string, k int) *Node {
	key := replicaKey{role, k}
	if t.lastNode != nil && t.lastKey == key {
		return t.lastNode
	}
	n := t.nodes[key]
	if n == nil {
		n = NodeOf(t.desc, role, k, t.nproc[role])
		t.nodes[key] = n
	}
	t.lastKey, t.lastNode = key, n
	return n
}

// Fresh returns a new tracker of replica k of role, told what the latest description
// knows of it but no line: for reading the replica's lines again from the start.
func (t *Tracker) Fresh(role string, k int) *Node {
	return NodeOf(t.desc, role, k, t.nproc[role])
}

// Reset forgets what the nodes learned from lines (the lines are read again from the
// start); what the latest description says stays known.
func (t *Tracker) Reset() {
	clear(t.nodes)
	t.lastNode = nil
}

// Update takes a newer description of the app: each node learns its replica's status
// (a node made later is told it then). It returns the replicas whose node's ranks
// changed.
func (t *Tracker) Update(d *sched.Description) []sched.ReplicaRef {
	if d == nil {
		return nil
	}
	t.desc = d
	var changed []sched.ReplicaRef
	for _, role := range d.Status.Roles {
		for _, r := range role.Replicas {
			if t.learn(role.Role, r) {
				changed = append(changed, sched.ReplicaRef{Role: role.Role, Replica: r.ID})
			}
		}
	}
	return changed
}

// learn tells the node of replica st.ID of role what its status says; it reports
// whether the node's ranks changed. A node not made yet is told when it is made (from
// the latest description: see Update).
func (t *Tracker) learn(role string, st spec.ReplicaStatus) bool {
	n, ok := t.nodes[replicaKey{role, st.ID}]
	if !ok {
		return false // made when first asked for, from the latest description
	}
	return n.Learn(st)
}

// Observe learns from a committed line of a replica, in order (pending lines are
// skipped: the line that ends them comes committed). It reports whether the ranks of
// the line's node changed (a rendezvous completed).
func (t *Tracker) Observe(l sched.Line) bool {
	if l.Pending {
		return false
	}
	return t.Node(l.Role, l.Replica).Observe(l.Text)
}

// Attribute says which global rank wrote a line (see Node.AttributeLine): its rank and
// its text without torchrun's prefix, ok false for a node's own lines.
func (t *Tracker) Attribute(l *sched.Line) (global int, rest string, ok bool) {
	return t.Node(l.Role, l.Replica).AttributeLine(l)
}

// Split returns the lines torchrun's tee glued into the committed line l (see
// Node.Split) by l's node.
func (t *Tracker) Split(l sched.Line) []sched.Line {
	if l.Pending || l.Cut {
		return nil
	}
	return t.Node(l.Role, l.Replica).Split(l)
}

// Split returns the lines torchrun's tee glued into the committed line l of the node
// (see Glued), each with l's stream and time; nil when l is one line (pending and cut
// lines are not split: they are not whole yet).
func (n *Node) Split(l sched.Line) []sched.Line {
	if l.Pending || l.Cut {
		return nil
	}
	parts := n.Glued(l.Text)
	if parts == nil {
		return nil
	}
	out := make([]sched.Line, len(parts))
	for i, p := range parts {
		out[i] = l
		out[i].Text = p
		out[i].Partial = l.Partial && i == len(parts)-1
	}
	return out
}
