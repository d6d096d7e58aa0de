package kubernetes

import "github.com/wick-dev/wick/engine/sched"

// Register adds the kubernetes scheduler to r.
func Register(r *sched.Registry) { r.Register(Name, New) }
