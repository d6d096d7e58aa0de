package runner

import (
	"github.com/wick-dev/wick/engine/docker"
	"github.com/wick-dev/wick/engine/local"
	"github.com/wick-dev/wick/engine/sched"
)

// Builtin returns the registry of wick's schedulers, the default (local_cwd) first.
// A new scheduler is one more line here; nothing in the UI changes.
func Builtin() *sched.Registry {
	r := &sched.Registry{}
	r.Register(local.NameCwd, local.NewCwd)
	r.Register(local.NameDir, local.NewDir)
	r.Register(docker.Name, docker.New)
	return r
}
