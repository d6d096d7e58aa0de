// Package preview is the dry-run preview: the plan of an app drawn by render.DryRun,
// exactly as `wick run --dryrun` prints it, scrollable, with secret-looking env values
// masked until the user reveals them. From here the app is launched, or the user goes
// back to edit its arguments.
package preview

import (
	"context"
	"fmt"
	"strings"
	"time"

	tea "charm.land/bubbletea/v2"

	"github.com/wick-dev/wick/components"
	"github.com/wick-dev/wick/engine/sched"
	"github.com/wick-dev/wick/engine/spec"
	"github.com/wick-dev/wick/themes"
	"github.com/wick-dev/wick/tui/common"
	"github.com/wick-dev/wick/tui/launch"
	"github.com/wick-dev/wick/tui/render"
	"github.com/wick-dev/wick/tui/widget"
)

// dryRunTimeout bounds a dry run (local_docker may ask the Engine about images).
const dryRunTimeout = 30 * time.Second

// confirmReplicas is the most replicas launched without asking: more is rarely meant
// (a stray zero in num_replicas) and costs a process, pipes and log files each.
const confirmReplicas = 64

// Plan is what to dry-run: a component call (as `wick run` takes it) on a scheduler
// with run options.
type Plan struct {
	// Component names the component: a builtin or search-path name, or FILE:NAME.
	Component string
	// Args are its arguments, command-line style.
	Args      []string
	Scheduler string
	Cfg       spec.Cfg
}

// Kind is the preview's kind of view.
const Kind common.Kind = "preview"

// ActLaunch launches the planned app.
const ActLaunch = "launch"

// Actions are the preview's rows of the action table.
func Actions() []common.Action {
	return append([]common.Action{
		common.NewAction(ActLaunch, "launch", []string{"enter", "L"}, true, Kind),
		common.NewAction(common.ActSecrets, "show/hide secrets", []string{"s"}, true, Kind),
		common.NewAction(common.ActWrapLines, "wrap/cut long lines", []string{"w"}, true, Kind),
	}, common.Moves(Kind)...)
}

// Model is the preview view.
type Model struct {
	common.Base
	plan   Plan
	info   *sched.DryRunInfo
	err    error
	reveal bool
	pager  widget.Pager
	// pages holds the rendering, masked (false) and revealed (true), made off the UI
	// loop: a 64-replica dry run takes tens of milliseconds to render.
	pages map[bool][]string
	theme *themes.Theme // the theme pages were rendered in
	// cancel stops the dry run when the user leaves the preview before it is done.
	cancel context.CancelFunc
}

type plannedMsg struct {
	common.ViewID
	info     *sched.DryRunInfo
	warnings []string
	err      error
	pages    map[bool][]string
	theme    *themes.Theme
}

// New returns the preview of plan; Init runs the dry run.
func New(ctx *common.Context, plan Plan) *Model {
	m := &Model{Base: common.NewBase(ctx, Kind), plan: plan}
	// Wrapped from the start: the line a user checks (the torchrun command) is the
	// longest, and cut with "…" it hid what it was for.
	m.pager.Wrap = true
	return m
}

// Title is the view's crumb.
func (m *Model) Title() string { return "preview" }

// Init runs the dry run and renders it, in a command.
func (m *Model) Init() tea.Cmd {
	id, b, p, ws, t := m.ID(), m.Ctx.Backend, m.plan, m.Ctx.Workspace, m.Ctx.Theme
	find, conf := m.Ctx.Find, m.Ctx.Config
	ctx, cancel := context.WithTimeout(m.Ctx.Ctx, dryRunTimeout)
	m.cancel = cancel
	return func() tea.Msg {
		defer cancel()
		// The same Runner method as `wick run`: the same errors and warnings.
		var warnings []string
		info, err := b.DryRunComponent(ctx, p.Component, p.Args, p.Scheduler, p.Cfg, ws, components.Lookup{
			Find: find, Defaults: conf.ComponentDefaults,
			Warn: func(s string) { warnings = append(warnings, s) },
		})
		if err != nil {
			return plannedMsg{ViewID: id, err: err}
		}
		if ctx.Err() != nil {
			return nil // the user left: no rendering for nobody
		}
		return plannedMsg{ViewID: id, info: info, warnings: warnings, pages: pages(info, t), theme: t}
	}
}

// Close stops a dry run still in progress.
func (m *Model) Close() {
	if m.cancel != nil {
		m.cancel()
	}
}

// pages renders the dry run masked and revealed.
func pages(info *sched.DryRunInfo, t *themes.Theme) map[bool][]string {
	return render.Pages(t, func(b *strings.Builder, opts render.TreeOptions) error {
		return render.DryRun(b, info, t, opts)
	})
}

// Info is the planned dry run, once ready.
func (m *Model) Info() *sched.DryRunInfo { return m.info }

// Update takes the dry run's result, ticks and the mouse wheel.
func (m *Model) Update(msg tea.Msg) tea.Cmd {
	switch msg := msg.(type) {
	case plannedMsg:
		m.info, m.err, m.pages, m.theme = msg.info, msg.err, msg.pages, msg.theme
		m.pager.SetLines(m.pages[m.reveal])
		if len(msg.warnings) > 0 {
			return common.Notify("warning: " + strings.Join(msg.warnings, "; "))
		}
	case common.TickMsg:
		if m.info != nil && m.theme != m.Ctx.Theme {
			// The theme changed (it follows the terminal): render again.
			id, info, t := m.ID(), m.info, m.Ctx.Theme
			m.theme = t
			return func() tea.Msg { return plannedMsg{ViewID: id, info: info, pages: pages(info, t), theme: t} }
		}
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
		if m.reveal {
			return common.Notify("secrets shown (s hides them)"), true
		}
		return common.Notify("secrets masked"), true
	case ActLaunch:
		if m.err != nil {
			return common.NotifyErr(fmt.Errorf("the dry run failed: esc goes back to fix the arguments")), true
		}
		if m.info == nil {
			return common.Notify("the dry run is not ready"), true
		}
		push := common.Push(launch.New(m.Ctx, m.info))
		if n := replicas(m.info.App); n > confirmReplicas {
			return common.Confirm(fmt.Sprintf("launch %d replicas?", n), push), true
		}
		return push, true
	}
	return nil, false
}

// Off says launch is off after a failed dry run: there is nothing to launch, and the
// help bar does not offer it.
func (m *Model) Off(action common.ActionName) bool { return action == ActLaunch && m.err != nil }

// View draws the visible part of the dry run.
func (m *Model) View() string {
	t := m.Ctx.Theme
	switch {
	case m.err != nil:
		return t.Fail.Render("✗ the dry run failed: "+m.err.Error()) + "\n\n" + t.Muted.Render("esc: back to the arguments to fix them")
	case m.info == nil:
		return t.Muted.Render("planning " + m.plan.Component + " on " + m.plan.Scheduler + "…")
	}
	return m.pager.View(m.Ctx.Width, m.Ctx.Height)
}

// Position is the scroll position for the status line.
func (m *Model) Position() string { return m.pager.Position(m.Ctx.Height) }

// replicas counts the replicas of app.
func replicas(app *spec.AppDef) int {
	n := 0
	for _, r := range app.Roles {
		n += r.NumReplicas
	}
	return n
}
