package docker

import (
	"strconv"
	"testing"

	"github.com/wick-dev/wick/engine/sched"
	"github.com/wick-dev/wick/engine/spec"
)

// A dist.ddp role's nodes get their group ranks in the order torch's c10d rendezvous
// gives them: their host names sorted as strings, so that of 12 nodes replica 10 is
// group rank 2. A role that is not torchrun, or whose rendezvous is static, gets none.
func TestGroupRanksFollowHostNames(t *testing.T) {
	cmd := "torchrun --rdzv_backend c10d --rdzv_endpoint $${TORCHX_RANK0_HOST:=localhost}:29500 --nnodes 12 --nproc_per_node 2 --tee 1 train.py"
	mk := func(name, args string, n int) (spec.Role, spec.RoleStatus) {
		role := spec.Role{Name: name, Entrypoint: "bash", Args: []string{"-c", args}, NumReplicas: n}
		rs := spec.RoleStatus{Role: name}
		for k := range n {
			rs.Replicas = append(rs.Replicas, spec.ReplicaStatus{ID: k, Role: name, Hostname: "ddp-x1-" + name + "-" + strconv.Itoa(k)})
		}
		return role, rs
	}
	train, trainSt := mk("train", cmd, 12)
	static, staticSt := mk("static", "torchrun --nnodes 2 --node_rank 0 train.py", 2)
	d := &sched.Description{App: &spec.AppDef{Roles: []spec.Role{train, static}}}
	d.Status.Roles = []spec.RoleStatus{trainSt, staticSt}
	groupRanks(d)
	want := map[int]int{0: 0, 1: 1, 10: 2, 11: 3, 2: 4, 9: 11}
	for k, g := range want {
		if r := d.Status.Roles[0].Replicas[k]; r.GroupRank == nil || *r.GroupRank != g {
			t.Errorf("replica %d: group rank %v, want %d", k, r.GroupRank, g)
		}
	}
	for _, r := range d.Status.Roles[1].Replicas {
		if r.GroupRank != nil {
			t.Errorf("static rendezvous: replica %d has group rank %d", r.ID, *r.GroupRank)
		}
	}
}
