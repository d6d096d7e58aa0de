package runner

import (
	"github.com/wick-dev/wick/engine/docker/front"
	"github.com/wick-dev/wick/engine/kubernetes/remote"
	"github.com/wick-dev/wick/engine/local"
	"github.com/wick-dev/wick/engine/sched"
	"github.com/wick-dev/wick/engine/slurm"
)

// Builtin returns the registry of wick's schedulers, the default (local_cwd) first.
// Each scheduler package registers itself, by name, into the registry it is given (its
// Register); a new scheduler is one more call here, and nothing in the UI changes.
// There is no global registry: tests and embedders build their own.
func Builtin() *sched.Registry {
	r := &sched.Registry{}
	local.Register(r)
	front.Register(r)
	slurm.Register(r)
	remote.Register(r)
	return r
}
