package metrics

import (
	"testing"

	"github.com/wick-dev/wick/engine/sched"
	"github.com/wick-dev/wick/engine/spec"
)

// A worker of a c10d node whose group rank is not known yet is named by its replica,
// not by the rank its replica index would give (node 0 is group rank 1 as often as
// not); a newer description that knows it names it by its rank.
func TestNamerWaitsForTheGroupRank(t *testing.T) {
	d := &sched.Description{App: &spec.AppDef{Name: "ddp", Roles: []spec.Role{
		{Name: "train", Entrypoint: "bash", Args: []string{"-c", "torchrun --rdzv_backend c10d --nnodes 2 --nproc_per_node 2 t.py"}, NumReplicas: 2},
	}}}
	d.Status.Roles = []spec.RoleStatus{{Role: "train", Replicas: []spec.ReplicaStatus{{ID: 0, Role: "train"}, {ID: 1, Role: "train"}}}}
	n := NewNamerOf(d)
	r := Rank{Role: "train", Replica: 0, Local: 1}
	if got := n.Name(r); got != "train/0:1" {
		t.Errorf("before the group rank is known: %q, want train/0:1", got)
	}
	d.Status.Roles[0].Replicas[0].GroupRank = spec.IntPtr(1)
	n.Update(d)
	if got := n.Name(r); got != "rank 3" {
		t.Errorf("group rank 1: %q, want rank 3", got)
	}
}
