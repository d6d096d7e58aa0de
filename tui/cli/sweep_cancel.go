package cli

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/wick-dev/wick/engine/sched"
	"github.com/wick-dev/wick/engine/spec"
	"github.com/wick-dev/wick/engine/sweep"
)

// cancelSweep cancels the sweep's apps (runner.CancelSweep: its queue emptied
// first, so that cancelling the running apps starts no queued one).
func (a *app) cancelSweep(id string) error {
	ctx, cancel := context.WithTimeout(a.ctx, 10*time.Second)
	defer cancel()
	_, _, err := a.runner().CancelSweep(ctx, id)
	return err
}

// sweepArgs reads the sweep ids among the handle arguments of cancel (del false) or
// delete (del true): each is replaced by the handles of its apps that were launched
// (and are still known), and the apps that never ran are dealt with at once, in one
// write of the sweep. A cancel empties the queue first, so that cancelling the running
// apps starts no queued one; a delete refuses a sweep with queued apps unless force.
// The ids are returned apart.
func (a *app) sweepArgs(argv []string, del, force bool) (rest []string, ids []string, err error) {
	store := a.runner().Sweeps()
	for _, s := range argv {
		s = trimSlash(s)
		if store == nil || !sweep.IsID(s) {
			rest = append(rest, s)
			continue
		}
		sw, err := store.Load(s)
		if err != nil {
			return nil, nil, usageError{err}
		}
		if del && !force && sw.Waiting() > 0 {
			return nil, nil, fmt.Errorf("%w: sweep %s has %s (wick cancel %s first, or use --force)", sched.ErrRunning, s, spec.Count(sw.Waiting(), "queued app"), s)
		}
		if !del || force {
			_, removed, err := store.CancelQueued(s)
			if err != nil {
				return nil, nil, err
			}
			if removed > 0 {
				fmt.Fprintf(a.env.Stderr, "sweep %s: %s cancelled before they ran\n", s, spec.Count(removed, "queued app"))
			}
		}
		if del {
			n, err := store.Forget(s, force)
			if err != nil {
				return nil, nil, err
			}
			if n > 0 {
				fmt.Fprintf(a.env.Stderr, "sweep %s: %s that never ran deleted\n", s, spec.Count(n, "app"))
			}
		}
		ids = append(ids, s)
		launched, err := a.launchedApps(s)
		if err != nil {
			return nil, nil, err
		}
		rest = append(rest, launched...)
	}
	return rest, ids, nil
}

// launchedApps are the handles of the apps of sweep id that were launched (or are
// being launched) and that their scheduler still knows.
func (a *app) launchedApps(id string) ([]string, error) {
	sw, err := a.runner().Sweeps().Load(id)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, e := range sw.Entries {
		if e.State != sweep.Launched && e.State != sweep.Launching {
			continue
		}
		h, err := spec.ParseHandle(e.Handle)
		if err != nil {
			continue
		}
		if _, err := a.runner().Status(a.ctx, h); errors.Is(err, sched.ErrNotFound) && e.State == sweep.Launched {
			continue // deleted already
		}
		out = append(out, e.Handle)
	}
	return out, nil
}

// forgetSweeps removes the sweeps named on delete's command line once none of their
// apps is left.
func (a *app) forgetSweeps(ids []string) {
	for _, id := range ids {
		sw, err := a.runner().Sweeps().Load(id)
		if err != nil || sw.Waiting() > 0 {
			continue
		}
		left := 0
		for _, e := range sw.Entries {
			if e.State != sweep.Deleted && e.State != sweep.Launched {
				left++
			}
		}
		if launched, err := a.launchedApps(id); err == nil && left+len(launched) == 0 {
			if err := a.runner().Sweeps().Remove(id); err != nil {
				a.warn(fmt.Sprintf("sweep %s: %v", id, err))
			}
		}
	}
}
