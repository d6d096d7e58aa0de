package wall

import (
	bkey "charm.land/bubbles/v2/key"
	"slices"
	"sync"
	"time"

	tea "charm.land/bubbletea/v2"

	"github.com/wick-dev/wick/engine/metrics"
	"github.com/wick-dev/wick/engine/ranks"
	"github.com/wick-dev/wick/engine/sched"
	"github.com/wick-dev/wick/engine/spec"
	"github.com/wick-dev/wick/tui/chart"
	"github.com/wick-dev/wick/tui/common"
)

// The wall's metric actions (see package tui/chart).
const (
	ActChart      = "chart"
	ActMetric     = "next-metric"
	ActLogScale   = "chart-log"
	ActSmooth     = "chart-smooth"
	ActChartRange = "chart-last-steps"
)

func metricActions() []common.Action {
	act := func(name common.ActionName, help string, keys []string, short bool) common.Action {
		return common.NewAction(name, help, keys, short, Kind)
	}
	return []common.Action{
		act(ActChart, "chart of a metric, every rank", []string{"p"}, false),
		act(ActMetric, "next metric (chart, pane titles)", []string{"M"}, false),
		act(ActLogScale, "chart: log scale on/off", []string{"L"}, false),
		act(ActSmooth, "chart: smoothing (EMA) 0/0.6/0.9/0.99", []string{"E"}, false),
		act(ActChartRange, "chart: last 10k/1k/100 steps/all", []string{"Z"}, false),
	}
}

// metricState is what the wall knows of the numbers in its lines: the store, and the
// chart's state. The readers extract values off the UI loop and add them to the store
// under mu, observeLines at a time; the UI reads it under mu. At 8 x 10k lines/s the UI
// loop would otherwise spend a core-second a second on numbers.
type metricState struct {
	mu *sync.Mutex
	// scratch holds the readers' buffers of values (*observed) between their chunks:
	// a buffer is in use only while a reader extracts a chunk, so a few serve them all
	// (1,024 readers each keeping its own held 8.5 MB).
	scratch *sync.Pool
	store   *metrics.Store // guarded by mu; nil: metrics off
	panel   chart.Panel
	chart   bool // the chart replaces the panes
}

// observeLines is how many lines' values a reader adds to the store under one hold of
// the lock: its buffers hold at most that many, whatever its chunks (1,024 readers
// whose buffers grew to a chunk of 512 lines once kept 150 MB; at 32 lines, 9 KB a
// buffer, they held 7-17 MB, the pool keeping up to two for each reader blocked on
// the lock). Eight lines a hold are 2,500 holds a second at 1,024 x 20 lines/s.
const observeLines = 8

// observed is a reader's buffer of values: the lines' and, flat, their samples.
type observed struct {
	flat  []metrics.Sample
	items []observedLine
}

// observedLine is a line's values: flat[lo:hi] of the reader's buffer.
type observedLine struct {
	rank   metrics.Rank
	t      time.Time
	info   metrics.LineInfo // the line's step, context, epoch
	lo, hi int
}

func newMetricState(o Options) metricState {
	// The pool is emptied by the garbage collector: a buffer starts at its full size
	// rather than growing again after each collection.
	scratch := &sync.Pool{New: func() any {
		return &observed{flat: make([]metrics.Sample, 0, 4*observeLines), items: make([]observedLine, 0, observeLines)}
	}}
	if o.NoMetrics {
		return metricState{mu: &sync.Mutex{}, scratch: scratch}
	}
	cfg := metrics.DefaultConfig()
	if o.Metrics != nil {
		cfg = *o.Metrics
	}
	return metricState{mu: &sync.Mutex{}, scratch: scratch, store: newWallStore(cfg)}
}

// heldPoints is the most points the wall's series keep together (6 MiB), as
// DefaultHeldLines bounds its lines: a series keeps metrics.MaxPoints while the
// series are few (64, 16 replicas of four metrics), down to metrics.MinSeriesPoints
// each (two a column of a 256-column chart) at the store's 512 series, where 4,096
// each held 48 MiB of a 1,024-replica wall.
const heldPoints = 256 << 10

// newWallStore is the wall's store of values, its points under heldPoints.
func newWallStore(cfg metrics.Config) *metrics.Store {
	st := metrics.NewStore(cfg)
	st.SetPointBudget(heldPoints)
	return st
}

// reset forgets every value (the wall reads the logs again).
func (s *metricState) reset() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.store != nil {
		s.store = newWallStore(s.store.Extractor().Config())
	}
}

// observer returns what a reader calls with each chunk of its lines, or nil when
// metrics are off. Each reader has its own: it extracts the values outside the lock
// and adds them under it, to the store of the time it was made (a reset store takes no
// late chunk of the readers it replaced). node, when set, is the reader's own tracker
// of its torchrun node: a line where torchrun's tee glued several workers' lines is
// read as each of them, each its rank's (ranks.Node.Split).
func (s *metricState) observer(node *ranks.Node) func([]sched.Line) {
	s.mu.Lock()
	st := s.store
	s.mu.Unlock()
	if st == nil {
		return nil
	}
	ext := st.Extractor()
	// p is the reader's own: it keeps what a line says for the next ones (a header
	// of columns).
	var p metrics.Parsed
	add := func(b *observed) bool {
		s.mu.Lock()
		defer s.mu.Unlock()
		if s.store != st {
			return false
		}
		for _, it := range b.items {
			q := metrics.Parsed{Samples: b.flat[it.lo:it.hi], LineInfo: it.info}
			st.AddLine(it.rank, it.t, &q)
		}
		return true
	}
	return func(lines []sched.Line) {
		b := s.scratch.Get().(*observed)
		defer s.scratch.Put(b)
		b.flat, b.items = b.flat[:0], b.items[:0]
		for i := range lines {
			l := &lines[i]
			if l.Pending {
				continue
			}
			var parts []sched.Line
			if node != nil {
				parts = node.Split(*l)
			}
			if parts == nil {
				b.extract(ext, &p, l)
			}
			for j := range parts {
				b.extract(ext, &p, &parts[j])
			}
			if len(b.items) >= observeLines {
				if !add(b) {
					return
				}
				b.flat, b.items = b.flat[:0], b.items[:0]
			}
		}
		if len(b.items) > 0 {
			add(b)
		}
	}
}

// extract reads the values of the committed line l with p into b.
func (b *observed) extract(ext *metrics.Extractor, p *metrics.Parsed, l *sched.Line) {
	ext.Extract(l.Text, p)
	if !p.Telling() {
		return
	}
	rank := metrics.Rank{Role: l.Role, Replica: l.Replica, Local: p.Local}
	// Each drawing of a bar with values is a point, as Store.Add reads it.
	p.Drawings(func(info metrics.LineInfo, samples []metrics.Sample) {
		lo := len(b.flat)
		b.flat = append(b.flat, samples...)
		b.items = append(b.items, observedLine{rank, l.Time, info, lo, len(b.flat)})
	})
	lo := len(b.flat)
	b.flat = append(b.flat, p.Samples...)
	b.items = append(b.items, observedLine{rank, l.Time, p.LineInfo, lo, len(b.flat)})
}

// MetricAlarms returns the app's handle and the number of metric alarms (NaN, Inf, a
// departing rank) its lines have raised so far: the app list marks the app with them.
func (m *Model) MetricAlarms() (spec.Handle, int) {
	m.mx.mu.Lock()
	defer m.mx.mu.Unlock()
	if m.mx.store == nil {
		return m.h, 0
	}
	return m.h, len(m.mx.store.Alarms())
}

// chartHelp is the chart's keys, for the help bar while the chart is shown (they were
// only in ?): the metric, log scale, smoothing, range, and p or esc to close it.
func (m *Model) chartHelp() []bkey.Binding {
	s := &m.mx
	s.mu.Lock()
	open := s.store != nil && s.chart
	s.mu.Unlock()
	if !open || m.Ctx.Actions == nil {
		return nil
	}
	var out []bkey.Binding
	for _, a := range []struct {
		name common.ActionName
		desc string
	}{{ActMetric, "metric"}, {ActLogScale, "log"}, {ActSmooth, "smooth"}, {ActChartRange, "range"}, {ActChart, "close chart"}} {
		if b, ok := m.Ctx.Actions.Brief(a.name, Kind, a.desc); ok {
			out = append(out, b)
		}
	}
	return out
}

// metricAction answers the metric actions, and esc while the chart is shown; ok is
// false for the others.
func (m *Model) metricAction(action common.ActionName) (cmd tea.Cmd, ok bool) {
	s := &m.mx
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.store == nil {
		return nil, false
	}
	switch action {
	case common.ActBack:
		if !s.chart {
			return nil, false
		}
		s.chart = false
	case ActChart:
		s.chart = !s.chart
	case ActMetric:
		s.panel.NextMetric(s.store, 1)
	case ActLogScale:
		s.panel.ToggleLog()
	case ActSmooth:
		s.panel.CycleSmooth()
	case ActChartRange:
		s.panel.CycleZoom()
	default:
		return nil, false
	}
	return nil, true
}

// drawChart draws the chart of the chosen metric in W x H, a rank in its pane's color.
func (m *Model) drawChart(W, H int) []string {
	t := m.Ctx.Theme
	sty := chart.Styles{
		Rank: func(r metrics.Rank, s string) string { return t.Prefix(m.paneOfRank(r), s) },
		Label: func(r metrics.Rank) string {
			if i := m.paneOfRank(r); i < len(m.panes) {
				if pr, _ := m.metricRank(m.panes[i]); pr == r {
					return m.panes[i].name()
				}
			}
			return r.String()
		},
		Dim:  func(s string) string { return t.Muted.Render(s) },
		Warn: func(s string) string { return t.Warning.Render(s) },
	}
	m.mx.mu.Lock()
	defer m.mx.mu.Unlock()
	if m.mx.store == nil {
		return splitLines("", H)
	}
	return splitLines(m.mx.panel.View(m.mx.store, W, H, sty), H)
}

// metricBadge is pane i's metric in its title: a sparkline and the last value, with
// an alarm mark.
func (m *Model) metricBadge(i, w int) string {
	s := &m.mx
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.store == nil {
		return ""
	}
	ser, alarm := m.paneSeries(m.panes[i])
	b := chart.Badge(ser, alarm, w)
	if alarm {
		return m.Ctx.Theme.Warning.Render(b)
	}
	return m.Ctx.Theme.Muted.Render(b)
}

// metricSummary is pane i's last and best value in the end summary.
func (m *Model) metricSummary(i int) string {
	s := &m.mx
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.store == nil {
		return ""
	}
	ser, _ := m.paneSeries(m.panes[i])
	return chart.Summary(ser)
}

// paneSeries is the series of the chosen metric a pane shows (nil: none) and whether
// it is under an alarm: a rank's pane (or a node's beside them) shows its own series
// and alarms only; a replica's pane whose lines carry torchrun's prefixes shows its
// first worker's values and every alarm of the replica. Called under mx.mu.
func (m *Model) paneSeries(p *pane) (*metrics.Series, bool) {
	st := m.mx.store
	r, own := m.metricRank(p)
	var ser *metrics.Series
	for _, s := range st.Series(m.mx.panel.Chosen(st)) {
		if s.Rank == r {
			ser = s
			break
		}
		if ser == nil && !own && s.Rank.Role == r.Role && s.Rank.Replica == r.Replica {
			ser = s
		}
	}
	if ser == nil {
		return nil, false
	}
	alarms := st.AlarmsOf(p.role, p.k)
	if own {
		return ser, slices.ContainsFunc(alarms, func(a metrics.Alarm) bool { return a.Rank == r })
	}
	return ser, len(alarms) > 0
}

// metricRank is the metrics.Rank of a pane's values: a torchrun worker's local rank on
// the node that runs it (its global rank less the ranks of the nodes before it, which
// torchrun numbers in group rank order: the node is the one its rendezvous or its
// lines put the pane on, see place), else the replica's own lines. own reports whether
// the pane shows that series alone: a rank's pane, or a torchrun node's beside the
// panes of its ranks. A replica's pane whose lines carry torchrun's prefixes (a world
// too big for a pane per rank) shows its first worker's values instead.
func (m *Model) metricRank(p *pane) (r metrics.Rank, own bool) {
	r = metrics.Rank{Role: p.role, Replica: p.k, Local: -1}
	if p.rank >= 0 && p.nproc > 0 {
		r.Local = p.rank % p.nproc
	}
	return r, p.nproc > 0
}

// paneOfRank is the pane that shows a rank's lines (for its color and name), or the
// replica's first pane.
func (m *Model) paneOfRank(r metrics.Rank) int {
	first := -1
	for i, p := range m.panes {
		if pr, _ := m.metricRank(p); pr == r {
			return i
		}
		if first < 0 && p.role == r.Role && p.k == r.Replica {
			first = i
		}
	}
	return max(first, 0)
}

func splitLines(s string, h int) []string {
	out := make([]string, 0, h)
	start := 0
	for i := 0; i < len(s) && len(out) < h; i++ {
		if s[i] == '\n' {
			out = append(out, s[start:i])
			start = i + 1
		}
	}
	if len(out) < h {
		out = append(out, s[start:])
	}
	for len(out) < h {
		out = append(out, "")
	}
	return out
}
