package cli

import (
	"slices"

	"github.com/wick-dev/wick/engine/ranks"
	"github.com/wick-dev/wick/engine/sched"
)

// rankFilter wraps emit so that only the lines of the given global ranks pass: each
// replica is a torchrun node whose ranks are learned as the wall and the metrics learn
// them (a ranks.Tracker: its status, its workers' group rank, and its own lines), and
// the traceback the app's root cause puts on a rank is that rank's. Lines are passed
// as stored, torchrun's "[local_rank]:" prefix included.
// prefixed reports whether any line carried such a prefix: without one (torchrun run
// without --tee) no line can be told to be a rank's.
func rankFilter(d *sched.Description, want []int, emit func(sched.Line) error) (filtered func(sched.Line) error, prefixed func() bool) {
	t := ranks.NewTracker(d)
	seen := false
	return func(l sched.Line) error {
		t.Observe(l)
		g, _, ok := t.Attribute(&l)
		seen = seen || ok
		if ok && slices.Contains(want, g) {
			return emit(l)
		}
		return nil
	}, func() bool { return seen }
}
