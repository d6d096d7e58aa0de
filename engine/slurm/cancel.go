package slurm

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/wick-dev/wick/engine/sched"
	"github.com/wick-dev/wick/engine/spec"
)

// Cancel asks Slurm to stop the job (scancel) and returns without waiting. A job that
// has ended is left alone.
func (s *Scheduler) Cancel(ctx context.Context, appID string) error {
	if err := s.reachable(ctx); err != nil {
		return fmt.Errorf("slurm: cannot cancel job %s: %w", appID, err)
	}
	d, err := s.Describe(ctx, appID)
	if err != nil {
		return err
	}
	if d.Status.State.Terminal() {
		return nil
	}
	if _, err := command(ctx, nil, "scancel", appID); err != nil {
		var ce *CommandError
		if errors.As(err, &ce) && (strings.Contains(ce.Stderr, "already completing or completed") || strings.Contains(ce.Stderr, "Invalid job id")) {
			return nil
		}
		return fmt.Errorf("slurm: %w", err)
	}
	return nil
}

// Delete removes what wick keeps of the job: its record and its log and exit files.
// A job still running is refused unless force, which cancels it first.
func (s *Scheduler) Delete(ctx context.Context, appID string, force bool) error {
	d, err := s.Describe(ctx, appID)
	if err != nil {
		return err
	}
	if !d.Status.State.Terminal() && d.Status.State != spec.UnknownState {
		if !force {
			return fmt.Errorf("%w: job %s is %s (cancel it first, or delete --force)", sched.ErrRunning, appID, d.Status.State)
		}
		if err := s.Cancel(ctx, appID); err != nil {
			return err
		}
	}
	rec, err := s.loadRecord(appID)
	if err != nil || rec == nil {
		return err
	}
	var errs []error
	rm := func(p string) {
		if err := os.Remove(p); err != nil && !errors.Is(err, os.ErrNotExist) {
			errs = append(errs, err)
		}
	}
	for _, r := range rec.Replicas {
		rm(r.Stdout)
		rm(r.Stderr)
		rm(r.ExitFile)
		rm(errorFile(r.ExitFile))
		rm(timesFile(r.ExitFile))
	}
	rm(rec.BatchLog)
	rm(s.recordPath(appID))
	return errors.Join(errs...)
}
