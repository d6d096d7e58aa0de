// Package compare is the compare view: the apps of a sweep, or any apps marked in the
// app list, side by side, one row per
// app with its swept values, its state and each metric's last and best value, sorted
// by the best loss, as `wick metrics --sweep` prints them (render.Compare); refreshed
// while an app runs, each refresh reading only the lines written since the last
// (sweep.Reader, as the sweep chart).
package compare

import (
	"context"
	"strings"
	"time"

	tea "charm.land/bubbletea/v2"

	"github.com/wick-dev/wick/engine/metrics"
	"github.com/wick-dev/wick/engine/spec"
	"github.com/wick-dev/wick/engine/sweep"
	"github.com/wick-dev/wick/themes"
	"github.com/wick-dev/wick/tui/common"
	"github.com/wick-dev/wick/tui/render"
	"github.com/wick-dev/wick/tui/sweepchart"
	"github.com/wick-dev/wick/tui/widget"
)

// Kind is the compare view's kind of view.
const Kind common.Kind = "compare"

// readTimeout bounds one reading of every app's metrics.
const readTimeout = time.Minute

// refreshEvery is how often the apps are read again while one runs: reading every
// app's logs is heavier than a status.
const refreshEvery = 2 * time.Second

// ActChart opens the sweep's chart (tui/sweepchart): every app's curve of a metric,
// with the rank chart's keys (p, the wall's chart key).
const ActChart = "compare-chart"

// Actions are the compare view's rows of the action table.
func Actions() []common.Action {
	rows := []common.Action{
		common.NewAction(ActChart, "chart: every app's curve of a metric (legend: its values)", []string{"p"}, true, Kind),
		common.NewAction(common.ActRefresh, "refresh", []string{"ctrl+r"}, false, Kind),
	}
	return append(rows, common.Moves(Kind)...)
}

// App is one app to compare.
type App struct {
	Handle spec.Handle
	Values map[string]string
	State  spec.AppState
}

// Model is the compare view.
type Model struct {
	common.Base
	title string
	// marked says the apps are a set the user marked, not a sweep (title is then
	// not a sweep's id).
	marked  bool
	names   []string
	apps    []App
	pager   widget.Pager
	loaded  bool
	loading bool
	at      time.Time
	// rd reads each app's new lines only (the sweep chart's reader); only the
	// reading under way touches it.
	rd *sweep.Reader
}

// readMsg carries a rendering of the comparison, made off the UI loop.
type readMsg struct {
	common.ViewID
	lines  []string
	states []spec.AppState
}

// New returns the compare view of apps, whose swept names are names; title is their
// sweep's id (p opens its chart).
func New(ctx *common.Context, title string, names []string, apps []App) *Model {
	return &Model{Base: common.NewBase(ctx, Kind), title: title, names: names, apps: apps, rd: sweep.NewReader(metrics.DefaultConfig())}
}

// NewMarked returns the compare view of apps marked in the app list, of any sweeps or
// none: names are the swept names of their sweeps (an app without one shows "-").
func NewMarked(ctx *common.Context, names []string, apps []App) *Model {
	m := New(ctx, spec.Count(len(apps), "marked app"), names, apps)
	m.marked = true
	return m
}

// Title is the view's crumb.
func (m *Model) Title() string { return "compare " + m.title }

// Init reads the apps' metrics.
func (m *Model) Init() tea.Cmd { return m.load() }

// Activate reads them again when the view is on top again.
func (m *Model) Activate() tea.Cmd { return m.load() }

// load reads every app's metrics and renders the comparison.
func (m *Model) load() tea.Cmd {
	if m.loading {
		return nil
	}
	m.loading, m.at = true, time.Now()
	id, b, parent, theme, rd := m.ID(), m.Ctx.Backend, m.Ctx.Ctx, m.Ctx.Theme, m.rd
	apps, names := append([]App(nil), m.apps...), m.names
	return func() tea.Msg {
		ctx, cancel := context.WithTimeout(parent, readTimeout)
		defer cancel()
		lines := read(ctx, rd, b, apps, names, theme)
		states := make([]spec.AppState, len(apps))
		for i := range apps {
			states[i] = apps[i].State
		}
		return readMsg{ViewID: id, lines: lines, states: states}
	}
}

// read reads the apps' states (a listing: a queued app may have started) and the
// metrics each wrote since the last reading (rd), and renders them, best first.
func read(ctx context.Context, rd *sweep.Reader, b common.Backend, apps []App, names []string, theme *themes.Theme) []string {
	sts := make([]spec.AppStatus, len(apps))
	at := make(map[string]int, len(apps))
	for i := range apps {
		sts[i] = spec.AppStatus{Handle: apps[i].Handle.String(), State: apps[i].State}
		at[sts[i].Handle] = i
	}
	if anyQueued(apps) {
		listed, _ := b.List(ctx, "")
		for _, a := range listed {
			if i, ok := at[a.Handle]; ok {
				sts[i].State = a.State
			}
		}
	}
	runs := rd.Read(ctx, b, sts)
	for i := range apps {
		apps[i].State = sts[i].State
	}
	byRun := make(map[*sweep.Run]render.CompareRow, len(runs))
	for i, r := range runs {
		byRun[r] = render.CompareRow{AppID: apps[i].Handle.AppID, Values: apps[i].Values, State: apps[i].State, Run: r}
	}
	sortBy := sweep.Headline(runs)
	if sortBy != "" {
		sweep.Sort(runs, sortBy)
		sweep.MarkAlarms(runs, sortBy, metrics.DefaultDivergence)
	}
	rows := make([]render.CompareRow, len(runs))
	for i, r := range runs {
		rows[i] = byRun[r]
	}
	var sb strings.Builder
	if err := render.Compare(&sb, rows, names, sweep.Names(runs), sortBy, theme); err != nil {
		sb.WriteString(theme.Error(err.Error()))
	}
	if sortBy == "" {
		sb.WriteString("\nno metrics in these apps' logs yet")
	}
	return strings.Split(strings.TrimRight(sb.String(), "\n"), "\n")
}

// anyQueued says whether an app waits in its sweep's queue.
func anyQueued(apps []App) bool {
	for _, a := range apps {
		if a.State == spec.Queued {
			return true
		}
	}
	return false
}

// running says whether an app may still change.
func (m *Model) running() bool {
	for _, a := range m.apps {
		if !a.State.Terminal() {
			return true
		}
	}
	return false
}

// Update takes readings, ticks (reading again while an app runs) and the wheel.
func (m *Model) Update(msg tea.Msg) tea.Cmd {
	switch msg := msg.(type) {
	case readMsg:
		m.loading, m.loaded = false, true
		m.pager.SetLines(msg.lines)
		for i := range m.apps {
			if i < len(msg.states) {
				m.apps[i].State = msg.states[i]
			}
		}
	case common.TickMsg:
		if m.running() && time.Since(m.at) >= refreshEvery {
			return m.load()
		}
	case tea.MouseWheelMsg:
		m.pager.Scroll(widget.WheelDelta(msg), m.Ctx.Height)
	}
	return nil
}

// Do scrolls and refreshes.
func (m *Model) Do(action common.ActionName) (tea.Cmd, bool) {
	if m.pager.Do(string(action), m.Ctx.Height) {
		return nil, true
	}
	switch action {
	case common.ActRefresh:
		return m.load(), true
	case ActChart:
		if m.marked {
			hs := make([]string, len(m.apps))
			for i, a := range m.apps {
				hs[i] = a.Handle.String()
			}
			return common.Push(sweepchart.NewOf(m.Ctx, m.title, hs)), true
		}
		return common.Push(sweepchart.New(m.Ctx, m.title)), true
	}
	return nil, false
}

// View draws the visible part of the comparison.
func (m *Model) View() string {
	if !m.loaded {
		return m.Ctx.Theme.Muted.Render("reading the metrics of " + spec.Count(len(m.apps), "app") + "…")
	}
	return m.pager.View(m.Ctx.Width, m.Ctx.Height)
}

// Position is the scroll position for the status line.
func (m *Model) Position() string { return m.pager.Position(m.Ctx.Height) }
