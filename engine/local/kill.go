package local

import (
	"context"

	"golang.org/x/sys/unix"
)

// killSignal asks a supervisor to kill its replicas at once, without the stop timeout.
// SIGTERM and SIGINT only ever stop them gracefully.
const killSignal = unix.SIGUSR1

// Kill is Cancel without the grace period: the replicas' process groups get SIGKILL
// at once (the explicit force of a user who will not wait for a checkpoint). It
// returns at once; an app already stopping is killed too.
func (s *Scheduler) Kill(ctx context.Context, appID string) error {
	if err := s.Cancel(ctx, appID); err != nil {
		return err
	}
	_, st, err := s.load(appID)
	if err != nil || st.State.Terminal() || st.Supervisor.IsZero() {
		// Not started: the cancel request stops it before anything runs.
		return err
	}
	return signalProc(st.Supervisor, killSignal)
}
