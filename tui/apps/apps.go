// Package apps is the app list: every app wick knows, of every scheduler, refreshed on
// each tick, with filter, sort and the actions on an app (describe, logs, cancel,
// delete, relaunch).
package apps

import (
	"context"
	"strings"
	"time"

	tea "charm.land/bubbletea/v2"

	"github.com/wick-dev/wick/engine/spec"
	"github.com/wick-dev/wick/tui/appops"
	"github.com/wick-dev/wick/tui/common"
	"github.com/wick-dev/wick/tui/describe"
	"github.com/wick-dev/wick/tui/render"
)

// listTimeout bounds one listing, so that a hung scheduler (a Docker Engine that does
// not answer) cannot stall the refreshes for long.
const listTimeout = 10 * time.Second

// Model is the app list view.
type Model struct {
	common.Base

	apps    []spec.AppStatus
	errs    []error
	loaded  bool
	loading bool

	visible []int // indices into apps, filtered and sorted
	table   common.Table
	now     time.Time // the time the cells were made for
	cur     common.Cursor

	filter    common.Input
	filtering bool
	sort      sortKey
	reverse   bool
	// pending is a handle to select once it appears (after a launch).
	pending string
}

type listedMsg struct {
	common.ViewID
	apps []spec.AppStatus
	errs []error
}

// New returns the app list.
func New(ctx *common.Context) *Model {
	m := &Model{Base: common.NewBase(ctx, common.KindApps)}
	m.table.Flex = 0 // HANDLE shrinks first
	m.filter = common.NewInput("filter: ")
	return m
}

// Title is the view's crumb.
func (m *Model) Title() string { return "apps" }

// Init lists the apps.
func (m *Model) Init() tea.Cmd { return m.refresh() }

// Activate refreshes the list when the view is on top again.
func (m *Model) Activate() tea.Cmd { return m.refresh() }

// Typing reports whether the filter has focus.
func (m *Model) Typing() bool { return m.filtering }

// Running counts the apps that have not ended, as last listed.
func (m *Model) Running() int {
	n := 0
	for i := range m.apps {
		if !m.apps[i].State.Terminal() {
			n++
		}
	}
	return n
}

// Select selects the app with handle h, now or as soon as a listing shows it, and
// refreshes.
func (m *Model) Select(h string) tea.Cmd {
	m.pending = h
	m.applySelection()
	return m.refresh()
}

func (m *Model) refresh() tea.Cmd {
	if m.loading {
		return nil
	}
	m.loading = true
	id, b, parent := m.ID(), m.Ctx.Backend, m.Ctx.Ctx
	return func() tea.Msg {
		ctx, cancel := context.WithTimeout(parent, listTimeout)
		defer cancel()
		apps, errs := b.List(ctx, "")
		return listedMsg{ViewID: id, apps: apps, errs: errs}
	}
}

// Update handles listings, action results, ticks, the mouse and filter typing.
func (m *Model) Update(msg tea.Msg) tea.Cmd {
	switch msg := msg.(type) {
	case listedMsg:
		sel := m.selectedHandle() // before the indices change meaning
		m.loading, m.loaded = false, true
		m.apps, m.errs = msg.apps, msg.errs
		m.rebuild(sel)
	case appops.Done:
		return tea.Batch(msg.Notice(), m.refresh())
	case common.TickMsg:
		if cmd := m.refresh(); cmd != nil {
			return cmd
		}
		m.rebuild(m.selectedHandle()) // a listing is slow to come: at least the ages move on
	case tea.MouseWheelMsg:
		m.cur.Wheel(common.WheelDelta(msg), len(m.visible), m.rowsHeight())
	case tea.MouseClickMsg:
		if msg.Button != tea.MouseLeft {
			return nil
		}
		before := m.cur.Index
		if m.cur.Click(msg.Y-headerLines, len(m.visible)) && before == m.cur.Index {
			cmd, _ := m.Do(common.ActDescribe)
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
	for i := range m.apps {
		if matches(&m.apps[i], terms) {
			m.visible = append(m.visible, i)
		}
	}
	order(m.apps, m.visible, m.sort, m.reverse, m.now)
	rows := make([][]string, len(m.visible))
	for r, i := range m.visible {
		rows[r] = cells(&m.apps[i], m.now)
	}
	m.table.Headers = append([]string(nil), render.AppHeaders...)
	arrow := "↓"
	if m.reverse {
		arrow = "↑"
	}
	m.table.Headers[m.sort.column()] += " " + arrow
	m.table.SetRows(rows)
	m.selectHandle(selected)
	m.applySelection()
}

func (m *Model) applySelection() {
	if m.pending != "" && m.selectHandle(m.pending) {
		m.pending = ""
	}
	m.cur.Clamp(len(m.visible), m.rowsHeight())
}

// selectHandle moves the cursor to the app with handle h; it reports whether it is
// listed.
func (m *Model) selectHandle(h string) bool {
	for r, i := range m.visible {
		if m.apps[i].Handle == h {
			m.cur.Index = r
			m.cur.Clamp(len(m.visible), m.rowsHeight())
			return true
		}
	}
	return false
}

func (m *Model) selected() *spec.AppStatus {
	if m.cur.Index < 0 || m.cur.Index >= len(m.visible) {
		return nil
	}
	return &m.apps[m.visible[m.cur.Index]]
}

func (m *Model) selectedHandle() string {
	if a := m.selected(); a != nil {
		return a.Handle
	}
	return ""
}

// Do runs the app list's actions on the selected app.
func (m *Model) Do(action string) (tea.Cmd, bool) {
	if m.filtering && action == common.ActDescribe {
		// Enter ends the filter's typing; the filter stays.
		m.filtering = false
		m.filter.Blur()
		return nil, true
	}
	if m.cur.Do(action, len(m.visible), m.rowsHeight()) {
		return nil, true
	}
	switch action {
	case common.ActBack:
		if m.filtering {
			m.filtering = false
			m.filter.Blur()
			return nil, true
		}
		if m.filter.Value() != "" {
			m.filter.SetValue("")
			m.rebuild(m.selectedHandle())
			return nil, true
		}
		return nil, false
	case common.ActFilter:
		m.filtering = true
		m.filter.Focus()
		return nil, true
	case common.ActSort:
		m.sort = (m.sort + 1) % numSortKeys
		m.rebuild(m.selectedHandle())
		return common.Notify("sorted by " + m.sort.String()), true
	case common.ActReverse:
		m.reverse = !m.reverse
		m.rebuild(m.selectedHandle())
		return nil, true
	case common.ActRefresh:
		return m.refresh(), true
	}
	a := m.selected()
	if a == nil {
		switch action {
		case common.ActDescribe, common.ActLogs, common.ActCancel, common.ActDelete, common.ActRelaunch:
			return common.Notify("no app selected"), true
		}
		return nil, false
	}
	h, err := spec.ParseHandle(a.Handle)
	if err != nil {
		return common.NotifyErr(err), true
	}
	if action == common.ActDescribe {
		return common.Push(describe.New(m.Ctx, h)), true
	}
	return appops.Act(m.Ctx, m.ID(), action, h, a.State)
}
