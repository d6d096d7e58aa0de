package runner

import (
	"context"
	"time"

	"github.com/wick-dev/wick/engine/gpus"
	"github.com/wick-dev/wick/engine/sched"
	"github.com/wick-dev/wick/engine/spec"
)

// procRoot is where the replicas' processes are read (their parents, their
// environment) to match nvidia-smi's compute processes to replicas.
const procRoot = "/proc"

// attachGPU sets the GPU use of each replica in m (the app's usage, as its
// scheduler read it) from this process's one GPU sampler (gpus.Shared): its
// devices, their utilization and memory, and the memory its own processes hold,
// matched by process tree from the replica's first process (the status's pid, or
// the host's pid of a container's). Where there is no GPU or no nvidia-smi, m is
// left as it is: no GPU use, not a zero one.
func (r *Runner) attachGPU(ctx context.Context, s sched.Scheduler, appID string, m map[sched.ReplicaKey]sched.Usage) {
	if len(m) == 0 {
		return
	}
	smp, err := gpus.Shared().Sample(ctx)
	if err != nil {
		return
	}
	roots := map[int]sched.ReplicaKey{}
	if p, ok := s.(sched.HostPIDer); ok {
		pids, err := p.HostPIDs(ctx, appID)
		if err != nil {
			return
		}
		for k, pid := range pids {
			roots[pid] = k
		}
	} else {
		d, err := s.Describe(ctx, appID)
		if err != nil {
			return
		}
		for _, role := range d.Status.Roles {
			for _, rep := range role.Replicas {
				if rep.State == spec.Running && rep.PID > 0 {
					roots[rep.PID] = sched.ReplicaKey{Role: role.Role, Replica: rep.ID}
				}
			}
		}
	}
	began := time.Now()
	uses := gpus.Attribute(smp, roots, procRoot)
	// The matching is the sampler's cost too (its interval stretches with it).
	gpus.Shared().Charge(time.Since(began))
	for k, use := range uses {
		if u, ok := m[k]; ok {
			u.GPU = &use
			m[k] = u
		}
	}
}
