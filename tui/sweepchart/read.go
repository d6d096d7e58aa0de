package sweepchart

import (
	"cmp"
	"context"
	"slices"
	"sync"

	"github.com/wick-dev/wick/engine/metrics"
	"github.com/wick-dev/wick/engine/spec"
	"github.com/wick-dev/wick/engine/sweep"
	"github.com/wick-dev/wick/tui/common"
)

// readParallel is how many apps' logs one refresh reads at once, as `wick metrics
// --sweep` does: the reading is mostly the disk and one core's parsing.
const readParallel = 4

// reader reads the metrics of a sweep's apps, each app's new lines only: a finished
// app is read to its end once, a running one from where its last reading ended. Only
// the command reading it touches it; the view gets snapshots (sweep.Run: stats and
// curves copied out of the stores), so that drawing never races a reading.
type reader struct {
	cfg  metrics.Config
	apps map[string]*readApp // by handle
}

type readApp struct {
	store *metrics.Store
	pos   metrics.Position
	ended bool // the app had ended before its last reading: nothing more to read
	run   *sweep.Run
}

// snapshot is what one reading gives the view: the sweep's apps as listed, each app's
// run by handle, and the metric names over every app (app by app, in order).
type snapshot struct {
	apps  []spec.AppStatus
	runs  map[string]*sweep.Run
	names []string
	errs  []error
}

// read lists the sweep's apps and reads the metrics each has written since the last
// reading. An app whose logs cannot be read is shown without (or with its older)
// metrics; listing errors are returned for the view to show.
func (rd *reader) read(ctx context.Context, b common.Backend, id string) snapshot {
	all, errs := b.List(ctx, "")
	var apps []spec.AppStatus
	for _, a := range all {
		if a.Sweep != nil && a.Sweep.ID == id {
			apps = append(apps, a)
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
	sem := make(chan struct{}, readParallel)
	var wg sync.WaitGroup
	for _, a := range apps {
		ra := rd.apps[a.Handle]
		if ra == nil {
			ra = &readApp{store: metrics.NewStore(rd.cfg), run: &sweep.Run{Handle: a.Handle, Stats: map[string]*sweep.Stat{}}}
			rd.apps[a.Handle] = ra
		}
		if ra.ended || a.State == spec.Queued {
			continue
		}
		h, err := spec.ParseHandle(a.Handle)
		if err != nil {
			continue
		}
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			d, err := b.Describe(ctx, h)
			if err != nil || len(d.Status.Roles) == 0 {
				return // never launched, or gone: the next refresh tries again
			}
			ended := d.Status.State.Terminal()
			if _, err := ra.pos.Read(ctx, b, h, d, ra.store, nil); err != nil {
				ended = false // read again
			}
			ra.ended = ended
			ra.run = sweep.RunOf(a.Handle, ra.store)
		})
	}
	wg.Wait()
	s := snapshot{apps: apps, runs: make(map[string]*sweep.Run, len(apps)), errs: errs}
	seen := map[string]bool{}
	for _, a := range apps {
		ra := rd.apps[a.Handle]
		s.runs[a.Handle] = ra.run
		for _, n := range ra.store.Names() {
			if !seen[n] {
				seen[n] = true
				s.names = append(s.names, n)
			}
		}
	}
	return s
}
