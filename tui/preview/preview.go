// Package preview is the dry-run preview: the plan of an app drawn by render.DryRun,
// exactly as `wick run --dryrun` prints it, scrollable, with secret-looking env values
// masked until the user reveals them. From here the app is launched, or the user goes
// back to edit its arguments.
package preview

import (
	"context"
	"strings"
	"time"

	tea "charm.land/bubbletea/v2"

	"github.com/wick-dev/wick/engine/sched"
	"github.com/wick-dev/wick/engine/spec"
	"github.com/wick-dev/wick/themes"
	"github.com/wick-dev/wick/tui/common"
	"github.com/wick-dev/wick/tui/launch"
	"github.com/wick-dev/wick/tui/render"
)

// dryRunTimeout bounds a dry run (local_docker may ask the Engine about images).
const dryRunTimeout = 30 * time.Second

// Plan is what to dry-run: an AppDef on a scheduler with run options.
type Plan struct {
	App       *spec.AppDef
	Scheduler string
	Cfg       spec.Cfg
}

// Model is the preview view.
type Model struct {
	common.Base
	plan   Plan
	info   *sched.DryRunInfo
	err    error
	reveal bool
	pager  common.Pager
	// pages holds the rendering, masked (false) and revealed (true), made off the UI
	// loop: a 64-replica dry run takes tens of milliseconds to render.
	pages map[bool][]string
	theme *themes.Theme // the theme pages were rendered in
}

type plannedMsg struct {
	common.ViewID
	info  *sched.DryRunInfo
	err   error
	pages map[bool][]string
	theme *themes.Theme
}

// New returns the preview of plan; Init runs the dry run.
func New(ctx *common.Context, plan Plan) *Model {
	return &Model{Base: common.NewBase(ctx, common.KindPreview), plan: plan}
}

// Title is the view's crumb.
func (m *Model) Title() string { return "preview" }

// Init runs the dry run and renders it, in a command.
func (m *Model) Init() tea.Cmd {
	id, b, parent, p, ws, t := m.ID(), m.Ctx.Backend, m.Ctx.Ctx, m.plan, m.Ctx.Workspace, m.Ctx.Theme
	return func() tea.Msg {
		ctx, cancel := context.WithTimeout(parent, dryRunTimeout)
		defer cancel()
		info, err := b.DryRun(ctx, p.App, p.Scheduler, p.Cfg, ws)
		if err != nil {
			return plannedMsg{ViewID: id, err: err}
		}
		return plannedMsg{ViewID: id, info: info, pages: pages(info, t), theme: t}
	}
}

// pages renders the dry run masked and revealed.
func pages(info *sched.DryRunInfo, t *themes.Theme) map[bool][]string {
	out := map[bool][]string{}
	for _, reveal := range []bool{false, true} {
		var b strings.Builder
		if err := render.DryRun(&b, info, t, render.TreeOptions{MaskSecrets: !reveal}); err != nil {
			b.WriteString("\n" + t.Error(err.Error()))
		}
		out[reveal] = strings.Split(strings.TrimRight(b.String(), "\n"), "\n")
	}
	return out
}

// Info is the planned dry run, once ready.
func (m *Model) Info() *sched.DryRunInfo { return m.info }

// Update takes the dry run's result, ticks and the mouse wheel.
func (m *Model) Update(msg tea.Msg) tea.Cmd {
	switch msg := msg.(type) {
	case plannedMsg:
		m.info, m.err, m.pages, m.theme = msg.info, msg.err, msg.pages, msg.theme
		m.pager.SetLines(m.pages[m.reveal])
	case common.TickMsg:
		if m.info != nil && m.theme != m.Ctx.Theme {
			// The theme changed (it follows the terminal): render again.
			id, info, t := m.ID(), m.info, m.Ctx.Theme
			m.theme = t
			return func() tea.Msg { return plannedMsg{ViewID: id, info: info, pages: pages(info, t), theme: t} }
		}
	case tea.MouseWheelMsg:
		m.pager.Scroll(common.WheelDelta(msg), m.Ctx.Height)
	}
	return nil
}

// Do scrolls, reveals secrets and launches.
func (m *Model) Do(action string) (tea.Cmd, bool) {
	if m.pager.Do(action, m.Ctx.Height) {
		return nil, true
	}
	switch action {
	case common.ActSecrets:
		m.reveal = !m.reveal
		m.pager.SetLines(m.pages[m.reveal])
		if m.reveal {
			return common.Notify("secrets shown (s hides them)"), true
		}
		return common.Notify("secrets masked"), true
	case common.ActLaunch:
		if m.info == nil {
			return common.Notify("the dry run is not ready"), true
		}
		return common.Push(launch.New(m.Ctx, m.info)), true
	}
	return nil, false
}

// View draws the visible part of the dry run.
func (m *Model) View() string {
	t := m.Ctx.Theme
	switch {
	case m.err != nil:
		return t.Fail.Render("dry run failed: "+m.err.Error()) + "\n\n" + t.Muted.Render("esc: back to the arguments")
	case m.info == nil:
		return t.Muted.Render("planning " + m.plan.App.Name + " on " + m.plan.Scheduler + "…")
	}
	return m.pager.View(m.Ctx.Width, m.Ctx.Height)
}

// Position is the scroll position for the status line.
func (m *Model) Position() string { return m.pager.Position(m.Ctx.Height) }
