package sched

import "context"

// Killer is implemented by schedulers that can stop an app without its grace period:
// every replica is killed at once (SIGKILL), as a user who will not wait for a
// checkpoint asks. A repeated Cancel never does this.
type Killer interface {
	Kill(ctx context.Context, appID string) error
}
