package cli

import (
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/wick-dev/wick/engine/spec"
	"github.com/wick-dev/wick/engine/sweep"
	"github.com/wick-dev/wick/tui/render"
)

// filterSweep keeps the apps of sweep id, in queue order.
func (a *app) filterSweep(apps []spec.AppStatus, id string) ([]spec.AppStatus, *sweep.Sweep, error) {
	store := a.runner().Sweeps()
	if store == nil {
		return nil, nil, fmt.Errorf("%w: %s", sweep.ErrNoSweep, id)
	}
	sw, err := store.Load(id)
	if err != nil {
		if errors.Is(err, sweep.ErrNoSweep) {
			return nil, nil, usageError{err}
		}
		return nil, nil, err
	}
	order := map[string]int{}
	for i, e := range sw.Entries {
		order[e.Handle] = i
	}
	var out []spec.AppStatus
	for _, st := range apps {
		if st.Sweep != nil && st.Sweep.ID == id {
			out = append(out, st)
		}
	}
	slices.SortStableFunc(out, func(x, y spec.AppStatus) int { return order[x.Handle] - order[y.Handle] })
	return out, sw, nil
}

// sweepList writes the apps of a sweep: one column per swept name, then state,
// running replicas, age, duration, exit and, for an app that never ran, why.
func sweepList(w io.Writer, sw *sweep.Sweep, apps []spec.AppStatus, now time.Time, st render.Styler) error {
	heads := append([]string{"HANDLE"}, upperAll(sw.Names)...)
	heads = append(heads, "STATE", "RUNNING", "AGE", "DURATION", "EXIT", "NOTE")
	rows := make([][]string, len(apps))
	for i := range apps {
		a := &apps[i]
		cells := render.AppRow(a, now, st)
		row := []string{cells[render.AppColHandle]}
		for _, n := range sw.Names {
			row = append(row, render.Escape(a.Sweep.Values[n]))
		}
		note := ""
		switch {
		case a.State == spec.Queued, a.State == spec.Failed && len(a.Roles) == 0,
			a.State == spec.Cancelled && strings.HasPrefix(a.Msg, sweep.StoppedMsg("")):
			note, _, _ = strings.Cut(render.FirstLine(a.Msg), " (sweep ")
			note = render.Escape(note)
		}
		row = append(row, cells[render.AppColState], cells[render.AppColRunning], cells[render.AppColAge],
			cells[render.AppColDuration], cells[render.AppColExit], note)
		rows[i] = row
	}
	par := "all at once"
	if sw.MaxParallel > 0 {
		par = fmt.Sprintf("at most %d at once", sw.MaxParallel)
	}
	queue := "queue done"
	if sw.Waiting() > 0 {
		queue = fmt.Sprintf("%d queued", sw.Waiting())
		if !sw.QueueRunning() {
			queue += fmt.Sprintf(", queue not running (wick sweep resume %s)", sw.ID)
		}
	}
	fmt.Fprintf(w, "sweep %s · %s of %s on %s · %s · %s\n", sw.ID, spec.Count(len(sw.Entries), "app"), render.Escape(sw.Component), sw.Scheduler, par, queue)
	_, err := io.WriteString(w, render.Table(heads, rows, st))
	return err
}
