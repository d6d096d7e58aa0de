// Package describe is the describe view: everything wick knows of one app, drawn by
// render.Describe (the rendering of `wick describe`), scrollable, refreshed on each
// tick while the app runs.
package describe

import (
	"github.com/wick-dev/wick/engine/metrics"

	"context"
	"strings"
	"time"

	tea "charm.land/bubbletea/v2"

	"github.com/wick-dev/wick/engine/sched"
	"github.com/wick-dev/wick/engine/spec"
	"github.com/wick-dev/wick/themes"
	"github.com/wick-dev/wick/tui/appops"
	"github.com/wick-dev/wick/tui/common"
	"github.com/wick-dev/wick/tui/inplace"
	"github.com/wick-dev/wick/tui/render"
	"github.com/wick-dev/wick/tui/widget"
)

// describeTimeout bounds one Describe call.
const describeTimeout = 10 * time.Second

// Kind is the describe view's kind of view.
const Kind common.Kind = "describe"

// Actions are the describe view's rows of the action table.
func Actions() []common.Action {
	rows := []common.Action{
		common.NewAction(common.ActSecrets, "show/hide secrets", []string{"s"}, true, Kind),
		common.NewAction(common.ActWrapLines, "wrap/cut long lines", []string{"w"}, false, Kind),
	}
	rows = append(rows, appops.Actions(Kind)...)
	rows = append(rows, common.NewAction(common.ActRefresh, "refresh", []string{"ctrl+r"}, false, Kind))
	return append(rows, common.Moves(Kind)...)
}

// Model is the describe view.
type Model struct {
	common.Base
	h       spec.Handle
	desc    *sched.Description
	alarms  metrics.Found
	err     error
	loading bool
	reveal  bool
	pager   widget.Pager
	// shown says what the pager holds, so that a stale rendering is made again.
	shown look
}

// look is what a rendering depends on besides the description.
type look struct {
	reveal bool
	theme  *themes.Theme
	// width is the view's: the replica table is fitted into it (a resize renders
	// again on the next tick).
	width int
}

// describedMsg carries a description and its rendering, both made off the UI loop.
type describedMsg struct {
	common.ViewID
	desc   *sched.Description
	alarms metrics.Found
	err    error
	lines  []string
	look   look
}

// New returns the describe view of the app h.
func New(ctx *common.Context, h spec.Handle) *Model {
	return &Model{Base: common.NewBase(ctx, Kind), h: h}
}

// Title is the view's crumb.
func (m *Model) Title() string { return m.h.AppID }

// Init describes the app.
func (m *Model) Init() tea.Cmd { return m.load() }

// Activate describes the app again when the view is on top again.
func (m *Model) Activate() tea.Cmd { return m.load() }

func (m *Model) look() look { return look{reveal: m.reveal, theme: m.Ctx.Theme, width: m.Ctx.Width} }

// load describes the app and renders it.
func (m *Model) load() tea.Cmd {
	if m.loading {
		return nil
	}
	m.loading = true
	id, b, parent, h, lk, now, book := m.ID(), m.Ctx.Backend, m.Ctx.Ctx, m.h, m.look(), m.Ctx.Now, m.Ctx.Alarms
	return func() tea.Msg {
		ctx, cancel := context.WithTimeout(parent, describeTimeout)
		defer cancel()
		d, err := b.Describe(ctx, h)
		if err != nil {
			return describedMsg{ViewID: id, err: err}
		}
		_ = b.AttachUsage(ctx, h, &d.Status) // best effort: shown without usage otherwise
		// Best effort too: the alarms found so far are shown, whatever stopped the
		// reading (the next refresh reads on).
		alarms, _ := book.Scan(ctx, h, d)
		return describedMsg{ViewID: id, desc: d, alarms: alarms, lines: lines(d, alarms, lk, now()), look: lk}
	}
}

// rerender renders the last description again (secrets shown or hidden).
func (m *Model) rerender() tea.Cmd {
	id, d, alarms, lk, now := m.ID(), m.desc, m.alarms, m.look(), m.Ctx.Now
	return func() tea.Msg {
		return describedMsg{ViewID: id, desc: d, alarms: alarms, lines: lines(d, alarms, lk, now()), look: lk}
	}
}

func lines(d *sched.Description, alarms metrics.Found, lk look, now time.Time) []string {
	var b strings.Builder
	if err := render.Describe(&b, d, now, lk.theme, render.TreeOptions{MaskSecrets: !lk.reveal, Alarms: &alarms, Width: lk.width}); err != nil {
		b.WriteString("\n" + lk.theme.Error(err.Error()))
	}
	return strings.Split(strings.TrimRight(b.String(), "\n"), "\n")
}

// Update takes descriptions, ticks (refreshing a running app) and the mouse wheel.
func (m *Model) Update(msg tea.Msg) tea.Cmd {
	switch msg := msg.(type) {
	case describedMsg:
		m.loading = false
		m.desc, m.err = msg.desc, msg.err
		if msg.err == nil {
			m.alarms = msg.alarms
		}
		if msg.err == nil {
			m.pager.SetLines(msg.lines)
			m.shown = msg.look
			if msg.look != m.look() {
				return m.rerender()
			}
		}
	case appops.Done:
		if msg.Verb == "deleted" && msg.Err == nil {
			return tea.Batch(msg.Notice(), common.Pop)
		}
		return tea.Batch(msg.Notice(), m.load())
	case common.TickMsg:
		switch {
		case m.desc == nil || !m.desc.Status.State.Terminal():
			return m.load()
		case m.shown != m.look():
			return m.rerender()
		}
	case tea.MouseWheelMsg:
		m.pager.Scroll(widget.WheelDelta(msg), m.Ctx.Height)
	}
	return nil
}

// Do scrolls, reveals secrets, and runs the actions on the app.
func (m *Model) Do(action common.ActionName) (tea.Cmd, bool) {
	if m.pager.Do(string(action), m.Ctx.Height) {
		return nil, true
	}
	switch action {
	case common.ActWrapLines:
		m.pager.SetWrap(!m.pager.Wrap)
		return nil, true
	case common.ActSecrets:
		m.reveal = !m.reveal
		if m.desc == nil {
			return nil, true
		}
		return m.rerender(), true
	case common.ActRefresh:
		return m.load(), true
	case inplace.ActShell, inplace.ActStack:
		return m.inPlace(action), true
	}
	st := spec.UnknownState
	if m.desc != nil {
		st = m.desc.Status.State
	}
	return appops.Act(m.Ctx, m.ID(), action, m.h, st)
}

// inPlace runs a shell in the first running replica's place, or the stack of every
// rank (package inplace).
func (m *Model) inPlace(action common.ActionName) tea.Cmd {
	if action == inplace.ActStack {
		return inplace.Stack(m.Ctx, m.h)
	}
	if m.desc != nil {
		for _, role := range m.desc.Status.Roles {
			for _, r := range role.Replicas {
				if r.State == spec.Running {
					return inplace.Shell(m.Ctx, m.h, role.Role, r.ID)
				}
			}
		}
	}
	return common.Notify("no running replica to open a shell in")
}

// View draws the visible part of the description.
func (m *Model) View() string {
	t := m.Ctx.Theme
	switch {
	case m.err != nil:
		return t.Fail.Render(m.err.Error()) + "\n\n" + t.Muted.Render("esc: back · R: try again")
	case m.desc == nil:
		return t.Muted.Render("describing " + m.h.String() + "…")
	}
	return m.pager.View(m.Ctx.Width, m.Ctx.Height)
}

// Position is the scroll position for the status line.
func (m *Model) Position() string { return m.pager.Position(m.Ctx.Height) }
