// Package compare is the compare view: the apps of a sweep side by side, one row per
// app with its swept values, its state and each metric's last and best value, sorted
// by the best loss, as `wick metrics --sweep` prints them (render.Compare); refreshed
// on each tick while an app runs.
package compare

import (
	"context"
	"slices"
	"strconv"
	"strings"
	"time"

	tea "charm.land/bubbletea/v2"

	"github.com/wick-dev/wick/engine/metrics"
	"github.com/wick-dev/wick/engine/spec"
	"github.com/wick-dev/wick/engine/sweep"
	"github.com/wick-dev/wick/themes"
	"github.com/wick-dev/wick/tui/chart"
	"github.com/wick-dev/wick/tui/common"
	"github.com/wick-dev/wick/tui/render"
	"github.com/wick-dev/wick/tui/widget"
)

// Kind is the compare view's kind of view.
const Kind common.Kind = "compare"

// readTimeout bounds one reading of every app's metrics.
const readTimeout = time.Minute

// refreshEvery is how often the apps are read again while one runs: reading every
// app's logs is heavier than a status.
const refreshEvery = 2 * time.Second

// The compare view's own actions: the keys of the log wall's rank chart.
const (
	ActChart    = "compare-chart"
	ActMetric   = "compare-metric"
	ActLogScale = "compare-log"
	ActSmooth   = "compare-smooth"
	ActRange    = "compare-range"
)

// Actions are the compare view's rows of the action table.
func Actions() []common.Action {
	act := func(name common.ActionName, help string, keys []string, short bool) common.Action {
		return common.NewAction(name, help, keys, short, Kind)
	}
	rows := []common.Action{
		act(ActChart, "chart: every app's curve of a metric (legend: its values) / the table", []string{"p"}, true),
		act(ActMetric, "chart: next metric", []string{"M"}, false),
		act(ActLogScale, "chart: log scale on/off", []string{"L"}, false),
		act(ActSmooth, "chart: smoothing (EMA) 0/0.6/0.9/0.99", []string{"E"}, false),
		act(ActRange, "chart: last 10k/1k/100 steps/all", []string{"Z"}, false),
		act(common.ActRefresh, "refresh", []string{"ctrl+r"}, false),
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
	title   string
	names   []string
	apps    []App
	pager   widget.Pager
	loaded  bool
	loading bool
	at      time.Time
	// The last reading: the runs, best first, with their legends, and the metrics.
	runs    []*sweep.Run
	labels  []string
	metrics []string
	// chart shows the chart (of metrics[metric]) instead of the table.
	chart  bool
	metric int
	chosen bool // the metric was chosen (M), not the loss by default
	panel  chart.Panel
}

// readMsg carries a rendering of the comparison, made off the UI loop.
type readMsg struct {
	common.ViewID
	lines   []string
	states  []spec.AppState
	runs    []*sweep.Run
	labels  []string
	metrics []string
}

// New returns the compare view of apps, whose swept names are names.
func New(ctx *common.Context, title string, names []string, apps []App) *Model {
	return &Model{Base: common.NewBase(ctx, Kind), title: title, names: names, apps: apps}
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
	id, b, parent, theme := m.ID(), m.Ctx.Backend, m.Ctx.Ctx, m.Ctx.Theme
	apps, names := append([]App(nil), m.apps...), m.names
	return func() tea.Msg {
		ctx, cancel := context.WithTimeout(parent, readTimeout)
		defer cancel()
		msg := read(ctx, b, apps, names, theme)
		msg.ViewID = id
		msg.states = make([]spec.AppState, len(apps))
		for i := range apps {
			msg.states[i] = apps[i].State
		}
		return msg
	}
}

// read reads the apps' states and metrics and renders the table, best first.
func read(ctx context.Context, b common.Backend, apps []App, names []string, theme *themes.Theme) readMsg {
	hs := make([]spec.Handle, len(apps))
	readIt := make([]bool, len(apps))
	for i := range apps {
		if d, err := b.Describe(ctx, apps[i].Handle); err == nil {
			apps[i].State = d.Status.State
		}
		hs[i], readIt[i] = apps[i].Handle, apps[i].State != spec.Queued
	}
	runs := sweep.ReadRuns(ctx, b, hs, readIt, metrics.DefaultConfig(), nil)
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
	labels := make([]string, len(runs))
	for i, r := range runs {
		rows[i] = byRun[r]
		labels[i] = label(names, rows[i].Values, rows[i].AppID)
	}
	var sb strings.Builder
	if err := render.Compare(&sb, rows, names, sweep.Names(runs), sortBy, theme); err != nil {
		sb.WriteString(theme.Error(err.Error()))
	}
	if sortBy == "" {
		sb.WriteString("\nno metrics in these apps' logs yet")
	}
	return readMsg{lines: strings.Split(strings.TrimRight(sb.String(), "\n"), "\n"), runs: runs, labels: labels, metrics: sweep.Names(runs)}
}

// label is an app's legend in the chart: its swept values, else its id.
func label(names []string, values map[string]string, appID string) string {
	if len(values) == 0 {
		return appID
	}
	parts := make([]string, 0, len(names))
	for _, n := range names {
		parts = append(parts, n+"="+values[n])
	}
	return strings.Join(parts, " ")
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
		m.runs, m.labels, m.metrics = msg.runs, msg.labels, msg.metrics
		if !m.chosen {
			// The chart starts on the loss, as the table is sorted by it.
			m.metric = max(0, slices.Index(m.metrics, sweep.Headline(m.runs)))
		}
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
		m.chart = !m.chart
	case ActMetric:
		if len(m.metrics) > 0 {
			m.metric = (m.metric + 1) % len(m.metrics)
			m.chosen = true
		}
	case ActLogScale:
		m.panel.ToggleLog()
	case ActSmooth:
		m.panel.CycleSmooth()
	case ActRange:
		m.panel.CycleZoom()
	default:
		return nil, false
	}
	return nil, true
}

// chartView draws every app's curve of the chosen metric, one color and one legend
// entry (its values) per app, best first.
func (m *Model) chartView() string {
	t := m.Ctx.Theme
	w, h := m.Ctx.Width, m.Ctx.Height
	if len(m.metrics) == 0 {
		return t.Muted.Render("no metrics in these apps' logs yet")
	}
	name := m.metrics[m.metric%len(m.metrics)]
	series := make([]chart.Series, 0, len(m.runs))
	for i, r := range m.runs {
		if pts := r.Curve[name]; len(pts) > 0 {
			series = append(series, chart.Series{Label: m.labels[i], Points: pts})
		}
	}
	head := []string{name, spec.Count(len(series), "app")}
	if m.panel.Log {
		head = append(head, "log scale")
	}
	if s := m.panel.Smooth(); s > 0 {
		head = append(head, "smoothed "+strconv.FormatFloat(s, 'g', -1, 64))
	}
	if n := m.panel.LastN(); n > 0 {
		head = append(head, "last "+strconv.FormatInt(n, 10)+" steps")
	}
	if len(m.metrics) > 1 {
		head = append(head, "M: next metric")
	}
	o := chart.Options{Width: w, Height: h - 1, Log: m.panel.Log, Smooth: m.panel.Smooth(), LastN: m.panel.LastN(),
		Style: func(i int, s string) string { return t.Prefix(i, s) },
		Dim:   func(s string) string { return t.Muted.Render(s) }}
	return strings.Join(head, " · ") + "\n" + chart.Render(series, o)
}

// View draws the visible part of the comparison.
func (m *Model) View() string {
	if !m.loaded {
		return m.Ctx.Theme.Muted.Render("reading the metrics of " + spec.Count(len(m.apps), "app") + "…")
	}
	if m.chart {
		return m.chartView()
	}
	return m.pager.View(m.Ctx.Width, m.Ctx.Height)
}

// Position is the scroll position for the status line.
func (m *Model) Position() string { return m.pager.Position(m.Ctx.Height) }
