package runner

import (
	"context"
	"errors"

	"github.com/wick-dev/wick/engine/sched"
	"github.com/wick-dev/wick/engine/spec"
)

// Kill stops the app like Cancel, but without the grace period where the scheduler
// can (sched.Killer); elsewhere it is Cancel.
func (r *Runner) Kill(ctx context.Context, h spec.Handle) error {
	s, err := r.schedulerOf(h)
	if err != nil {
		return err
	}
	k, ok := s.(sched.Killer)
	if !ok {
		return r.Cancel(ctx, h)
	}
	if _, err := r.Describe(ctx, h); err != nil && errors.Is(err, sched.ErrNotFound) {
		return err
	}
	if err := k.Kill(ctx, h.AppID); err != nil {
		return notFound(h, err)
	}
	return nil
}
