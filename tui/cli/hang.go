package cli

import (
	"bufio"
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/wick-dev/wick/engine/hang"
	"github.com/wick-dev/wick/engine/sched"
	"github.com/wick-dev/wick/engine/spec"
	"github.com/wick-dev/wick/tui/render"
)

// hangTimeout bounds reading the last lines of a running app's replicas for its hang
// alarm: local files are read in milliseconds, a Docker Engine or Slurm's output files
// in well under a second.
const hangTimeout = 5 * time.Second

// attachHang sets the hang alarm of the app d describes (engine/hang), best effort: an
// app whose logs cannot be read now is shown without it.
func (a *app) attachHang(h spec.Handle, d *sched.Description) {
	ctx, cancel := context.WithTimeout(a.ctx, hangTimeout)
	defer cancel()
	_ = hang.Attach(ctx, a.runner(), h, d, time.Now())
}

// attachHangs sets the hang alarm of each running app of a list.
func (a *app) attachHangs(apps []spec.AppStatus) {
	for i := range apps {
		st := &apps[i]
		if st.State != spec.Running {
			continue
		}
		h, err := spec.ParseHandle(st.Handle)
		if err != nil {
			continue
		}
		ctx, cancel := context.WithTimeout(a.ctx, hangTimeout)
		d, err := a.runner().Describe(ctx, h)
		if err == nil {
			if hg, err := hang.Check(ctx, a.runner(), h, d, time.Now()); err == nil {
				st.Hang = hg
			}
		}
		cancel()
	}
}

// hangWatchEvery is how often an attached run checks its app for a hang: the hang time
// is seconds at the least and 5 minutes by default, and each check describes the app
// (for Slurm, a query of slurmctld).
const hangWatchEvery = 5 * time.Second

// watchHang checks the attached app h for a hang every hangWatchEvery until ctx ends
// or the returned stop is called, and calls say with the alarm's line when it rises
// or names other ranks (not again while it stands as it was).
func (a *app) watchHang(ctx context.Context, h spec.Handle, say func(msg string)) (stop func()) {
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		tick := time.NewTicker(hangWatchEvery)
		defer tick.Stop()
		last := ""
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
			cctx, ccancel := context.WithTimeout(ctx, hangTimeout)
			d, err := a.runner().Describe(cctx, h)
			var hg *spec.Hang
			if err == nil {
				hg, err = hang.Check(cctx, a.runner(), h, d, time.Now())
			}
			ccancel()
			switch {
			case err != nil:
			case hg == nil:
				last = ""
			case hangKey(hg) != last:
				last = hangKey(hg)
				say(hg.Message(time.Now()))
			}
		}
	}()
	return func() { cancel(); <-done }
}

// hangKey is what makes a hang alarm news: the ranks named and their step.
func hangKey(hg *spec.Hang) string {
	return fmt.Sprint(hg.Ranks, hg.Step, hg.Ahead)
}

// withNotices makes the printer's functions safe to call with say, which writes a line
// of wick's own ("wick: MSG") between the log lines from another goroutine: on a
// terminal, the progress bar drawn on the last row is erased first and drawn again
// after it.
func withNotices(emit func(sched.Line) error, idle, finish func() error, w *bufio.Writer, lp *livePrinter) (func(sched.Line) error, func() error, func() error, func(string)) {
	var mu sync.Mutex
	lockedEmit := func(l sched.Line) error {
		mu.Lock()
		defer mu.Unlock()
		return emit(l)
	}
	locked := func(f func() error) func() error {
		return func() error {
			mu.Lock()
			defer mu.Unlock()
			return f()
		}
	}
	say := func(msg string) {
		mu.Lock()
		defer mu.Unlock()
		if lp != nil {
			lp.erase()
			lp.dirty = true
		}
		fmt.Fprintf(w, "wick: %s\n", render.Escape(msg))
		if lp != nil {
			_ = lp.idle()
			return
		}
		_ = w.Flush()
	}
	return lockedEmit, locked(idle), locked(finish), say
}
