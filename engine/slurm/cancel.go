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
// has ended is left alone. As status does, it pings slurmctld only when a command is
// slow or fails (see whileReachable): a controller that is down makes Cancel fail at
// once with ErrControllerDown, without scancel's 18 s of retries, saying that nothing
// was cancelled and what to do.
func (s *Scheduler) Cancel(ctx context.Context, appID string) error {
	d, err := s.Describe(ctx, appID)
	if err != nil {
		if errors.Is(err, ErrControllerDown) {
			return cannotCancel(appID, err)
		}
		return err
	}
	if d.Status.LastKnown {
		// Describe answered from the record: its ping found the controller down, and
		// reachable answers from that ping for pingEvery, asking nothing of Slurm.
		if err := s.reachable(ctx); err != nil {
			return cannotCancel(appID, err)
		}
	}
	if d.Status.State.Terminal() {
		return nil
	}
	_, err = whileReachable(ctx, s, func(ctx context.Context) ([]byte, error) {
		return command(ctx, nil, "scancel", appID)
	})
	var ce *CommandError
	var na *NoAnswerError
	switch {
	case err == nil:
		return nil
	case errors.As(err, &ce) && (strings.Contains(ce.Stderr, "already completing or completed") || strings.Contains(ce.Stderr, "Invalid job id")):
		return nil
	case errors.As(err, &na):
		// scancel may have reached slurmctld before it stopped answering.
		return fmt.Errorf("slurm: job %s may or may not be cancelled: %w; wick does not retry it: wick status says which once slurmctld answers, and wick cancel asks again", appID, err)
	case errors.Is(err, ErrControllerDown):
		return cannotCancel(appID, err)
	}
	return fmt.Errorf("slurm: %w", err)
}

// cannotCancel is Cancel's error when the controller does not answer: nothing was
// sent, and nothing will be unless the user asks again.
func cannotCancel(appID string, err error) error {
	return fmt.Errorf("slurm: cannot cancel job %s: %w; nothing was cancelled and wick will not retry: the job goes on as Slurm has it; wick cancel again once `scontrol ping` says UP", appID, err)
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
		rm(workersFile(r.ExitFile))
	}
	rm(rec.BatchLog)
	rm(s.recordPath(appID))
	return errors.Join(errs...)
}
