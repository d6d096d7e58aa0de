package cli

import (
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/wick-dev/wick/engine/sched"
	"github.com/wick-dev/wick/engine/spec"
)

// c10dApp describes a -j 2x2 c10d app whose status gives the group ranks in groups
// (nil: not known yet).
func c10dApp(groups ...*int) *sched.Description {
	d := &sched.Description{App: &spec.AppDef{Name: "ddp", Roles: []spec.Role{
		{Name: "train", Entrypoint: "bash", Args: []string{"-c", "torchrun --rdzv_backend c10d --nnodes 2 --nproc_per_node=2 train.py"}, NumReplicas: 2},
	}}}
	d.Status.State = spec.Running
	rs := spec.RoleStatus{Role: "train"}
	for k, g := range groups {
		rs.Replicas = append(rs.Replicas, spec.ReplicaStatus{ID: k, Role: "train", GroupRank: g})
	}
	d.Status.Roles = []spec.RoleStatus{rs}
	return d
}

// `wick log --rank N` does not guess the ranks of a c10d node whose group rank is not
// known yet (node k need not be group rank k): its workers' lines wait until a newer
// status tells, then pass as that rank's; those still unknown at the end are not
// printed, and a warning says how many.
func TestRankFilterWaitsForTheGroupRank(t *testing.T) {
	fresh := make(chan *sched.Description, 1)
	var got []string
	rf := newRankFilter(c10dApp(nil, nil), []int{0}, fresh, func(l sched.Line) error {
		got = append(got, "train/"+strconv.Itoa(l.Replica)+" "+l.Text)
		return nil
	})
	feed := func(k int, text string) {
		t.Helper()
		if err := rf.line(sched.Line{Role: "train", Replica: k, Text: text}); err != nil {
			t.Fatal(err)
		}
	}
	feed(0, "[0]:epoch 0 loss 2.5") // rank 2: node 0 is group rank 1
	feed(1, "[0]:epoch 0 loss 0.5") // rank 0
	if len(got) != 0 {
		t.Fatalf("passed before the group ranks were known: %q", got)
	}
	fresh <- c10dApp(spec.IntPtr(1), nil) // node 0 learned; node 1 not yet
	feed(0, "[0]:epoch 1 loss 2.4")
	if len(got) != 0 {
		t.Fatalf("node 0 is rank 2 and 3, yet %q passed", got)
	}
	fresh <- c10dApp(spec.IntPtr(1), spec.IntPtr(0))
	if err := rf.idle(func() error { return nil })(); err != nil {
		t.Fatal(err)
	}
	feed(1, "[0]:epoch 1 loss 0.4")
	if want := []string{"train/1 [0]:epoch 0 loss 0.5", "train/1 [0]:epoch 1 loss 0.4"}; !slices.Equal(got, want) {
		t.Errorf("--rank 0 printed %q, want %q", got, want)
	}

	// Still unknown at the end: not shown, and said.
	got = nil
	rf = newRankFilter(c10dApp(nil, nil), []int{0}, nil, func(l sched.Line) error {
		got = append(got, l.Text)
		return nil
	})
	feed(1, "[0]:epoch 0 loss 0.5")
	var warn strings.Builder
	if err := rf.finish(c10dApp(nil, nil), &warn, spec.Handle{Scheduler: "local_cwd", Session: "wick", AppID: "ddp-1"}); err != nil {
		t.Fatal(err)
	}
	if len(got) != 0 || !strings.Contains(warn.String(), "1 lines of local_cwd://wick/ddp-1/train/1 are not shown") {
		t.Errorf("printed %q, warned %q", got, warn.String())
	}
}
