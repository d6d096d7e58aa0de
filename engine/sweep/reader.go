package sweep

import (
	"context"
	"sync"

	"github.com/wick-dev/wick/engine/metrics"
	"github.com/wick-dev/wick/engine/spec"
)

// Reader reads the metrics of a sweep's apps (or any apps), each app's new lines only:
// a finished app is read to its end once, a running one from where its last reading
// ended (metrics.Position into a metrics.Store kept per app). The UI's sweep chart and
// compare view refresh through one while an app runs. A Reader is not safe for
// concurrent use: one reading at a time; the Runs it returns are copies, the caller's.
type Reader struct {
	cfg  metrics.Config
	apps map[string]*readApp // by handle
}

type readApp struct {
	store *metrics.Store
	pos   metrics.Position
	ended bool          // the app had ended before its last reading: nothing more to read
	state spec.AppState // as its last description said
	run   *Run
}

// NewReader returns a Reader that reads metrics with cfg.
func NewReader(cfg metrics.Config) *Reader {
	return &Reader{cfg: cfg, apps: map[string]*readApp{}}
}

// Config is the metrics configuration the reader reads with.
func (rd *Reader) Config() metrics.Config { return rd.cfg }

// Read reads what each of apps has written since the last reading, a few apps at once,
// and returns a Run per app, in order. A queued app is not read (nothing ran yet); an
// app read is described, and its State in apps is set to what its description says.
// An app whose logs cannot be read keeps its older metrics (or none) and is read again
// next time.
func (rd *Reader) Read(ctx context.Context, src MetricsReader, apps []spec.AppStatus) []*Run {
	sem := make(chan struct{}, readParallel)
	var wg sync.WaitGroup
	ras := make([]*readApp, len(apps))
	for i := range apps {
		a := &apps[i]
		ra := rd.apps[a.Handle]
		if ra == nil {
			ra = &readApp{store: metrics.NewStore(rd.cfg), run: &Run{Handle: a.Handle, Stats: map[string]*Stat{}}}
			rd.apps[a.Handle] = ra
		}
		ras[i] = ra
		if ra.ended {
			a.State = ra.state
			continue
		}
		if a.State == spec.Queued {
			continue
		}
		h, err := spec.ParseHandle(a.Handle)
		if err != nil {
			continue
		}
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			d, err := src.Describe(ctx, h)
			if err != nil {
				return // gone: the next reading tries again
			}
			a.State, ra.state = d.Status.State, d.Status.State
			if len(d.Status.Roles) == 0 {
				return // never launched
			}
			ended := d.Status.State.Terminal()
			if _, err := ra.pos.Read(ctx, src, h, d, ra.store, nil); err != nil {
				ended = false // read again
			}
			ra.ended = ended
			ra.run = RunOf(a.Handle, ra.store)
		})
	}
	wg.Wait()
	runs := make([]*Run, len(apps))
	for i, ra := range ras {
		r := *ra.run // the alarm is the caller's (MarkAlarms); the stats are not changed
		r.Alarm = ""
		runs[i] = &r
	}
	return runs
}
