package runner

import (
	"context"
	"errors"
	"fmt"

	"github.com/wick-dev/wick/engine/sched"
	"github.com/wick-dev/wick/engine/spec"
)

// Kill stops the app like Cancel, but without the grace period (sched.Killer). A
// scheduler that cannot is an error saying so, and nothing is stopped: a quiet
// graceful cancel is not what --now asked for. An app of such a scheduler that has
// ended is left as it is, without error, as Cancel leaves it.
func (r *Runner) Kill(ctx context.Context, h spec.Handle) error {
	s, err := r.schedulerOf(h)
	if err != nil {
		return err
	}
	k, ok := s.(sched.Killer)
	if !ok {
		// An app that is not there, or has ended, is answered as cancel answers it
		// (no such app; nothing to do), not with a refusal that suggests a cancel.
		d, err := r.Describe(ctx, h)
		if err != nil {
			return err
		}
		if d.Status.State.Terminal() {
			return nil
		}
		return fmt.Errorf("%s cannot kill an app at once: `wick cancel %s` (without --now) stops it with its grace period", h.Scheduler, h)
	}
	if _, err := r.Describe(ctx, h); err != nil && errors.Is(err, sched.ErrNotFound) {
		return err
	}
	if _, err := s.Describe(ctx, h.AppID); isNotFound(err) {
		if handled, err := r.cancelQueued(ctx, h, false); handled || err != nil {
			return err // out of its sweep's queue
		}
	}
	if err := k.Kill(ctx, h.AppID); err != nil {
		return notFound(h, err)
	}
	return nil
}
