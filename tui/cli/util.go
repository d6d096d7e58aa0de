package cli

import (
	"context"
	"time"
)

// contextWithTimeout is context.WithTimeout, where a zero or negative d means no limit.
func contextWithTimeout(ctx context.Context, d time.Duration) (context.Context, context.CancelFunc) {
	if d <= 0 {
		return context.WithCancel(ctx)
	}
	return context.WithTimeout(ctx, d)
}
