package apps

import (
	"fmt"
	"strings"
	"time"

	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"

	"github.com/wick-dev/wick/engine/spec"
	"github.com/wick-dev/wick/tui/appops"
	"github.com/wick-dev/wick/tui/common"
	"github.com/wick-dev/wick/tui/compare"
	"github.com/wick-dev/wick/tui/render"
	"github.com/wick-dev/wick/tui/sweepchart"
	"github.com/wick-dev/wick/tui/widget"
)

// ActFold folds or unfolds the sweep of the selected row; ActCompare opens the
// comparison of its apps, ActChart the chart of their curves (p, the wall's chart key);
// ActNext makes a queued app of a sweep the next its queue starts (wick sweep move
// --to 1).
const (
	ActFold    = "fold"
	ActCompare = "compare"
	ActChart   = "sweep-chart"
	ActNext    = "sweep-next"
)

// group is the row of a sweep: it stands for the sweep's apps the list shows, which
// follow it when it is unfolded.
type group struct {
	id      string
	members []int // indices into apps, in the list's order
}

// groupKey is what selects a group row (selectHandle): common.SweepKey.
func groupKey(id string) string { return common.SweepKey(id) }

// layout makes the rows from the shown apps (m.visible, in order): an app of a sweep
// is shown under its sweep's row, which takes the place of the sweep's first app in
// the order; the apps of a folded sweep are left out. Sweeps are folded until
// unfolded (z).
func (m *Model) layout() {
	m.rows = m.rows[:0]
	m.groups = m.groups[:0]
	bySweep := map[string]int{}
	for _, i := range m.visible {
		sw := m.apps[i].Sweep
		if sw == nil {
			continue
		}
		g, ok := bySweep[sw.ID]
		if !ok {
			g = len(m.groups)
			bySweep[sw.ID] = g
			m.groups = append(m.groups, group{id: sw.ID})
		}
		m.groups[g].members = append(m.groups[g].members, i)
	}
	emitted := map[int]bool{}
	for _, i := range m.visible {
		sw := m.apps[i].Sweep
		if sw == nil {
			m.rows = append(m.rows, i)
			continue
		}
		g := bySweep[sw.ID]
		if emitted[g] {
			continue
		}
		emitted[g] = true
		m.rows = append(m.rows, -g-1)
		if m.unfolded[sw.ID] {
			m.rows = append(m.rows, m.groups[g].members...)
		}
	}
}

// rowGroup is the group of row r, or nil for an app's row.
func (m *Model) rowGroup(r int) *group {
	if r < 0 || r >= len(m.rows) || m.rows[r] >= 0 {
		return nil
	}
	return &m.groups[-m.rows[r]-1]
}

// rowKey is what keeps row r selected across listings: the app's handle, or the
// sweep's key.
func (m *Model) rowKey(r int) string {
	if g := m.rowGroup(r); g != nil {
		return groupKey(g.id)
	}
	return m.apps[m.rows[r]].Handle
}

// groupCells is the row of a sweep: its id and how many apps it has (and how many
// the filter shows), what they all do, and its age: that of its oldest app, made when
// the sweep was (its apps are made when it is planned, queued), so that the age never
// goes down as its apps start.
func (m *Model) groupCells(g *group, now time.Time) []string {
	fold := foldedMark
	if m.unfolded[g.id] {
		fold = unfoldedMark
	}
	counts := map[spec.AppState]int{}
	running, total, all := 0, 0, 0
	var oldest time.Time
	for i := range m.apps {
		a := &m.apps[i]
		if a.Sweep == nil || a.Sweep.ID != g.id || a.Foreign && !m.all {
			continue
		}
		all++
		counts[a.State]++
		r, t := a.Replicas()
		running, total = running+r, total+t
		if oldest.IsZero() || !a.Created.IsZero() && a.Created.Before(oldest) {
			oldest = a.Created
		}
	}
	var parts []string
	for _, s := range []spec.AppState{spec.Running, spec.Pending, spec.Submitted, spec.Queued, spec.Succeeded, spec.Failed, spec.Cancelled, spec.UnknownState} {
		if counts[s] > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", counts[s], strings.ToLower(s.String())))
		}
	}
	row := make([]string, len(render.AppHeaders))
	for i := range row {
		row[i] = "-"
	}
	row[render.AppColHandle] = fmt.Sprintf("%s %s", fold, g.id)
	of := fmt.Sprintf("sweep of %d", all)
	if len(g.members) != all {
		of += fmt.Sprintf(", %d shown", len(g.members))
	}
	row[render.AppColName] = of + ": " + strings.Join(parts, ", ")
	row[render.AppColState] = groupState(counts).String()
	row[render.AppColRunning] = fmt.Sprintf("%d/%d", running, total)
	row[render.AppColAge] = render.Age(oldest, now)
	return row
}

// groupState is the state a sweep's row shows: RUNNING while an app runs, else
// QUEUED while one waits, else FAILED if one failed, else how they ended.
func groupState(counts map[spec.AppState]int) spec.AppState {
	for _, s := range []spec.AppState{spec.Running, spec.Pending, spec.Submitted, spec.Queued, spec.Failed, spec.UnknownState, spec.Cancelled} {
		if counts[s] > 0 {
			return s
		}
	}
	return spec.Succeeded
}

// foldedMark and unfoldedMark start a sweep's row, folded (its apps hidden: z shows
// them) or not. Not ▸ and ▾: ▸ is the cursor's, and a folded sweep's row under the
// cursor read "▸ ▸ sweep-…".
const (
	foldedMark   = "+"
	unfoldedMark = "-"
)

// memberMark starts the name of an app shown under its sweep's row.
const memberMark = "  "

// ContextHelp offers, on a sweep's row, what the row does: unfold (or fold) it, chart
// and compare its apps; with apps marked, what acts on them.
func (m *Model) ContextHelp() []key.Binding {
	reg := m.Ctx.Actions
	if reg == nil || m.Typing() {
		return nil
	}
	var out []key.Binding
	add := func(name common.ActionName, desc string) {
		if b, ok := reg.Brief(name, Kind, desc); ok {
			out = append(out, b)
		}
	}
	if r := m.cur.Index; r >= 0 && r < len(m.rows) {
		if g := m.rowGroup(r); g != nil {
			fold := "unfold"
			if m.unfolded[g.id] {
				fold = "fold"
			}
			add(ActFold, fold)
			add(appops.ActCancel, "cancel sweep")
			add(ActChart, "chart")
			add(ActCompare, "compare")
			return out
		}
	}
	if n := len(m.marked); n > 0 {
		add(appops.ActCancel, fmt.Sprintf("cancel %d marked", n))
		add(appops.ActDelete, fmt.Sprintf("delete %d marked", n))
		add(ActCompare, "compare")
		add(ActMark, "mark")
	}
	return out
}

// Off turns off, on a sweep's row, the actions that need one app (logs, relaunch):
// the help bar leaves them out.
func (m *Model) Off(action common.ActionName) bool {
	r := m.cur.Index
	if r < 0 || r >= len(m.rows) || m.rowGroup(r) == nil {
		return false
	}
	switch action {
	case appops.ActLogs, appops.ActRelaunch, appops.ActEdit, ActDescribe:
		return true
	}
	return false
}

// ShowSweep unfolds the sweep id and puts the cursor on its row as soon as a listing
// holds it (wick ui --logs SWEEP): its apps in view, l away from their logs.
func (m *Model) ShowSweep(id string) {
	if m.unfolded == nil {
		m.unfolded = map[string]bool{}
	}
	m.unfolded[id] = true
	m.pending = groupKey(id)
}

// toggleFold folds or unfolds the sweep of g.
func (m *Model) toggleFold(g *group) {
	if m.unfolded == nil {
		m.unfolded = map[string]bool{}
	}
	m.unfolded[g.id] = !m.unfolded[g.id]
	m.rebuild(groupKey(g.id))
}

// groupApps splits the apps of g the list shows into those keep takes and a count of
// the others.
func (m *Model) groupApps(g *group, keep func(*spec.AppStatus) bool) (do []spec.AppStatus, skipped int) {
	for _, i := range g.members {
		if keep(&m.apps[i]) {
			do = append(do, m.apps[i])
		} else {
			skipped++
		}
	}
	return do, skipped
}

// styledRow is row r with its state in its color.
func (m *Model) styledRow(tbl *widget.Table, r int, st render.Styler) []string {
	if g := m.rowGroup(r); g != nil {
		row := append([]string(nil), tbl.Row(r)...)
		counts := map[spec.AppState]int{}
		for i := range m.apps {
			if a := &m.apps[i]; a.Sweep != nil && a.Sweep.ID == g.id && (!a.Foreign || m.all) {
				counts[a.State]++
			}
		}
		row[render.AppColState] = st.State(groupState(counts), row[render.AppColState])
		return row
	}
	return styled(tbl.Row(r), &m.apps[m.rows[r]], st, m.errCol)
}

// doGroup runs an action on a sweep's row: enter and z fold or unfold it, x cancels
// the whole sweep (its queue first) and D deletes its finished apps the list shows,
// each after a confirmation; r starts its queue again (wick sweep resume).
func (m *Model) doGroup(g *group, action common.ActionName) (tea.Cmd, bool) {
	switch action {
	case ActDescribe, ActFold:
		m.toggleFold(g)
		return nil, true
	case ActCompare:
		return m.compareSweep(g.id), true
	case ActChart:
		return common.Push(sweepchart.New(m.Ctx, g.id)), true
	case appops.ActCancel:
		// The whole sweep, as `wick cancel ID`: its queue emptied first.
		cmd, p := appops.CancelSweep(m.Ctx, m.ID(), g.id)
		m.progress = p
		return cmd, true
	case appops.ActDelete:
		all, _ := m.groupApps(g, func(*spec.AppStatus) bool { return true })
		cmd, p := appops.Bulk(m.Ctx, m.ID(), action, all, "sweep", true)
		m.progress = p
		return cmd, true
	case appops.ActRelaunch:
		return m.resumeSweep(g.id), true // marked.go
	case ActMark, appops.ActLogs, appops.ActEdit, ActNext:
		return common.Notify("a sweep's row: z unfolds its apps (r there resumes its queue)"), true
	}
	return nil, false
}

// startNext makes the queued app a of a sweep the next its queue starts, as `wick
// sweep move HANDLE --to 1` does, and says where it went.
func (m *Model) startNext(a *spec.AppStatus, h spec.Handle) tea.Cmd {
	if a.Sweep == nil || a.State != spec.Queued {
		return common.Notify("N starts a queued app of a sweep next (" + h.AppID + " is " + a.State.String() + ")")
	}
	sw, place, _, err := m.Ctx.Backend.MoveQueued(h, 1)
	if err != nil {
		return common.NotifyErr(err)
	}
	return tea.Batch(common.Notify(fmt.Sprintf("%s: place %d of the queue of sweep %s (next to start)", h.AppID, place, sw.ID)), m.refresh())
}

// compareSweep opens the comparison of the apps of sweep id the list holds, in
// their sweep's order of names.
func (m *Model) compareSweep(id string) tea.Cmd {
	var apps []compare.App
	var names []string
	for i := range m.apps {
		a := &m.apps[i]
		if a.Sweep == nil || a.Sweep.ID != id {
			continue
		}
		h, err := spec.ParseHandle(a.Handle)
		if err != nil {
			continue
		}
		names = a.Sweep.Names
		apps = append(apps, compare.App{Handle: h, Values: a.Sweep.Values, State: a.State})
	}
	return common.Push(compare.New(m.Ctx, id, names, apps))
}

// doSweepOf runs a sweep's action (z, c, p) on the row of one app: c and p on an app
// of a sweep act on its sweep.
func (m *Model) doSweepOf(a *spec.AppStatus, action common.ActionName) tea.Cmd {
	switch {
	case a.Sweep != nil && action == ActCompare:
		return m.compareSweep(a.Sweep.ID)
	case a.Sweep != nil && action == ActChart:
		return common.Push(sweepchart.New(m.Ctx, a.Sweep.ID))
	case action == ActChart:
		return common.Notify("p charts a sweep's apps; an app's ranks are charted in its logs (l, then p)")
	}
	return common.Notify("not an app of a sweep")
}
