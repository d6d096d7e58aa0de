package slurm

import "github.com/wick-dev/wick/engine/sched"

// Register adds the slurm scheduler to r.
func Register(r *sched.Registry) { r.Register(Name, New) }
