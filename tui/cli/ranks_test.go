package cli

import (
	"slices"
	"strconv"
	"testing"

	"github.com/wick-dev/wick/engine/sched"
	"github.com/wick-dev/wick/engine/spec"
)

// TestRankFilterGroupRankFromStatus: `wick log --rank N` picks the lines of the rank
// the node's status names (its group rank, which under c10d or Slurm need not be the
// replica index), the rank the wall's pane and the metrics call N, from torchrun's
// teed lines alone (no rendezvous block: torchrun without LOGLEVEL=INFO).
func TestRankFilterGroupRankFromStatus(t *testing.T) {
	d := &sched.Description{App: &spec.AppDef{Name: "ddp", Roles: []spec.Role{
		{Name: "train", Entrypoint: "bash", Args: []string{"-c", "torchrun --nproc_per_node=2 train.py"}, NumReplicas: 2},
	}}}
	rs := spec.RoleStatus{Role: "train"}
	for k := range 2 {
		rs.Replicas = append(rs.Replicas, spec.ReplicaStatus{ID: k, Role: "train", GroupRank: spec.IntPtr(1 - k)})
	}
	d.Status.Roles = []spec.RoleStatus{rs}
	lines := []sched.Line{
		{Role: "train", Replica: 0, Text: "agent starting"},
		{Role: "train", Replica: 0, Text: "[0]:step 1 loss 2.5"},
		{Role: "train", Replica: 0, Text: "[1]:step 1 loss 3.5"},
		{Role: "train", Replica: 1, Text: "[0]:step 1 loss 0.5"},
		{Role: "train", Replica: 1, Text: "[1]:step 1 loss 1.5"},
	}
	for _, c := range []struct {
		ranks []int
		want  []string
	}{
		{[]int{3}, []string{"train/0 [1]:step 1 loss 3.5"}},
		{[]int{1}, []string{"train/1 [1]:step 1 loss 1.5"}},
		{[]int{0, 2}, []string{"train/0 [0]:step 1 loss 2.5", "train/1 [0]:step 1 loss 0.5"}},
	} {
		var got []string
		emit, prefixed := rankFilter(d, c.ranks, func(l sched.Line) error {
			got = append(got, l.Role+"/"+strconv.Itoa(l.Replica)+" "+l.Text)
			return nil
		})
		for _, l := range lines {
			if err := emit(l); err != nil {
				t.Fatal(err)
			}
		}
		if !slices.Equal(got, c.want) || !prefixed() {
			t.Errorf("--rank %v: %q (prefixed %v), want %q", c.ranks, got, prefixed(), c.want)
		}
	}
}
