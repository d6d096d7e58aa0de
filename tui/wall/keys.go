package wall

import (
	tea "charm.land/bubbletea/v2"

	"github.com/wick-dev/wick/tui/appops"
	"github.com/wick-dev/wick/tui/common"
	"github.com/wick-dev/wick/tui/inplace"
)

// Do runs an action of the action table on the wall.
func (m *Model) Do(action common.ActionName) (tea.Cmd, bool) {
	cmd, ok := m.do(action)
	if fill := m.fill(); ok && fill != nil {
		return tea.Batch(cmd, fill), true
	}
	return cmd, ok
}

// do routes an action to the part of the wall that answers it; each part says
// whether it did, and the next is asked when it did not.
//
// The order is that of esc (common.ActBack), which every part open may answer: it
// closes the innermost thing open (the chart, the save prompt, the search field, a
// selection, the zoomed or merged view) and goes back to the app list only when none
// is. It also lets the search field take up (it recalls the last query) before
// navigation scrolls with it.
func (m *Model) do(action common.ActionName) (tea.Cmd, bool) {
	if len(m.panes) == 0 {
		return nil, action != common.ActBack
	}
	parts := [...]func(common.ActionName) (tea.Cmd, bool){
		m.metricAction, // metrics.go: the chart and its settings
		m.saveAction,   // save.go: the save prompt
		m.searchAction, // search.go: the search field and its toggles
		m.selectAction, // save.go: selecting lines and copying them
		m.layoutAction, // nav.go: focus, pages, zoom, merged, hidden panes
		m.showAction,   // view.go: wrap, timestamps, streams, the summary
		m.navAction,    // nav.go: scrolling and following
		m.readAction,   // readback.go: the top of the logs, read back
		m.appAction,    // keys.go: the app itself
	}
	for _, part := range parts {
		if cmd, ok := part(action); ok {
			return cmd, true
		}
	}
	return nil, false
}

// appAction answers the actions on the app itself: cancel, relaunch and edit ask as
// in the app list (the wall's status follows on its next poll); refresh reads every
// replica again from its first line.
func (m *Model) appAction(action common.ActionName) (tea.Cmd, bool) {
	switch action {
	case appops.ActCancel, appops.ActRelaunch, appops.ActEdit:
		return appops.Act(m.Ctx, m.ID(), action, m.h, m.status.State)
	case common.ActRefresh:
		return m.reset(), true
	case inplace.ActShell:
		p := m.panes[m.focus]
		return inplace.Shell(m.Ctx, m.h, p.role, p.k), true
	case inplace.ActStack:
		return inplace.Stack(m.Ctx, m.h), true
	}
	return nil, false
}

// typed handles the keys of the search and save fields.
func (m *Model) typed(msg tea.Msg) tea.Cmd {
	switch {
	case m.saving.open:
		return m.saveTyped(msg)
	case m.find.typing:
		return m.searchTyped(msg)
	}
	return nil
}
