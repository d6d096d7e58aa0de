package sched

import (
	"context"

	"github.com/wick-dev/wick/engine/spec"
)

// AllHomesLister is implemented by schedulers whose List holds the apps of this
// WICK_HOME only (local_docker: a shared Engine holds other homes' and users' apps,
// which listing would cost an inspection each). ListAllHomes lists every home's,
// other homes' marked Foreign (wick list --all, the UI's A).
type AllHomesLister interface {
	ListAllHomes(ctx context.Context) ([]spec.AppStatus, error)
}
