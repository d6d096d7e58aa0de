// Package sweepplan is the sweep's preview: the grid the argument form stands for,
// planned by the Runner's PlanSweep (the engine's one planning of a sweep, which `wick
// run --sweep` uses too) and drawn by render.SweepPlan, exactly as `wick run --sweep
// --dryrun` prints it. Enter launches it (the Runner's LaunchSweep: its queue starts)
// and goes back to the app list, where the sweep has its row.
package sweepplan

import (
	"context"
	"fmt"
	"strings"
	"time"

	tea "charm.land/bubbletea/v2"

	"github.com/wick-dev/wick/components"
	"github.com/wick-dev/wick/engine/spec"
	"github.com/wick-dev/wick/engine/sweep"
	"github.com/wick-dev/wick/themes"
	"github.com/wick-dev/wick/tui/common"
	"github.com/wick-dev/wick/tui/render"
	"github.com/wick-dev/wick/tui/widget"
)

// Kind is the sweep preview's kind of view.
const Kind common.Kind = "sweep-preview"

// ActLaunch launches the planned sweep.
const ActLaunch = "launch-sweep"

// planTimeout bounds the planning of a grid (10,000 dry runs) and the start of its
// queue.
const planTimeout = time.Minute

// confirmApps is the most apps of a grid launched without asking.
const confirmApps = 100

// Actions are the sweep preview's rows of the action table.
func Actions() []common.Action {
	return append([]common.Action{
		common.NewAction(ActLaunch, "launch the sweep", []string{"enter", "L"}, true, Kind),
		common.NewAction(common.ActSecrets, "show/hide secrets", []string{"s"}, true, Kind),
		common.NewAction(common.ActWrapLines, "wrap/cut long lines", []string{"w"}, true, Kind),
	}, common.Moves(Kind)...)
}

// Plan is the grid to plan: a component call with some arguments swept, as
// `wick run --sweep NAME=V1,V2 ... COMPONENT ARGS` takes it.
type Plan struct {
	Component   string
	Args        []string
	Params      []sweep.Param
	Scheduler   string
	Cfg         spec.Cfg
	MaxParallel int
}

// Model is the sweep preview.
type Model struct {
	common.Base
	plan      Plan
	planned   *sweep.Planned
	err       error
	reveal    bool
	launching bool
	pager     widget.Pager
	pages     map[bool][]string
	theme     *themes.Theme // the theme pages were rendered in
	cancel    context.CancelFunc
}

type plannedMsg struct {
	common.ViewID
	planned  *sweep.Planned
	warnings []string
	pages    map[bool][]string
	theme    *themes.Theme
	err      error
}

type launchedMsg struct {
	common.ViewID
	err error
}

// New returns the preview of the grid p; Init plans it.
func New(ctx *common.Context, p Plan) *Model {
	m := &Model{Base: common.NewBase(ctx, Kind), plan: p}
	m.pager.Wrap = true
	return m
}

// Title is the view's crumb.
func (m *Model) Title() string { return "sweep preview" }

// Init plans the grid and renders it, in a command.
func (m *Model) Init() tea.Cmd {
	id, b, p, ws, t := m.ID(), m.Ctx.Backend, m.plan, m.Ctx.Workspace, m.Ctx.Theme
	find, conf := m.Ctx.Find, m.Ctx.Config
	ctx, cancel := context.WithTimeout(m.Ctx.Ctx, planTimeout)
	m.cancel = cancel
	return func() tea.Msg {
		defer cancel()
		var warnings []string
		planned, err := b.PlanSweep(ctx, sweep.Request{
			Component: p.Component, Args: p.Args, Params: p.Params,
			Scheduler: p.Scheduler, Cfg: p.Cfg, Workspace: ws, MaxParallel: p.MaxParallel,
			Lookup: components.Lookup{Find: find, Defaults: conf.ComponentDefaults,
				Warn: func(s string) { warnings = append(warnings, s) }},
		})
		if err != nil {
			return plannedMsg{ViewID: id, err: err}
		}
		return plannedMsg{ViewID: id, planned: planned, warnings: warnings, pages: pages(planned, t), theme: t}
	}
}

// Close stops a planning still in progress.
func (m *Model) Close() {
	if m.cancel != nil {
		m.cancel()
	}
}

// pages renders the plan masked and revealed.
func pages(p *sweep.Planned, t *themes.Theme) map[bool][]string {
	return render.Pages(t, func(b *strings.Builder, opts render.TreeOptions) error {
		return render.SweepPlan(b, p.Sweep, p.DryRuns[0], t, opts)
	})
}

// Update takes the plan, the launch's result and the mouse wheel.
func (m *Model) Update(msg tea.Msg) tea.Cmd {
	switch msg := msg.(type) {
	case plannedMsg:
		m.planned, m.err, m.pages, m.theme = msg.planned, msg.err, msg.pages, msg.theme
		m.pager.SetLines(m.pages[m.reveal])
		if len(msg.warnings) > 0 {
			return common.Notify("warning: " + strings.Join(msg.warnings, "; "))
		}
	case common.TickMsg:
		if m.planned != nil && m.theme != m.Ctx.Theme {
			// The theme changed (it follows the terminal): render again, as the dry
			// run's preview does.
			id, planned, t := m.ID(), m.planned, m.Ctx.Theme
			m.theme = t
			return func() tea.Msg {
				return plannedMsg{ViewID: id, planned: planned, pages: pages(planned, t), theme: t}
			}
		}
	case launchedMsg:
		m.launching = false
		if msg.err != nil {
			return common.NotifyErr(fmt.Errorf("the sweep did not start: %w", msg.err))
		}
		sw := m.planned.Sweep
		notice := fmt.Sprintf("launched sweep %s: %s of %s", sw.ID, spec.Count(len(sw.Entries), "app"), sw.Component)
		key := common.SweepKey(sw.ID)
		return func() tea.Msg { return common.HomeMsg{Handle: key, Notice: notice} }
	case tea.MouseWheelMsg:
		m.pager.Scroll(widget.WheelDelta(msg), m.Ctx.Height)
	}
	return nil
}

// Do scrolls, reveals secrets and launches.
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
		m.pager.SetLines(m.pages[m.reveal])
		return nil, true
	case ActLaunch:
		switch {
		case m.err != nil:
			return common.NotifyErr(fmt.Errorf("the plan failed: esc goes back to fix the arguments")), true
		case m.planned == nil:
			return common.Notify("the plan is not ready"), true
		case m.launching:
			return common.Notify("launching…"), true
		}
		if n := len(m.planned.Sweep.Entries); n > confirmApps {
			return common.Confirm(fmt.Sprintf("launch a sweep of %d apps?", n), m.launch()), true
		}
		m.launching = true
		return m.launch(), true
	}
	return nil, false
}

// launch writes the sweep and starts its queue, in a command.
func (m *Model) launch() tea.Cmd {
	id, b, p, parent, cores := m.ID(), m.Ctx.Backend, m.planned, m.Ctx.Ctx, m.Ctx.Cores
	return func() tea.Msg {
		ctx, cancel := context.WithTimeout(parent, planTimeout)
		defer cancel()
		defer cores.Acquire()() // as a launch (see launch.Model.Init)
		return launchedMsg{ViewID: id, err: b.LaunchSweep(ctx, p)}
	}
}

// Off says launch is off after a failed plan.
func (m *Model) Off(action common.ActionName) bool { return action == ActLaunch && m.err != nil }

// View draws the visible part of the plan.
func (m *Model) View() string {
	t := m.Ctx.Theme
	switch {
	case m.err != nil:
		return t.Fail.Render("✗ the sweep's plan failed: "+m.err.Error()) + "\n\n" + t.Muted.Render("esc: back to the arguments to fix them")
	case m.planned == nil:
		return t.Muted.Render("planning the sweep of " + m.plan.Component + " on " + m.plan.Scheduler + "…")
	}
	return m.pager.View(m.Ctx.Width, m.Ctx.Height)
}

// Position is the scroll position for the status line.
func (m *Model) Position() string { return m.pager.Position(m.Ctx.Height) }
