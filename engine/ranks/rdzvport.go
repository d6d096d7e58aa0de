package ranks

import (
	"regexp"
	"strconv"
	"sync"

	"github.com/wick-dev/wick/engine/spec"
)

// Two dist.ddp apps whose first nodes share a host, each with TorchX's default
// --rdzv_port 29500, would share one c10d store there: the second app's nodes fail to
// bind the port, connect to the first app's store, train under their own rendezvous id
// until the first app ends, and then die of a store error. So a scheduler gives each
// multi-node torchrun role that kept the default port a free one of its own (the local
// schedulers when they plan the app, Slurm's batch script when the job starts, on rank
// 0's node), from one range. A port the user chose is kept.

// DefaultRdzvPort is dist.ddp's --rdzv_port default in TorchX, which wick keeps in the
// AppDef.
const DefaultRdzvPort = 29500

// The ports tried instead: torch's customary range above the default, below the
// kernel's ephemeral ports (which gloo's own connections take).
const (
	RdzvPortFirst = DefaultRdzvPort + 1
	RdzvPortCount = 2000
)

// endpointPort matches the port of torchrun's --rdzv_endpoint (either spelling, with a
// space or "=") when it is the default.
var endpointPort = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`(--rdzv[_-]endpoint[= ]\S*:)` + strconv.Itoa(DefaultRdzvPort) + `\b`)
})

// KeepsDefaultRdzvPort reports whether a role's rendezvous port is for the scheduler to
// pick: a multi-node torchrun role whose c10d port is the default and whose
// --rdzv_endpoint names it.
func KeepsDefaultRdzvPort(role spec.Role) bool {
	if role.NumReplicas < 2 || role.PortMap["c10d"] != DefaultRdzvPort {
		return false
	}
	for _, a := range append([]string{role.Entrypoint}, role.Args...) {
		if endpointPort().MatchString(a) {
			return true
		}
	}
	return false
}

// WithRdzvPort returns argv with the default port of its rendezvous endpoint replaced
// by port (a number, or what stands for one in a script).
func WithRdzvPort(argv []string, port string) []string {
	out := make([]string, len(argv))
	for i, a := range argv {
		out[i] = endpointPort().ReplaceAllString(a, "${1}"+port)
	}
	return out
}
