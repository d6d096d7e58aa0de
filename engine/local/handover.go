package local

import (
	"context"

	"github.com/wick-dev/wick/engine/logs"
	"github.com/wick-dev/wick/engine/spec"
)

// awaitSupervisor is for a follower opened while the app is being launched: until its
// supervisor takes it over, the app's logs do not exist yet and the only writer known
// is the launcher, which exits as soon as the app is started (a follower watching it
// would end there, while the app runs on). It waits until the supervisor has taken
// over (and returns it), the app has ended, or the launcher is gone (and returns the
// writer of ls). ls is the app's state as the caller just read it: the state file is
// read again only while the launch is under way.
func (s *Scheduler) awaitSupervisor(ctx context.Context, appDir string, ls logState) (logs.Proc, error) {
	w := ls.writer()
	if ls.terminal {
		return w, nil
	}
	if ls.started {
		return ls.supervisor, nil
	}
	watch, err := s.watcher.Add(appDir)
	if err != nil {
		return w, nil
	}
	defer watch.Close()
	gone, stop := s.watcher.WatchProc(ls.owner)
	defer stop()
	for {
		st, err := readState(appDir)
		switch {
		case err != nil, st.State.Terminal():
			return w, nil
		case started(st):
			return st.Supervisor, nil
		}
		select {
		case <-watch.C():
		case <-gone:
			return w, nil
		case <-ctx.Done():
			return w, ctx.Err()
		}
	}
}

// started reports whether the supervisor has taken the app over and created its logs:
// it records RUNNING once the replicas are started, after the log files exist.
func started(st *state) bool {
	return !st.Supervisor.IsZero() && st.State != spec.Submitted && st.State != spec.Pending
}
