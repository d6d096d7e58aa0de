package apps

import (
	"context"
	"fmt"
	"slices"
	"time"

	tea "charm.land/bubbletea/v2"

	"github.com/wick-dev/wick/engine/spec"
	"github.com/wick-dev/wick/tui/common"
	"github.com/wick-dev/wick/tui/compare"
	"github.com/wick-dev/wick/tui/sweepchart"
)

// doMarked runs c (compare) or p (chart) on the marked apps, whatever sweeps they
// are of (none, one, several): the compare table with a column per swept name of
// their sweeps, and the overlay chart of their curves, each labelled by its values
// (an app of no sweep by its id).
func (m *Model) doMarked(action common.ActionName) tea.Cmd {
	var apps []compare.App
	var names, handles []string
	for i := range m.apps {
		a := &m.apps[i]
		if !m.marked[a.Handle] {
			continue
		}
		h, err := spec.ParseHandle(a.Handle)
		if err != nil {
			continue
		}
		app := compare.App{Handle: h, State: a.State}
		if a.Sweep != nil {
			app.Values = a.Sweep.Values
			for _, n := range a.Sweep.Names {
				if !slices.Contains(names, n) {
					names = append(names, n)
				}
			}
		}
		apps = append(apps, app)
		handles = append(handles, a.Handle)
	}
	if len(apps) == 0 {
		return common.Notify("no marked app is listed")
	}
	if action == ActChart {
		return common.Push(sweepchart.NewOf(m.Ctx, spec.Count(len(apps), "marked app"), handles))
	}
	return common.Push(compare.NewMarked(m.Ctx, names, apps))
}

// resumeWait bounds the start of a sweep's queue.
const resumeWait = 30 * time.Second

// resumeSweep starts the queue of sweep id again, as `wick sweep resume` does (after
// its process was killed: its queued apps say so), and says what came of it.
func (m *Model) resumeSweep(id string) tea.Cmd {
	b, parent := m.Ctx.Backend, m.Ctx.Ctx
	return func() tea.Msg {
		ctx, cancel := context.WithTimeout(parent, resumeWait)
		defer cancel()
		sw, started, err := b.ResumeSweep(ctx, id)
		switch {
		case err != nil:
			return common.NoticeMsg{Text: fmt.Sprintf("sweep %s: %v", id, err), Err: true}
		case started:
			return common.NoticeMsg{Text: fmt.Sprintf("sweep %s: queue resumed, %d queued", id, sw.Waiting())}
		case sw.QueueRunning():
			return common.NoticeMsg{Text: fmt.Sprintf("sweep %s: its queue is running (pid %d)", id, sw.Queue.PID)}
		}
		return common.NoticeMsg{Text: "sweep " + id + ": nothing queued"}
	}
}
