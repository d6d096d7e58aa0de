package docker

import "github.com/wick-dev/wick/engine/sched"

// Register adds local_docker to r.
func Register(r *sched.Registry) { r.Register(Name, New) }
