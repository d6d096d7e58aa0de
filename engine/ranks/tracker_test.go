package ranks

import (
	"slices"
	"testing"

	"github.com/wick-dev/wick/engine/sched"
	"github.com/wick-dev/wick/engine/spec"
)

// twoNodes describes a 2x2 torchrun role whose c10d rendezvous made replica 0 group
// rank 1 and replica 1 group rank 0, as its status says when groupRanks (by replica)
// is given, beside a role that runs no torchrun.
func twoNodes(groupRanks ...int) *sched.Description {
	d := &sched.Description{App: &spec.AppDef{Name: "ddp", Roles: []spec.Role{
		{Name: "train", Entrypoint: "bash", Args: []string{"-c", "torchrun --nproc_per_node=2 train.py"}, NumReplicas: 2},
		{Name: "eval", Entrypoint: "python", Args: []string{"eval.py"}, NumReplicas: 1},
	}}}
	rs := spec.RoleStatus{Role: "train"}
	for k := range 2 {
		r := spec.ReplicaStatus{ID: k, Role: "train"}
		if k < len(groupRanks) {
			r.GroupRank = spec.IntPtr(groupRanks[k])
		}
		rs.Replicas = append(rs.Replicas, r)
	}
	d.Status.Roles = []spec.RoleStatus{rs}
	return d
}

// The tracker reads nproc_per_node per role from the AppDef, and names a worker's line
// by the group rank its node's status gives, not by the replica index.
func TestTrackerGroupRankFromStatus(t *testing.T) {
	tr := NewTracker(twoNodes(1, 0))
	if tr.NProc("train") != 2 || tr.NProc("eval") != 0 || tr.Roles() != 2 {
		t.Fatalf("nproc train %d eval %d, roles %d", tr.NProc("train"), tr.NProc("eval"), tr.Roles())
	}
	for _, c := range []struct {
		k    int
		text string
		want int
	}{{0, "[0]:loss 1", 2}, {0, "[1]:loss 1", 3}, {1, "[0]:loss 1", 0}, {1, "[1]:loss 1", 1}} {
		l := sched.Line{Role: "train", Replica: c.k, Text: c.text}
		tr.Observe(l)
		if g, rest, ok := tr.Attribute(&l); !ok || g != c.want || rest != "loss 1" {
			t.Errorf("train/%d %q: rank %d %q %v, want rank %d", c.k, c.text, g, rest, ok, c.want)
		}
	}
	l := sched.Line{Role: "train", Replica: 0, Text: "agent line"}
	if _, _, ok := tr.Attribute(&l); ok {
		t.Errorf("a node's own line is attributed to a rank")
	}
}

// A group rank the status learns later (Slurm writes it once the workers started)
// moves the node's ranks, says which node moved, and survives Reset (the lines read
// again) and Fresh (a node to read them back with).
func TestTrackerUpdate(t *testing.T) {
	tr := NewTracker(twoNodes())
	if g := tr.Node("train", 0).Global(1); g != 1 {
		t.Fatalf("before the status says: rank %d, want the replica's guess 1", g)
	}
	moved := tr.Update(twoNodes(1, 0))
	// Node 1 is made after: it is told then.
	want := []sched.ReplicaRef{{Role: "train", Replica: 0}}
	if !slices.Equal(moved, want) {
		t.Errorf("moved %v, want %v", moved, want)
	}
	if g := tr.Node("train", 0).Global(1); g != 3 {
		t.Errorf("after the status: rank %d, want 3", g)
	}
	if g := tr.Node("train", 1).Global(1); g != 1 {
		t.Errorf("a node made after the status: rank %d, want 1", g)
	}
	if moved := tr.Update(twoNodes(1, 0)); len(moved) != 0 {
		t.Errorf("the same status again moved %v", moved)
	}
	tr.Reset()
	if g := tr.Node("train", 0).Global(1); g != 3 {
		t.Errorf("after Reset: rank %d, want 3", g)
	}
	if g := tr.Fresh("train", 0).Global(0); g != 2 {
		t.Errorf("a fresh node: rank %d, want 2", g)
	}
	// Pending lines teach nothing; nil and empty descriptions are no news.
	if tr.Observe(sched.Line{Role: "train", Pending: true, Text: "  rank      : 3 (local_rank: 1)"}) || len(tr.Update(nil)) != 0 {
		t.Errorf("a pending line or a nil description changed the ranks")
	}
	if tr := NewTracker(nil); tr.NProc("train") != 0 || tr.Roles() != 0 {
		t.Errorf("no description: nproc %d roles %d", tr.NProc("train"), tr.Roles())
	}
}
