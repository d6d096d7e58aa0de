package sweepchart

import (
	"cmp"
	"context"
	"slices"

	"github.com/wick-dev/wick/engine/spec"
	"github.com/wick-dev/wick/engine/sweep"
	"github.com/wick-dev/wick/tui/common"
)

// snapshot is what one reading gives the view: the sweep's apps as listed, each app's
// run by handle, and the metric names over every app (app by app, in order). The
// runs are copies (sweep.Reader), so that drawing never races a reading.
type snapshot struct {
	apps  []spec.AppStatus
	runs  map[string]*sweep.Run
	names []string
	errs  []error
}

// read lists the apps charted (keep: a sweep's, or a set's) and reads the metrics each has written since the last
// reading (rd: only the command reading it touches it). An app whose logs cannot be
// read is shown without (or with its older) metrics; listing errors are returned for
// the view to show.
func read(ctx context.Context, rd *sweep.Reader, b common.Backend, keep func(*spec.AppStatus) bool) snapshot {
	all, errs := b.List(ctx, "")
	var apps []spec.AppStatus
	for i := range all {
		if keep(&all[i]) {
			apps = append(apps, all[i])
		}
	}
	// The grid's order, the queued apps last: the queue launches the apps in its
	// order, one after the other.
	slices.SortStableFunc(apps, func(a, b spec.AppStatus) int {
		qa, qb := a.State == spec.Queued, b.State == spec.Queued
		if qa != qb {
			if qa {
				return 1
			}
			return -1
		}
		return cmp.Or(a.Created.Compare(b.Created), cmp.Compare(a.Handle, b.Handle))
	})
	runs := rd.Read(ctx, b, apps)
	s := snapshot{apps: apps, runs: make(map[string]*sweep.Run, len(apps)), errs: errs}
	for i, a := range apps {
		s.runs[a.Handle] = runs[i]
	}
	s.names = sweep.Names(runs)
	return s
}
