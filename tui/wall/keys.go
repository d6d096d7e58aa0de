package wall

import (
	tea "charm.land/bubbletea/v2"

	"github.com/wick-dev/wick/engine/ranks"
	"github.com/wick-dev/wick/engine/sched"
	"github.com/wick-dev/wick/tui/appops"
	"github.com/wick-dev/wick/tui/common"
)

// Do runs an action of the action table on the wall.
func (m *Model) Do(action common.ActionName) (tea.Cmd, bool) {
	cmd, ok := m.do(action)
	if fill := m.fill(); ok && fill != nil {
		return tea.Batch(cmd, fill), true
	}
	return cmd, ok
}

func (m *Model) do(action common.ActionName) (tea.Cmd, bool) {
	if len(m.panes) == 0 {
		return nil, action != common.ActBack
	}
	if m.metricAction(action) {
		return nil, true
	}
	if m.find.typing && action == common.ActUp {
		return m.recall(), true
	}
	s, _ := m.current()
	switch action {
	case common.ActBack:
		switch {
		case m.mx.chart:
			m.mx.chart = false
		case m.saving.open:
			m.saving.close()
		case m.find.typing:
			m.find.cancel()
			return m.research(), true
		case s.selecting:
			s.selecting = false
		case m.zoom:
			m.zoom = false
		case m.merged:
			m.merged = false
		default:
			return nil, false
		}
	case ActFollow:
		m.setFollow(s, !s.follow)
	case ActFollowAll:
		m.followAll()
	case ActReplica:
		m.moveFocus(1)
	case ActPrevReplica:
		m.moveFocus(-1)
	case ActZoom:
		m.zoom = !m.zoom
		m.merged = false
	case ActMerged:
		m.merged = !m.merged
		m.zoom = false
	case ActHide:
		if len(m.visible()) > 1 {
			m.panes[m.focus].hidden = true
			m.moveFocus(1)
		} else {
			return common.Notify("the last pane stays"), true
		}
	case appops.ActCancel, appops.ActRelaunch, appops.ActEdit:
		// The same confirmations and forms as the app list's; the wall's status follows
		// on its next poll.
		return appops.Act(m.Ctx, m.ID(), action, m.h, m.status.State)
	case ActShowAll:
		for _, p := range m.panes {
			p.hidden = false
		}
	case ActNextPage, ActPrevPage:
		m.turnPage(action == ActNextPage)
	case ActWrap:
		s.wrap = !s.wrap
	case ActTimestamps:
		// The wall's: every pane and the merged view; off when any shows them.
		on := !m.mview.stamps
		for _, p := range m.panes {
			on = on && !p.view.stamps
		}
		m.mview.stamps = on
		for _, p := range m.panes {
			p.view.stamps = on
		}
	case ActPaneStamps:
		s.stamps = !s.stamps
	case ActStreams:
		switch s.streams {
		case sched.Stdout:
			s.streams = sched.Stderr
		case sched.Stderr:
			s.streams = sched.Combined
		default:
			s.streams = sched.Stdout
		}
	case ActSearch:
		m.find.begin()
	case ActNextMatch:
		return m.nextMatch(true), true
	case ActPrevMatch:
		return m.nextMatch(false), true
	case ActRegex:
		m.find.regex = !m.find.regex
		return m.research(), true
	case ActCase:
		m.find.caseSens = !m.find.caseSens
		return m.research(), true
	case ActOnlyMatches:
		m.find.only = !m.find.only
		if m.find.only && m.find.match == nil {
			return common.Notify("search first (/): only matching lines are shown then"), true
		}
	case ActContext:
		m.find.ctxStep = (m.find.ctxStep + 1) % len(contextSteps)
	case ActSave:
		m.saving.begin(m.defaultSavePath())
	case ActMark:
		if s.selecting {
			s.selecting = false
			break
		}
		k := m.walkerOf(s)
		h, tw := m.geometry()
		lines, _, _ := k.window(h, tw)
		if len(lines) == 0 {
			return nil, true
		}
		s.follow = false
		s.selecting = true
		s.mark, s.cursor = lines[len(lines)-1], lines[len(lines)-1]
	case ActCopy:
		return m.copySelection(s), true
	case ActSummary:
		m.summary = !m.summary
	case common.ActRefresh:
		for i, p := range m.panes {
			p.ring, p.far = newRing(m.opts.RingLines), nil
			p.attempt = 0
			p.ended, p.err = false, nil
			m.back.busy[i] = false
		}
		m.back.epoch++
		m.mb = newMergedBack(len(m.panes))
		for i := range m.srcs {
			if r := &m.srcs[i]; r.node != nil {
				r.node = ranks.NewNode(r.k, r.nproc)
			}
		}
		m.ended = false
		m.mx.reset()
		return tea.Batch(m.open(), m.research()), true
	case common.ActUp:
		return m.scroll(-1), true
	case common.ActDown:
		return m.scroll(1), true
	case common.ActPageUp:
		h, _ := m.geometry()
		return m.scroll(-max(1, h-1)), true
	case common.ActPageDown:
		h, _ := m.geometry()
		return m.scroll(max(1, h-1)), true
	case common.ActTop:
		if s.selecting {
			return m.scroll(-1 << 30), true
		}
		return m.toTop(s), true
	case common.ActBottom:
		if s.selecting {
			return m.scroll(1 << 30), true
		}
		m.followAll()
	default:
		return nil, false
	}
	return nil, true
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
