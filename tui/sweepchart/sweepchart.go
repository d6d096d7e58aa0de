// Package sweepchart is the chart of a sweep: every app's curve of one metric on one
// set of axes, the legend naming each app by its swept values, with the rank chart's
// keys (next metric, log scale, smoothing, last N steps) and a table mode, one row per
// app sorted by the best value of the metric. An app whose metric went NaN or Inf, or
// is far above the sweep's median, is marked in both (engine/sweep's MarkAlarms, what
// `wick metrics --sweep` marks).
package sweepchart

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"

	"github.com/wick-dev/wick/engine/metrics"
	"github.com/wick-dev/wick/engine/spec"
	"github.com/wick-dev/wick/engine/sweep"
	"github.com/wick-dev/wick/themes"
	"github.com/wick-dev/wick/tui/appops"
	"github.com/wick-dev/wick/tui/chart"
	"github.com/wick-dev/wick/tui/common"
	"github.com/wick-dev/wick/tui/render"
	"github.com/wick-dev/wick/tui/widget"
)

// Kind is the sweep chart's kind of view.
const Kind common.Kind = "sweep-chart"

// The sweep chart's own actions; the metric keys are the wall's chart's.
const (
	ActTable      = "sweep-table"
	ActMetric     = "sweep-next-metric"
	ActLogScale   = "sweep-chart-log"
	ActSmooth     = "sweep-chart-smooth"
	ActChartRange = "sweep-chart-last-steps"
)

// readTimeout bounds one refresh (a listing and the new lines of each app).
const readTimeout = time.Minute

// readEvery is how often the new lines of running apps are read at most: a reading
// lists every app (as the app list does each second) and reads each running app's
// new lines; a curve moving every two seconds is live enough.
const readEvery = 2 * time.Second

// Actions are the sweep chart's rows of the action table.
func Actions() []common.Action {
	act := func(name common.ActionName, help string, keys []string, short bool) common.Action {
		return common.NewAction(name, help, keys, short, Kind)
	}
	rows := []common.Action{
		act(ActTable, "table of the apps, sorted by the best value / chart", []string{"t"}, true),
		act(ActMetric, "next metric", []string{"M"}, true),
		act(ActLogScale, "log scale on/off", []string{"L"}, false),
		act(ActSmooth, "smoothing (EMA) 0/0.6/0.9/0.99", []string{"E"}, false),
		act(ActChartRange, "last 10k/1k/100 steps/all", []string{"Z"}, false),
		act(appops.ActLogs, "table: logs of the app selected", []string{"l"}, false),
		act(appops.ActCancel, "table: cancel the app selected (an alarm's, to free its slot)", []string{"x"}, false),
		act(common.ActRefresh, "refresh", []string{"ctrl+r"}, false),
	}
	return append(rows, common.Moves(Kind)...)
}

// Model is the chart of one sweep.
type Model struct {
	common.Base
	id string // the sweep's id, or the title of a set of apps
	// of, when not nil, are the apps charted (a set the user marked), not a sweep's.
	of map[string]bool

	rd      *sweep.Reader // the reading's; never touched while a reading runs
	loading bool
	loaded  bool
	readAt  time.Time // when the last reading began (wall clock)
	snap    snapshot

	panel chart.Panel
	table bool
	cur   widget.Cursor // the app selected in the table, in its order

	// gen counts the readings; frame is the chart last drawn, for look. A frame of
	// 100 apps x 10k points takes a core 10-20 ms, and most frames (a tick, a key of
	// another view's) change nothing it shows.
	gen   int
	frame string
	drawn look
}

// look is what a chart frame depends on.
type look struct {
	gen   int
	panel chart.Panel
	w, h  int
	theme *themes.Theme // ctrl+t changes it
}

type readMsg struct {
	common.ViewID
	snap snapshot
}

// New returns the chart of the sweep id.
func New(ctx *common.Context, id string) *Model {
	return &Model{
		Base: common.NewBase(ctx, Kind), id: id,
		rd: sweep.NewReader(ctx.Alarms.Config()),
	}
}

// NewOf returns the chart of the apps handles (any apps, marked in the app list),
// titled title; each app's legend is its swept values when it is of a sweep, else its
// id.
func NewOf(ctx *common.Context, title string, handles []string) *Model {
	m := New(ctx, title)
	m.of = make(map[string]bool, len(handles))
	for _, h := range handles {
		m.of[h] = true
	}
	return m
}

// Title is the view's crumb.
func (m *Model) Title() string { return "chart " + m.id }

// Init reads the sweep's apps.
func (m *Model) Init() tea.Cmd { return m.refresh() }

// refresh reads the apps' new lines, unless a reading is under way.
func (m *Model) refresh() tea.Cmd {
	if m.loading {
		return nil
	}
	m.loading, m.readAt = true, time.Now()
	id, b, parent, rd := m.ID(), m.Ctx.Backend, m.Ctx.Ctx, m.rd
	keep := m.keep()
	return func() tea.Msg {
		ctx, cancel := context.WithTimeout(parent, readTimeout)
		defer cancel()
		return readMsg{ViewID: id, snap: read(ctx, rd, b, keep)}
	}
}

// keep says which listed apps the chart shows: those of its sweep, or of its set.
func (m *Model) keep() func(*spec.AppStatus) bool {
	if m.of != nil {
		of := m.of
		return func(a *spec.AppStatus) bool { return of[a.Handle] }
	}
	id := m.id
	return func(a *spec.AppStatus) bool { return a.Sweep != nil && a.Sweep.ID == id }
}

// Update takes readings and ticks (the next reading, while an app has not ended).
func (m *Model) Update(msg tea.Msg) tea.Cmd {
	switch msg := msg.(type) {
	case readMsg:
		m.loading, m.loaded = false, true
		m.snap = msg.snap
		m.gen++
	case common.TickMsg:
		if time.Since(m.readAt) < readEvery {
			return nil
		}
		for _, a := range m.snap.apps {
			if !a.State.Terminal() {
				return m.refresh()
			}
		}
		if !m.loaded {
			return m.refresh()
		}
	case appops.Done:
		return tea.Batch(msg.Notice(), m.refresh())
	case tea.MouseWheelMsg:
		if m.table {
			m.cur.Wheel(widget.WheelDelta(msg), len(m.snap.apps), m.tableHeight())
		}
	}
	return nil
}

// Do runs the chart's actions.
func (m *Model) Do(action common.ActionName) (tea.Cmd, bool) {
	if m.table && m.cur.Do(string(action), len(m.snap.apps), m.tableHeight()) {
		return nil, true
	}
	switch action {
	case appops.ActLogs, appops.ActCancel:
		rows := m.rows(m.panel.ChosenOf(m.snap.names)) // the table's order
		if !m.table || m.cur.Index >= len(rows) {
			return common.Notify("t shows the table, to select an app"), true
		}
		a := rows[m.cur.Index].app
		h, err := spec.ParseHandle(a.Handle)
		if err != nil {
			return common.NotifyErr(err), true
		}
		if a.State == spec.Queued && action == appops.ActLogs {
			return common.Notify(h.AppID + " is queued in its sweep: no logs until it starts"), true
		}
		return appops.Act(m.Ctx, m.ID(), action, h, a.State)
	case ActTable:
		m.table = !m.table
	case ActMetric:
		m.panel.NextOf(m.snap.names, 1)
	case ActLogScale:
		m.panel.ToggleLog()
	case ActSmooth:
		m.panel.CycleSmooth()
	case ActChartRange:
		m.panel.CycleZoom()
	case common.ActRefresh:
		return m.refresh(), true
	default:
		return nil, false
	}
	return nil, true
}

// row is one app as drawn: its status, its label (the swept values) and its run, the
// run's Alarm set for the chosen metric.
type row struct {
	app   *spec.AppStatus
	label string
	run   sweep.Run
}

// rows are the apps sorted by the best value of metric (the best first, apps without
// it last in the grid's order), each marked when its metric went NaN or Inf or is far
// above the sweep's median.
func (m *Model) rows(metric string) []row {
	rows := make([]row, len(m.snap.apps))
	runs := make([]*sweep.Run, len(rows))
	for i := range m.snap.apps {
		a := &m.snap.apps[i]
		rows[i] = row{app: a}
		if a.Sweep != nil {
			rows[i].label = a.Sweep.Label()
		}
		if rows[i].label == "" {
			rows[i].label = appID(a.Handle)
		}
		if r := m.snap.runs[a.Handle]; r != nil {
			rows[i].run = *r // a copy: the alarm is the chosen metric's
		}
		rows[i].run.Alarm = ""
		rows[i].run.Handle = strconv.Itoa(i) // to find the row back after the sort
		runs[i] = &rows[i].run
	}
	if metric == "" {
		return rows
	}
	factor := m.rd.Config().Divergence
	if factor == 0 {
		factor = metrics.DefaultDivergence
	}
	sweep.Sort(runs, metric)
	sweep.MarkAlarms(runs, metric, factor)
	sorted := make([]row, len(rows))
	for i, r := range runs {
		k, _ := strconv.Atoi(r.Handle)
		sorted[i] = rows[k]
		sorted[i].run = *r
	}
	return sorted
}

// headerLines are the lines above the chart or the table: the sweep's line and the
// metric's.
const headerLines = 2

func (m *Model) rowsHeight() int { return max(1, m.Ctx.Height-headerLines-len(m.snap.errs)) }

// tableHeight is the table's rows shown: less its title and its header.
func (m *Model) tableHeight() int { return max(1, m.rowsHeight()-2) }

// writeTable writes the table's title and header, then the rows in view, the one
// selected marked (▸) and highlighted.
func (m *Model) writeTable(b *strings.Builder, rows []row, metric string, w int) {
	t := m.Ctx.Theme
	lines := m.tableLines(rows, metric)
	head := min(2, len(lines))
	for _, l := range lines[:head] {
		b.WriteString(fit("  "+l, w) + "\n")
	}
	body := lines[head:]
	height := m.tableHeight()
	m.cur.Clamp(len(body), height)
	for i := m.cur.Offset; i < min(len(body), m.cur.Offset+height); i++ {
		if i > m.cur.Offset {
			b.WriteByte('\n')
		}
		if i == m.cur.Index {
			b.WriteString(t.Selected.Render(widget.PadRight(fit("▸ "+ansi.Strip(body[i]), w), w)))
			continue
		}
		b.WriteString(fit("  "+body[i], w))
	}
}

// View draws the summary line, then the chart or the table.
func (m *Model) View() string {
	t := m.Ctx.Theme
	w, h := m.Ctx.Width, m.Ctx.Height
	if !m.loaded {
		return t.Muted.Render("reading the metrics of " + m.id + "…")
	}
	var b strings.Builder
	b.WriteString(fit(m.summary(), w))
	for _, err := range m.snap.errs {
		b.WriteString("\n" + t.Fail.Render(fit(err.Error(), w)))
		h--
	}
	b.WriteByte('\n')
	name := m.panel.ChosenOf(m.snap.names)
	if len(m.snap.apps) == 0 {
		b.WriteString(t.Muted.Render("no app of " + m.id + " is listed (deleted?)"))
		return b.String()
	}
	if name == "" {
		b.WriteString(t.Muted.Render(`no metrics in these apps' logs yet: lines like "step 20 loss 2.84", "loss=2.84" or {"loss": 2.84} are drawn here`))
		return b.String()
	}
	rows := m.rows(name)
	alarms := 0
	for _, r := range rows {
		if r.run.Alarm != "" {
			alarms++
		}
	}
	head := m.panel.Header(name, len(m.snap.names)-1)
	if alarms > 0 {
		head += "  " + t.Warning.Render(fmt.Sprintf("⚠ %s", spec.Count(alarms, "alarm")))
	}
	b.WriteString(fit(head, w) + "\n")
	if m.table {
		m.writeTable(&b, rows, name, w)
		return b.String()
	}
	if lk := (look{m.gen, m.panel, w, h, t}); lk != m.drawn || m.frame == "" {
		m.frame = Draw(rows2series(rows, name), m.panel.Options(w, h-headerLines, func(s string) string { return t.Muted.Render(s) }), t.Prefix)
		m.drawn = lk
	}
	b.WriteString(m.frame)
	return b.String()
}

// summary is the first line: the sweep, its apps and what they do.
func (m *Model) summary() string {
	counts := map[spec.AppState]int{}
	for _, a := range m.snap.apps {
		counts[a.State]++
	}
	var parts []string
	for _, s := range []spec.AppState{spec.Running, spec.Pending, spec.Submitted, spec.Queued, spec.Succeeded, spec.Failed, spec.Cancelled, spec.UnknownState} {
		if counts[s] > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", counts[s], strings.ToLower(s.String())))
		}
	}
	mode := "t: table"
	if m.table {
		mode = "t: chart"
	}
	what := "sweep " + m.id
	if m.of != nil {
		what = m.id
	}
	return fmt.Sprintf("%s · %s: %s · %s", what, spec.Count(len(m.snap.apps), "app"), strings.Join(parts, ", "), mode)
}

// Series is one app's curve as the overlay draws it.
type Series struct {
	// Label is the app's swept values ("lr=0.1 bs=32").
	Label  string
	Points []metrics.Point
	// Alarm marks the app in the legend.
	Alarm bool
}

// rows2series are the curves of the apps that have values of metric (the legend has
// no room for the others: the table lists them).
func rows2series(rows []row, metric string) []Series {
	out := make([]Series, 0, len(rows))
	for _, r := range rows {
		if len(r.run.Curve[metric]) == 0 && r.run.Alarm == "" {
			continue
		}
		out = append(out, Series{Label: r.label, Points: r.run.Curve[metric], Alarm: r.run.Alarm != ""})
	}
	return out
}

// Draw draws the overlay: every app's curve on one set of axes (chart.Render, the rank
// chart's drawing), an app under an alarm marked "⚠" in the legend, which lists the
// apps in the order given (the best first).
func Draw(series []Series, o chart.Options, style func(i int, s string) string) string {
	cs := make([]chart.Series, len(series))
	for i, s := range series {
		label := s.Label
		if s.Alarm {
			label = "⚠ " + label
		}
		cs[i] = chart.Series{Label: label, Points: s.Points}
	}
	o.Style = style
	return chart.Render(cs, o)
}

// tableLines are the table of the apps, as `wick metrics --sweep -m METRIC` prints it
// (render.Compare): a title saying the order, then one row per app with its swept
// values, its state, the metric's last value, best value and the step of the best,
// and why it stands out; sorted by the best.
func (m *Model) tableLines(rows []row, metric string) []string {
	var names []string
	for _, a := range m.snap.apps {
		if a.Sweep != nil && len(a.Sweep.Names) > len(names) {
			names = a.Sweep.Names
		}
	}
	cr := make([]render.CompareRow, len(rows))
	for i := range rows {
		r := &rows[i]
		cr[i] = render.CompareRow{AppID: appID(r.app.Handle), State: r.app.State, Run: &r.run}
		if r.app.Sweep != nil {
			cr[i].Values = r.app.Sweep.Values
		}
	}
	var b strings.Builder
	if err := render.Compare(&b, cr, names, []string{metric}, metric, m.Ctx.Theme); err != nil {
		b.WriteString(m.Ctx.Theme.Error(err.Error()))
	}
	return strings.Split(strings.TrimRight(b.String(), "\n"), "\n")
}

// appID is the app id of a handle (the handle itself if it does not parse).
func appID(handle string) string {
	if h, err := spec.ParseHandle(handle); err == nil {
		return h.AppID
	}
	return handle
}

// fit cuts s to w cells.
func fit(s string, w int) string { return ansi.Truncate(s, max(w, 0), "…") }
