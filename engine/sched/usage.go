package sched

import (
	"context"

	"github.com/wick-dev/wick/engine/spec"
)

// Usage is what one replica costs the machine at a moment (see spec.Usage).
type Usage = spec.Usage

// ReplicaKey names one replica of an app.
type ReplicaKey struct {
	Role    string
	Replica int
}

// UsageReader is implemented by schedulers that can tell what each running replica of
// an app uses. Replicas that are not running (or whose usage cannot be read) are left
// out of the map. A reader keeps the previous sample of each process it has seen (a
// bounded number) to compute CPU over the interval between two calls, so callers that
// refresh should keep one scheduler (one Runner) between calls.
type UsageReader interface {
	Usage(ctx context.Context, appID string) (map[ReplicaKey]Usage, error)
}
