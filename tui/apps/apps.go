// Package apps is the app list: every app wick knows, of every scheduler, refreshed on
// each tick, with filter, sort and the actions on an app (describe, logs, cancel,
// delete, relaunch).
package apps

import (
	"context"
	"slices"
	"strings"
	"time"

	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"

	"github.com/wick-dev/wick/engine/spec"
	"github.com/wick-dev/wick/tui/appops"
	"github.com/wick-dev/wick/tui/common"
	"github.com/wick-dev/wick/tui/describe"
	"github.com/wick-dev/wick/tui/render"
	"github.com/wick-dev/wick/tui/widget"
)

// listTimeout bounds one listing, so that a hung scheduler (a Docker Engine that does
// not answer) cannot stall the refreshes for long. Each scheduler is listed on its
// own (see refresh): a slow one keeps its last rows and holds back no other's.
const listTimeout = 10 * time.Second

// Kind is the app list's kind of view.
const Kind common.Kind = "apps"

// The app list's own actions.
const (
	ActDescribe = "describe"
	ActFilter   = "filter"
	ActSort     = "sort"
	ActReverse  = "reverse"
	ActMark     = "mark"
	ActPrune    = "delete-finished"
	ActScope    = "all-homes"
)

// Actions are the app list's rows of the action table.
func Actions() []common.Action {
	rows := []common.Action{common.NewAction(ActDescribe, "describe", []string{"enter", "d"}, true, Kind)}
	rows = append(rows, appops.Actions(Kind)...)
	rows = append(rows,
		// Before Moves: space marks here rather than paging down.
		common.NewAction(ActMark, "mark / unmark (x, D, c, p act on all marked; esc unmarks)", []string{"space"}, false, Kind),
		common.NewAction(ActFold, "fold / unfold a sweep's apps under its row (enter too)", []string{"z"}, false, Kind),
		common.NewAction(ActCompare, "compare the marked apps or a sweep's: values, last and best metrics", []string{"c"}, false, Kind),
		common.NewAction(ActChart, "chart of the marked apps or of a sweep's, one curve each (t: table)", []string{"p"}, false, Kind),
		common.NewAction(ActNext, "start a queued app of a sweep next (wick sweep move --to 1)", []string{"N"}, false, Kind),
		common.NewAction(ActPrune, "delete all finished apps shown (asks)", []string{"P"}, false, Kind),
		common.NewAction(ActFilter, "filter", []string{"/"}, true, Kind),
		common.NewAction(ActScope, "show other homes' apps too / only this home's", []string{"A"}, false, Kind),
		common.NewAction(ActSort, "sort by next column (age, name, state, handle, duration, cpu, rss)", []string{"o"}, false, Kind),
		common.NewAction(ActReverse, "reverse the order", []string{"O"}, false, Kind),
		common.NewAction(common.ActRefresh, "refresh", []string{"ctrl+r"}, false, Kind),
	)
	return append(rows, common.Moves(Kind)...)
}

// Model is the app list view.
type Model struct {
	common.Base

	apps   []spec.AppStatus
	errs   []error
	loaded bool
	// lists are the last listing of each scheduler, by name, in the order of names
	// (the Backend's schedulers; "" alone, a listing of every scheduler at once, with
	// no Backend to name them): apps and errs are theirs put together.
	lists map[string]*schedListing
	names []string

	visible []int // indices into apps, filtered and sorted
	// rows are the table's rows: an index into apps, or -g-1 for the row of sweep
	// groups[g] (see layout); unfolded are the sweeps whose apps are shown.
	rows     []int
	groups   []group
	unfolded map[string]bool
	table    widget.Table
	// narrow is the same rows in the narrow layout; legend says what its scheduler
	// tags stand for ("cwd=local_cwd").
	narrow widget.Table
	legend []string
	now    time.Time // the time the cells were made for
	cur    widget.Cursor

	filter    widget.Input
	filtering bool
	sort      sortKey
	reverse   bool
	// pending is a handle to select once it appears (after a launch).
	pending string
	// hangs are the hang alarms of running apps, by handle, as the alarm reading
	// last found them (alarms.go); errCol is the ERROR column's index, -1 when it is
	// not shown (errors.go).
	hangs  map[string]*spec.Hang
	errCol int
	// alarms counts the metric alarms a log wall found, by handle (see SetAlarms).
	alarms map[string]int
	// all shows the apps other WICK_HOMEs launched (on a shared Docker Engine) too;
	// foreign counts those hidden.
	all     bool
	foreign int
	// stateDir is where the sort and filter are kept ("" keeps none); saved is what
	// was last written there.
	stateDir string
	saved    listState
	// marked are the handles of the apps marked for a bulk cancel or delete.
	marked map[string]bool
	// filterCleared says the filter was cleared to show the app just selected; the
	// next listing's update tells the user once.
	filterCleared bool
	// usage is what the running apps use, by handle (see usage.go).
	usage usageState
	// alarm is the reading of the apps' metric alarms (see alarms.go).
	alarm alarmState
	// progress is the last bulk cancel or delete asked for (see appops.Bulk).
	progress *appops.BulkProgress
	// seq numbers the listings; gone holds the apps deleted from here, by the seq of
	// the last listing started before their delete ended: such a listing may still
	// hold them, and must not bring their rows back.
	seq  int
	gone map[string]int
	// applied counts the listings shown (of any scheduler); a scheduler's listing
	// older than its last one shown (one under way when a launch started another) is
	// not shown (schedListing.applied).
	applied int
	// fresh holds the apps just launched from here, by the seq of the last listing
	// started before their launch ended (such a listing may not hold them): their rows
	// are shown from the launch's own answer until a later listing has them.
	fresh map[string]freshApp
}

// schedListing is what the list knows of one scheduler's apps: its last listing shown
// (applied is its seq) and the seq of the one under way (0: none).
type schedListing struct {
	apps     []spec.AppStatus
	errs     []error
	applied  int
	inflight int
	// began is when the listing shown began, and before when the one shown before it
	// did (the same for the first): see NewSince.
	began, before time.Time
}

// freshApp is an app just launched: its status as the launch read it.
type freshApp struct {
	st  spec.AppStatus
	seq int
}

type listedMsg struct {
	common.ViewID
	seq int
	// sched is the scheduler listed ("": every scheduler); began is when.
	sched string
	began time.Time
	apps  []spec.AppStatus
	errs  []error
}

// New returns the app list.
func New(ctx *common.Context) *Model {
	m := &Model{Base: common.NewBase(ctx, Kind), errCol: -1}
	// The wide layout gives ERROR's width and NAME's only, down to their first cells;
	// when that is not enough, the narrow layout is drawn (see fit.go, errors.go).
	m.table.SpillGrow = true
	m.filter = widget.NewInput("filter: ")
	return m
}

// Title is the view's crumb.
func (m *Model) Title() string { return "apps" }

// Init lists the apps.
func (m *Model) Init() tea.Cmd { return m.refresh() }

// Activate refreshes the list when the view is on top again.
func (m *Model) Activate() tea.Cmd { return m.refresh() }

// Refresh begins a listing unless one is under way: the alerts' (tui), which take
// every listing the list shows (Listing) rather than one of their own.
func (m *Model) Refresh() tea.Cmd { return m.refresh() }

// Listing is the last listing shown: the apps (with the rows of apps just launched
// from here) and its number (it grows with each listing shown, of any scheduler).
func (m *Model) Listing() (apps []spec.AppStatus, seq int) {
	return m.apps, m.applied
}

// Typing reports whether the filter has focus.
func (m *Model) Typing() bool { return m.filtering }

// TypingHelp is the help bar while the filter is typed: enter applies it (it does not
// describe an app), esc stops typing and a second esc clears it.
func (m *Model) TypingHelp() []key.Binding {
	return []key.Binding{
		key.NewBinding(key.WithKeys("enter"), key.WithHelp("enter", "apply the filter")),
		key.NewBinding(key.WithKeys("esc"), key.WithHelp("esc", "stop typing (esc again clears it)")),
		key.NewBinding(key.WithKeys("ctrl+c"), key.WithHelp("ctrl+c", "quit")),
	}
}

// Active counts the apps that have not ended and are not queued, as last listed:
// those that keep going when the UI quits.
func (m *Model) Active() int {
	running, pending := m.counts()
	return running + pending
}

// counts counts the apps, as last listed, that run and those submitted or pending
// (the scheduler has them, none of their replicas runs yet). UNKNOWN (corrupt
// state) is neither: nothing is known to run; a queued app of a sweep runs nothing
// yet. Other homes' apps are not this user's to mind.
func (m *Model) counts() (running, pending int) {
	for i := range m.apps {
		if m.apps[i].Foreign && !m.all {
			continue
		}
		switch m.apps[i].State {
		case spec.Running:
			running++
		case spec.Submitted, spec.Pending:
			pending++
		}
	}
	return running, pending
}

// Select selects the app with handle h, now or as soon as a listing shows it, and
// refreshes.
func (m *Model) Select(h string) tea.Cmd {
	m.pending = h
	m.applySelection()
	return m.refresh()
}

// Launched shows the app just launched, st as the launch read it, at once and
// selected (clearing a filter that would hide it), and starts a listing that holds
// it: one already under way began before the launch.
func (m *Model) Launched(st spec.AppStatus) tea.Cmd {
	if m.fresh == nil {
		m.fresh = map[string]freshApp{}
	}
	m.fresh[st.Handle] = freshApp{st: st, seq: m.seq}
	m.compose()
	m.loaded = true
	m.pending = st.Handle
	m.rebuild(st.Handle)
	// A listing of its scheduler under way began before the launch: one more.
	for _, name := range m.schedNames() {
		if covers(name, st.Handle) {
			m.listing(name).inflight = 0
		}
	}
	return m.refresh()
}

// covers says whether a listing of scheduler name ("": every one) holds the app
// with handle h.
func covers(name, h string) bool {
	if name == "" {
		return true
	}
	hd, err := spec.ParseHandle(h)
	return err != nil || hd.Scheduler == name
}

// NewSince is a time before which an app with handle h that the last listing shows
// and the one before did not was already there: when the listing of its scheduler
// shown before the last one began (the last one's beginning for the first). An app
// created after it is new since then; one created before it was left out (its
// scheduler did not answer, or had not been listed yet).
func (m *Model) NewSince(h string) time.Time {
	for _, name := range m.schedNames() {
		if covers(name, h) {
			return m.listing(name).before
		}
	}
	return time.Time{}
}

// schedNames are the schedulers listed one by one: the Backend's, or "" (every
// scheduler in one listing) with none.
func (m *Model) schedNames() []string {
	if m.names == nil {
		if m.Ctx.Backend != nil {
			m.names = m.Ctx.Backend.SchedulerBackends()
		}
		if len(m.names) == 0 {
			m.names = []string{""}
		}
	}
	return m.names
}

// listing is what is known of scheduler name's apps.
func (m *Model) listing(name string) *schedListing {
	if m.lists == nil {
		m.lists = map[string]*schedListing{}
	}
	l := m.lists[name]
	if l == nil {
		l = &schedListing{}
		m.lists[name] = l
	}
	return l
}

// compose puts the schedulers' last listings together into apps and errs, less the
// apps deleted from here since, with the apps just launched that their scheduler's
// listing does not hold yet.
func (m *Model) compose() {
	var apps []spec.AppStatus
	var errs []error
	for _, name := range m.schedNames() {
		l := m.listing(name)
		for _, a := range l.apps {
			if _, ok := m.gone[a.Handle]; !ok {
				apps = append(apps, a)
			}
		}
		errs = append(errs, l.errs...)
	}
	for h, f := range m.fresh {
		if !slices.ContainsFunc(apps, func(a spec.AppStatus) bool { return a.Handle == h }) {
			apps = append(apps, f.st)
		}
	}
	m.apps, m.errs = apps, errs
}

// took records listing seq of scheduler name, which holds apps: the apps just
// launched or deleted that it can tell of are settled (a listing begun after their
// launch or delete ended is the scheduler's word on them).
func (m *Model) took(name string, seq int, apps []spec.AppStatus) {
	for h, f := range m.fresh {
		if !covers(name, h) {
			continue
		}
		held := slices.ContainsFunc(apps, func(a spec.AppStatus) bool { return a.Handle == h })
		if held || seq > f.seq {
			delete(m.fresh, h) // listed, or gone since (deleted)
		}
	}
	for h, s := range m.gone {
		if covers(name, h) && seq > s {
			delete(m.gone, h) // a listing begun after the delete: it does not hold it
		}
	}
}

// refresh begins a listing of each scheduler whose last one has come: each is shown
// as it comes, so that a scheduler slow to answer (a Docker Engine that does not, an
// squeue of a busy controller) holds back no other's rows: it keeps its last ones.
func (m *Model) refresh() tea.Cmd {
	var cmds []tea.Cmd
	for _, name := range m.schedNames() {
		l := m.listing(name)
		if l.inflight != 0 {
			continue
		}
		m.seq++
		l.inflight = m.seq
		id, b, parent, seq, all, began := m.ID(), m.Ctx.Backend, m.Ctx.Ctx, m.seq, m.all, time.Now()
		cmds = append(cmds, func() tea.Msg {
			ctx, cancel := context.WithTimeout(parent, listTimeout)
			defer cancel()
			list := b.List
			if all {
				list = b.ListAllHomes // other homes' apps are listed only when shown
			}
			apps, errs := list(ctx, name)
			return listedMsg{ViewID: id, seq: seq, sched: name, began: began, apps: apps, errs: errs}
		})
	}
	return tea.Batch(cmds...)
}

// forget removes the rows of the apps just deleted at once, rather than at the next
// listing, and keeps a listing already under way from bringing them back.
func (m *Model) forget(handles ...string) {
	if m.gone == nil {
		m.gone = map[string]int{}
	}
	for _, h := range handles {
		m.gone[h] = m.seq
		delete(m.fresh, h)
	}
	m.compose()
}

// Update handles listings, action results, ticks, the mouse and filter typing.
func (m *Model) Update(msg tea.Msg) tea.Cmd {
	switch msg := msg.(type) {
	case listedMsg:
		l := m.listing(msg.sched)
		if msg.seq == l.inflight {
			l.inflight = 0
		}
		if msg.seq < l.applied {
			return nil // older than the listing shown
		}
		l.applied, l.apps, l.errs = msg.seq, msg.apps, msg.errs
		l.before, l.began = l.began, msg.began
		if l.before.IsZero() {
			l.before = msg.began
		}
		m.applied++
		sel := m.selectedHandle() // before the indices change meaning
		m.loaded = true
		m.took(msg.sched, msg.seq, msg.apps)
		m.compose()
		m.dropGoneMarks()
		m.rebuild(sel)
		m.retainAlarms()
		usage := tea.Batch(m.refreshUsage(), m.scanAlarms())
		if m.filterCleared {
			m.filterCleared = false
			return tea.Batch(usage, common.Notify("filter cleared to show the new app"))
		}
		return usage
	case usageMsg:
		m.tookUsage(msg)
	case alarmsMsg:
		return m.tookAlarms(msg)
	case appops.Done:
		if msg.Verb == appops.VerbDeleted && msg.Err == nil {
			sel := m.selectedHandle() // before the indices change meaning
			m.forget(msg.Handle)
			m.rebuild(sel)
		}
		return tea.Batch(msg.Notice(), m.refresh())
	case appops.BulkDone:
		clear(m.marked) // done with them
		sel := m.selectedHandle()
		if msg.Verb == appops.VerbDeleted {
			m.forget(msg.Handles...)
		}
		m.rebuild(sel)
		return tea.Batch(msg.Notice(), m.refresh())
	case common.TickMsg:
		if cmd := m.refresh(); cmd != nil {
			return cmd
		}
		m.rebuild(m.selectedHandle()) // a listing is slow to come: at least the ages move on
	case tea.MouseWheelMsg:
		m.cur.Wheel(widget.WheelDelta(msg), len(m.rows), m.rowsHeight())
	case tea.MouseClickMsg:
		if msg.Button != tea.MouseLeft {
			return nil
		}
		before := m.cur.Index
		if m.cur.Click(msg.Y-headerLines, len(m.rows)) && before == m.cur.Index {
			cmd, _ := m.Do(ActDescribe)
			return cmd
		}
	case tea.KeyPressMsg, tea.PasteMsg:
		if m.filtering && m.filter.Update(msg) {
			m.rebuild(m.selectedHandle())
		}
	}
	return nil
}

// rebuild filters, sorts and makes the cells of every app, keeping the app with
// handle selected (or the pending one) selected.
func (m *Model) rebuild(selected string) {
	if m.pending != "" {
		selected = m.pending
	}
	m.now = m.Ctx.Now()
	terms := strings.Fields(strings.ToLower(m.filter.Value()))
	m.visible = m.visible[:0]
	m.foreign = 0
	for i := range m.apps {
		if m.apps[i].Foreign && !m.all {
			m.foreign++
			continue
		}
		if matches(&m.apps[i], terms) {
			m.visible = append(m.visible, i)
		}
	}
	order(m.apps, m.visible, m.sort, m.reverse, m.now, m.usageOf)
	m.layout()
	rows := make([][]string, len(m.rows))
	for r, i := range m.rows {
		if g := m.rowGroup(r); g != nil {
			rows[r] = m.groupCells(g, m.now)
			continue
		}
		rows[r] = cells(&m.apps[i], m.now)
		if m.alarmCount(&m.apps[i]) > 0 {
			rows[r][render.AppColName] = alarmMark + rows[r][render.AppColName]
		}
		if m.marked[m.apps[i].Handle] {
			rows[r][render.AppColName] = markMark + rows[r][render.AppColName]
		}
		if m.apps[i].Sweep != nil {
			rows[r][render.AppColName] = memberMark + rows[r][render.AppColName]
		}
	}
	m.table.Headers = append([]string(nil), render.AppHeaders...)
	arrow := "↓"
	if m.reverse {
		arrow = "↑"
	}
	if c := m.sort.column(); c >= 0 {
		m.table.Headers[c] += " " + arrow
	}
	m.addUsageColumn(rows)
	m.addErrorColumn(rows)
	first, _ := m.errSteps()
	m.table.Steps = append(first, widget.Step{Col: render.AppColName, Min: nameRoom})
	m.table.SetRowsSpill(rows, render.AppColName, m.isGroup)
	m.setNarrow(rows)
	m.selectHandle(selected)
	m.applySelection()
}

// isGroup reports whether row r is a sweep's.
func (m *Model) isGroup(r int) bool { return m.rows[r] < 0 }

func (m *Model) applySelection() {
	if m.pending != "" && !m.selectHandle(m.pending) && m.filter.Value() != "" && m.listed(m.pending) {
		// The app to select is listed but the filter hides it (a launch while a filter
		// is active): the filter goes, so that the cursor lands on the new app and `l`
		// opens its logs, not those of the row the cursor was on.
		m.filter.SetValue("")
		m.rebuild(m.pending)
		m.filterCleared = true
		return
	}
	if m.pending != "" && m.selectHandle(m.pending) {
		m.pending = ""
	}
	m.cur.Clamp(len(m.rows), m.rowsHeight())
}

// listed reports whether the last listing holds the app with handle h.
func (m *Model) listed(h string) bool {
	for i := range m.apps {
		if m.apps[i].Handle == h {
			return true
		}
	}
	return false
}

// selectHandle moves the cursor to the app with handle h; it reports whether it is
// listed.
func (m *Model) selectHandle(h string) bool {
	for r := range m.rows {
		if m.rowKey(r) == h {
			m.cur.Index = r
			m.cur.Clamp(len(m.rows), m.rowsHeight())
			return true
		}
	}
	// An app folded under its sweep: its sweep's row.
	for r := range m.rows {
		if g := m.rowGroup(r); g != nil {
			for _, i := range g.members {
				if m.apps[i].Handle == h {
					m.cur.Index = r
					m.cur.Clamp(len(m.rows), m.rowsHeight())
					return true
				}
			}
		}
	}
	return false
}

// selected is the app of the selected row, or nil (none, or a sweep's row).
func (m *Model) selected() *spec.AppStatus {
	if m.cur.Index < 0 || m.cur.Index >= len(m.rows) || m.rows[m.cur.Index] < 0 {
		return nil
	}
	return &m.apps[m.rows[m.cur.Index]]
}

func (m *Model) selectedHandle() string {
	if m.cur.Index < 0 || m.cur.Index >= len(m.rows) {
		return ""
	}
	return m.rowKey(m.cur.Index)
}

// Do runs the app list's actions on the selected app. The sort and filter it leaves
// are saved for the next run of the UI.
func (m *Model) Do(action common.ActionName) (tea.Cmd, bool) {
	defer m.save()
	if m.filtering && action == ActDescribe {
		// Enter ends the filter's typing; the filter stays.
		m.filtering = false
		m.filter.Blur()
		return nil, true
	}
	if m.cur.Do(string(action), len(m.rows), m.rowsHeight()) {
		return nil, true
	}
	switch action {
	case common.ActBack:
		if m.filtering {
			m.filtering = false
			m.filter.Blur()
			return nil, true
		}
		if len(m.marked) > 0 { // esc unmarks first, then clears the filter
			clear(m.marked)
			m.rebuild(m.selectedHandle())
			return common.Notify("unmarked every app"), true
		}
		if m.filter.Value() != "" {
			m.filter.SetValue("")
			m.rebuild(m.selectedHandle())
			return nil, true
		}
		return nil, false
	case ActFilter:
		m.filtering = true
		m.filter.Focus()
		return nil, true
	case ActSort:
		m.sort = (m.sort + 1) % numSortKeys
		m.rebuild(m.selectedHandle())
		return common.Notify("sorted by " + m.sort.String()), true
	case ActReverse:
		m.reverse = !m.reverse
		m.rebuild(m.selectedHandle())
		return nil, true
	case common.ActRefresh:
		return m.refresh(), true
	case ActPrune:
		return m.prune(), true
	case ActScope:
		m.all = !m.all
		m.rebuild(m.selectedHandle())
		if m.all {
			return tea.Batch(common.Notify("showing the apps of every WICK_HOME"), m.refresh()), true
		}
		return common.Notify("showing this WICK_HOME's apps"), true
	}
	if len(m.marked) > 0 && (action == appops.ActCancel || action == appops.ActDelete) {
		return m.bulk(action), true
	}
	if len(m.marked) > 0 && (action == ActCompare || action == ActChart) {
		return m.doMarked(action), true // marked.go
	}
	if g := m.rowGroup(m.cur.Index); g != nil {
		return m.doGroup(g, action)
	}
	return m.doSelected(action)
}

// doSelected does action on the selected app, for the actions that work on one
// app; with no app selected those say so.
func (m *Model) doSelected(action common.ActionName) (tea.Cmd, bool) {
	a := m.selected()
	if a == nil {
		switch action {
		case ActDescribe, ActMark, ActChart, ActNext, appops.ActLogs, appops.ActCancel, appops.ActDelete, appops.ActRelaunch, appops.ActEdit:
			return common.Notify("no app selected"), true
		}
		return nil, false
	}
	h, err := spec.ParseHandle(a.Handle)
	if err != nil {
		return common.NotifyErr(err), true
	}
	switch action {
	case ActDescribe:
		return common.Push(describe.New(m.Ctx, h)), true
	case ActMark:
		m.toggleMark(a.Handle)
		m.cur.Do(string(common.ActDown), len(m.rows), m.rowsHeight())
		return nil, true
	case ActFold, ActCompare, ActChart:
		return m.doSweepOf(a, action), true
	case ActNext:
		return m.startNext(a, h), true // sweeps.go
	}
	if a.State == spec.Queued && action == appops.ActLogs {
		return common.Notify(h.AppID + " is queued in its sweep: no logs until it starts"), true
	}
	return appops.Act(m.Ctx, m.ID(), action, h, a.State)
}

// markMark starts the name of a marked app.
const markMark = "● "

// toggleMark marks or unmarks the app with handle h.
func (m *Model) toggleMark(h string) {
	if m.marked[h] {
		delete(m.marked, h)
	} else {
		if m.marked == nil {
			m.marked = map[string]bool{}
		}
		m.marked[h] = true
	}
	m.rebuild(h)
}

// dropGoneMarks forgets the marks of apps that are no longer listed (deleted).
func (m *Model) dropGoneMarks() {
	if len(m.marked) == 0 {
		return
	}
	listed := make(map[string]bool, len(m.apps))
	for i := range m.apps {
		listed[m.apps[i].Handle] = true
	}
	for h := range m.marked {
		if !listed[h] {
			delete(m.marked, h)
		}
	}
}

// bulk cancels or deletes every marked app, after one confirmation that says how many
// (and how many are skipped: a cancel skips the apps that ended, a delete the ones
// still running), counted when it is asked.
func (m *Model) bulk(action common.ActionName) tea.Cmd {
	var marked []spec.AppStatus
	for i := range m.apps {
		if m.marked[m.apps[i].Handle] {
			marked = append(marked, m.apps[i])
		}
	}
	cmd, p := appops.Bulk(m.Ctx, m.ID(), action, marked, "marked", true)
	m.progress = p
	return cmd
}

// prune deletes every finished app the list shows (the filter applies), after a
// confirmation that says how many, counted when it is asked.
func (m *Model) prune() tea.Cmd {
	shown := make([]spec.AppStatus, 0, len(m.visible))
	for _, i := range m.visible {
		shown = append(shown, m.apps[i])
	}
	cmd, p := appops.Bulk(m.Ctx, m.ID(), appops.ActDelete, shown, "finished", false)
	m.progress = p
	return cmd
}

// alarmMark starts the name of an app whose metrics raised an alarm.
const alarmMark = "⚠ "

// SetAlarms records the number of metric alarms (NaN, Inf, a departing rank) found in
// an app's logs (by the list's own reading, or by its log wall): the app's row is
// marked while it is non-zero.
func (m *Model) SetAlarms(handle string, n int) {
	if m.alarms[handle] == n {
		return
	}
	if m.alarms == nil {
		m.alarms = map[string]int{}
	}
	m.alarms[handle] = n
	m.rebuild(m.selectedHandle())
}

// Target is the selected app for a user command, with its first replica.
func (m *Model) Target() (common.Target, bool) {
	a := m.selected()
	if a == nil {
		return common.Target{}, false
	}
	h, err := spec.ParseHandle(a.Handle)
	if err != nil {
		return common.Target{}, false
	}
	t := common.Target{Handle: h, Rank: -1}
	for _, r := range a.Roles {
		if len(r.Replicas) > 0 {
			t.Replica = r.Replicas[0]
			break
		}
	}
	return t, true
}
