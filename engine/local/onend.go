package local

import (
	"github.com/wick-dev/wick/engine/alerts"
	"github.com/wick-dev/wick/engine/safefs"
	"github.com/wick-dev/wick/engine/spec"
)

const (
	// maxOnEnd bounds the on_end run option's command.
	maxOnEnd = alerts.MaxCommand
	// onEndLog is the file in the app's state directory that gets the on_end
	// command's output (its first alerts.MaxLog bytes).
	onEndLog = alerts.EndLog
)

// RunsOnEnd says that the app's supervisor runs on_end itself: the Runner's watcher
// (engine/alerts) runs only on_alarm for a local app.
func (s *Scheduler) RunsOnEnd() bool { return true }

// runOnEnd runs the app's on_end command, if it has one, once its final state is
// written: through sh -c, in its own process group, at most alerts.Timeout, with the
// app in WICK_* variables (alerts.Vars), its output in on_end.log. It fires whether a
// UI is open or not. A failure is logged; the app's state is already final and stays
// as it is.
func (sv *supervisor) runOnEnd() {
	if sv.req.OnEnd == "" {
		return
	}
	handle := spec.Handle{Scheduler: sv.l.Scheduler, Session: sv.req.Session, AppID: sv.req.AppID}
	out, err := alerts.Run(sv.req.OnEnd, sv.dir,
		alerts.Vars(handle, sv.st.State, spec.ErrorMessage(sv.st.StructuredError), sv.req.LogDir))
	if werr := safefs.WriteFileAtomic(sv.dir, onEndLog, out); werr != nil {
		sv.logf("on_end: %v", werr)
	}
	if err != nil {
		sv.logf("on_end %q: %v", sv.req.OnEnd, err)
	}
}
