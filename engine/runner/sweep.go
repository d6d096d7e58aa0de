package runner

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/wick-dev/wick/engine/sched"
	"github.com/wick-dev/wick/engine/spec"
	"github.com/wick-dev/wick/engine/sweep"
)

// Sweeps is the store of the sweeps of this runner's WICK_HOME, or nil without one.
func (r *Runner) Sweeps() *sweep.Store { return r.sweeps }

// sweepDescription describes an app of a sweep that no scheduler has: queued, or
// never launched. ok is false when no sweep holds h.
func (r *Runner) sweepDescription(h spec.Handle) (*sched.Description, bool) {
	if r.sweeps == nil {
		return nil, false
	}
	s, ok := r.sweeps.Find(h.String())
	if !ok {
		return nil, false
	}
	e := s.Entry(h.String())
	if e.State == sweep.Launched || e.State == sweep.Deleted {
		return nil, false // its scheduler forgot it, or it was deleted
	}
	d := &sched.Description{Status: s.Status(e)}
	if p, err := r.sweeps.Plan(s.ID, e.Index); err == nil {
		d.App = p.App
	}
	return d, true
}

// withSweeps ties listed apps to their sweeps and adds the apps of sweeps that no
// scheduler has yet (QUEUED).
func (r *Runner) withSweeps(apps []spec.AppStatus, schedName string) []spec.AppStatus {
	if r.sweeps == nil {
		return apps
	}
	all, err := r.sweeps.All()
	if err != nil || len(all) == 0 {
		return apps
	}
	return sweep.Annotate(apps, all, schedName)
}

// cancelQueued cancels an app of a sweep that its queue has not launched: it leaves
// the queue. handled is false when the app is not (or no longer) waiting in a queue.
func (r *Runner) cancelQueued(ctx context.Context, h spec.Handle, del bool) (handled bool, err error) {
	if r.sweeps == nil {
		return false, nil
	}
	found, launching, err := r.sweeps.CancelEntry(h.String(), del)
	if err != nil || !found {
		return found, err
	}
	if launching {
		// Being launched: the queue cancels it once launched; its scheduler may
		// have it already.
		if s, err := r.schedulerOf(h); err == nil {
			_ = s.Cancel(ctx, h.AppID)
		}
	}
	return true, nil
}

// waitQueued waits while the app of a sweep is queued: it returns its final status
// when it leaves the queue without running (cancelled, its launch failed), or nil
// once it is launched (its scheduler then has it).
func (r *Runner) waitQueued(ctx context.Context, h spec.Handle, interval time.Duration) (*spec.AppStatus, error) {
	t := time.NewTicker(max(interval, 10*time.Millisecond))
	defer t.Stop()
	for {
		d, ok := r.sweepDescription(h)
		if !ok {
			return nil, nil
		}
		if d.Status.State.Terminal() {
			return &d.Status, nil
		}
		select {
		case <-ctx.Done():
			return &d.Status, ctx.Err()
		case <-t.C:
		}
	}
}

// errQueuedApp says that an app of a sweep cannot be deleted while it is queued.
func errQueuedApp(h spec.Handle) error {
	return fmt.Errorf("%w: %s is queued in its sweep (cancel it first, or use --force)", sched.ErrRunning, h)
}

// isNotFound says whether err is a scheduler's "no such app".
func isNotFound(err error) bool { return errors.Is(err, sched.ErrNotFound) }

// deleteQueued deletes an app of a sweep that no scheduler has: it leaves the sweep
// (a queued one only with force). handled is false when no sweep holds it unlaunched.
func (r *Runner) deleteQueued(ctx context.Context, h spec.Handle, force bool) (handled bool, err error) {
	d, ok := r.sweepDescription(h)
	if !ok {
		return false, nil
	}
	if d.Status.State == spec.Queued && !force {
		return true, errQueuedApp(h)
	}
	return r.cancelQueued(ctx, h, true)
}

// logsNotFound is the error of logs asked of an app its scheduler does not have: for
// an app queued in a sweep, that it has none yet.
func (r *Runner) logsNotFound(h spec.Handle, err error) error {
	if isNotFound(err) {
		if d, ok := r.sweepDescription(h); ok && d.Status.State == spec.Queued {
			return fmt.Errorf("%s is queued in sweep %s: no logs until it starts", h, d.Status.Sweep.ID)
		}
	}
	return notFound(h, err)
}

// cancelSweepParallel is how many of a sweep's apps CancelSweep stops at once: a
// Docker app's cancel waits for its containers' grace period.
const cancelSweepParallel = 8

// CancelSweep cancels every app of sweep id, for `wick cancel ID`'s Ctrl-C and the
// UI's x on a sweep's row alike: it first takes every queued app out of the queue (one
// write of the sweep), then cancels the apps that were launched, a few at once. In
// that order, a running app's end cannot start a queued one. It returns how many
// queued apps it took out, the launched apps it cancelled (those their scheduler no
// longer has left out), and one error per app it could not cancel.
func (r *Runner) CancelSweep(ctx context.Context, id string) (removed int, cancelled []spec.Handle, err error) {
	if r.sweeps == nil {
		return 0, nil, errors.New("no state directory: no sweeps")
	}
	launched, removed, err := r.sweeps.CancelQueued(id)
	if err != nil {
		return 0, nil, err
	}
	hs := make([]spec.Handle, 0, len(launched))
	for _, s := range launched {
		if h, err := spec.ParseHandle(s); err == nil {
			hs = append(hs, h)
		}
	}
	errs := make([]error, len(hs))
	gone := make([]bool, len(hs))
	sem := make(chan struct{}, cancelSweepParallel)
	var wg sync.WaitGroup
	for i, h := range hs {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			if err := r.Cancel(ctx, h); isNotFound(err) {
				gone[i] = true
			} else if err != nil {
				errs[i] = fmt.Errorf("%s: %w", h, err)
			}
		})
	}
	wg.Wait()
	for i, h := range hs {
		if !gone[i] && errs[i] == nil {
			cancelled = append(cancelled, h)
		}
	}
	return removed, cancelled, errors.Join(errs...)
}

// PlanSweep plans a sweep (sweep.Prepare): the one planning of a grid, shared by `wick
// run --sweep` and the UI's sweep form. The machine's device pool is read here, from
// req.Env's CUDA_VISIBLE_DEVICES or nvidia-smi, and dealt by the sweep's queue: no
// caller deals devices.
func (r *Runner) PlanSweep(ctx context.Context, req sweep.Request) (*sweep.Planned, error) {
	if req.WorkDir == "" {
		req.WorkDir = r.cfg.WorkDir
	}
	return sweep.Prepare(ctx, r, req)
}

// LaunchSweep writes a planned sweep and starts its queue process (`wick __sweep
// DIR`, detached as a supervisor is); it returns once the queue owns the sweep.
func (r *Runner) LaunchSweep(ctx context.Context, p *sweep.Planned) error {
	return r.starter().Launch(ctx, r.sweeps, p)
}

// ResumeSweep starts the queue of sweep id again, unless it runs or has nothing
// left to do (started false).
func (r *Runner) ResumeSweep(ctx context.Context, id string) (sw *sweep.Sweep, started bool, err error) {
	return r.starter().Resume(ctx, r.sweeps, id)
}

func (r *Runner) starter() sweep.Starter {
	return sweep.Starter{Self: r.cfg.Self, Home: r.cfg.StateDir, WorkDir: r.cfg.WorkDir}
}

// ErrNotInSweep is wrapped by MoveQueued's error when the app is no app of a sweep.
var ErrNotInSweep = errors.New("not an app of a sweep")

// MoveQueued puts the queued app h at place `to` (1: the next to start) of its
// sweep's queue, as `wick sweep move` does, and returns its sweep and the place it
// got: a place past the end is the last (last true).
func (r *Runner) MoveQueued(h spec.Handle, to int) (sw *sweep.Sweep, place int, last bool, err error) {
	if to < 1 {
		return nil, 0, false, fmt.Errorf("place %d: want 1 or more", to)
	}
	found, ok := r.sweeps.Find(h.String())
	if !ok {
		return nil, 0, false, fmt.Errorf("%s: %w", h, ErrNotInSweep)
	}
	place = to
	err = r.sweeps.Update(found.ID, func(s *sweep.Sweep) error {
		n := 0
		for i := range s.Entries {
			if s.Entries[i].State == sweep.Queued {
				n++
			}
		}
		if to >= n {
			place, last = n, true
		}
		return s.Move(h.String(), to)
	})
	if err != nil {
		return nil, 0, false, err
	}
	return found, place, last, nil
}
