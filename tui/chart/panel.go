package chart

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/wick-dev/wick/engine/metrics"
)

// SmoothSteps are the EMA weights the chart's smoothing key cycles through.
var SmoothSteps = []float64{0, 0.6, 0.9, 0.99}

// ZoomSteps are the "last N steps" the chart's zoom key cycles through (0: all).
var ZoomSteps = []int64{0, 10000, 1000, 100}

// Panel is the state of a metric chart over a metrics.Store: the metric shown and how.
// The zero value shows the default metric (loss when there is one) on a linear scale,
// unsmoothed, whole. A view holds one and feeds it keys; it draws with View.
type Panel struct {
	// Metric is the metric chosen; "" means the default.
	Metric string
	Log    bool
	smooth int // index in SmoothSteps
	zoom   int // index in ZoomSteps
}

// Chosen returns the metric shown: Metric if the store has it, else the store's
// headline (the training loss when there is one; never a setting), "" when there is
// none.
func (p *Panel) Chosen(st *metrics.Store) string {
	if p.Metric != "" && slices.Contains(st.AllNames(), p.Metric) {
		return p.Metric
	}
	return metrics.Headline(st)
}

// NextMetric moves to the next (dir 1) or previous (dir -1) metric of the store.
func (p *Panel) NextMetric(st *metrics.Store, dir int) { p.next(st.Names(), p.Chosen(st), dir) }

// ChosenOf is Chosen over the metric names of several stores (a sweep's apps).
func (p *Panel) ChosenOf(names []string) string {
	if p.Metric != "" && slices.Contains(names, p.Metric) {
		return p.Metric
	}
	return metrics.HeadlineOf(names)
}

// NextOf is NextMetric over the metric names of several stores.
func (p *Panel) NextOf(names []string, dir int) { p.next(names, p.ChosenOf(names), dir) }

func (p *Panel) next(names []string, cur string, dir int) {
	if len(names) == 0 {
		return
	}
	i := slices.Index(names, cur)
	p.Metric = names[((i+dir)%len(names)+len(names))%len(names)]
}

// ToggleLog switches the y axis between linear and log scale.
func (p *Panel) ToggleLog() { p.Log = !p.Log }

// CycleSmooth moves to the next smoothing weight.
func (p *Panel) CycleSmooth() { p.smooth = (p.smooth + 1) % len(SmoothSteps) }

// CycleZoom moves to the next "last N steps".
func (p *Panel) CycleZoom() { p.zoom = (p.zoom + 1) % len(ZoomSteps) }

// Smooth is the EMA weight in use.
func (p *Panel) Smooth() float64 { return SmoothSteps[p.smooth%len(SmoothSteps)] }

// LastN is the zoom in use (0: every step).
func (p *Panel) LastN() int64 { return ZoomSteps[p.zoom%len(ZoomSteps)] }

// Styles color a panel: the color of a rank's series, and dim text.
type Styles struct {
	Rank func(r metrics.Rank, s string) string
	// Label names a rank in the legend (nil: Rank.String).
	Label func(r metrics.Rank) string
	Dim   func(s string) string
	Warn  func(s string) string
}

// View draws the chosen metric of every rank in w x h: a header line (the metric, its
// options and the keys), then the chart.
func (p *Panel) View(st *metrics.Store, w, h int, sty Styles) string {
	dim := sty.Dim
	if dim == nil {
		dim = func(s string) string { return s }
	}
	name := p.Chosen(st)
	if name == "" {
		return fit(dim("no metrics in these logs yet: lines like \"step 20 loss 2.84\", \"loss=2.84\" or {\"loss\": 2.84} are drawn here"), w, h)
	}
	line := p.Header(name, len(st.Names())-1)
	if n := len(st.Alarms()); n > 0 && sty.Warn != nil {
		line += "  " + sty.Warn(fmt.Sprintf("⚠ %d alarms", n))
	}
	sers := st.Series(name)
	series := make([]Series, len(sers))
	for i, s := range sers {
		label := s.Rank.String()
		if sty.Label != nil {
			label = sty.Label(s.Rank)
		}
		series[i] = Series{Label: label, Points: s.Points()}
	}
	o := p.Options(w, h-1, sty.Dim)
	if sty.Rank != nil {
		o.Style = func(i int, s string) string { return sty.Rank(sers[i].Rank, s) }
	}
	return fit(line, w, 1) + "\n" + Render(series, o)
}

// Header is the line above the chart of metric name: the metric, the panel's options
// in use, and how many other metrics M goes to.
func (p *Panel) Header(name string, others int) string {
	head := []string{name}
	if p.Log {
		head = append(head, "log scale")
	}
	if s := p.Smooth(); s > 0 {
		head = append(head, "smoothed "+strconv.FormatFloat(s, 'g', -1, 64))
	}
	if n := p.LastN(); n > 0 {
		head = append(head, "last "+strconv.FormatInt(n, 10)+" steps")
	}
	if others > 0 {
		head = append(head, fmt.Sprintf("%d more %s (M)", others, map[bool]string{true: "metric", false: "metrics"}[others == 1]))
	}
	return strings.Join(head, " · ")
}

// Options are the chart options of the panel's settings, for a chart of w x h.
func (p *Panel) Options(w, h int, dim func(string) string) Options {
	return Options{Width: w, Height: h, Log: p.Log, Smooth: p.Smooth(), LastN: p.LastN(), Dim: dim}
}

// Badge is a pane title's metric: "loss ▇▅▃▂▁ 0.412", with "⚠" when alarm is set, in at
// most w cells ("" without a series).
func Badge(ser *metrics.Series, alarm bool, w int) string {
	if ser == nil || w < 8 {
		return ""
	}
	mark := ""
	if alarm {
		mark = " ⚠"
	}
	last := short(ser.Last.Value)
	room := w - len(ser.Name) - len(last) - 2 - len([]rune(mark))
	spark := ""
	if room >= 4 {
		spark = Sparkline(ser.Points(), min(room, 16)) + " "
	}
	return ser.Name + " " + spark + last + mark
}

// Summary is a replica's line in an end summary: "loss last 0.412 best 0.398 @ step
// 1200" ("" without a series).
func Summary(ser *metrics.Series) string {
	if ser == nil {
		return ""
	}
	s := fmt.Sprintf("%s last %s", ser.Name, short(ser.Last.Value))
	if !math.IsNaN(ser.Best.Value) {
		s += " best " + short(ser.Best.Value)
		if ser.Best.Step >= 0 {
			s += " @ step " + strconv.FormatInt(ser.Best.Step, 10)
		}
	}
	return s
}
