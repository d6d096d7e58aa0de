package sweep

import (
	"cmp"
	"context"
	"fmt"
	"math"
	"slices"
	"sync"
	"time"

	"github.com/wick-dev/wick/engine/metrics"
	"github.com/wick-dev/wick/engine/spec"
)

// Stat is one metric of one run: its value is defined once (Of says how) and the
// same in the table, the chart and --json. When every rank logs the metric at the
// same steps it is the mean over the ranks at each step; otherwise it is rank 0's
// series (the lowest replica and local rank that logs it at steps: a node's progress
// bar without steps is no rank's curve). Last is that value's last point; Best its
// best (the lowest for a loss, the highest otherwise; see metrics.LowerIsBetter), and
// the step of Best is where that value was best. Both are read off the curve, whose
// points past metrics.MaxPoints are averages of neighbouring steps.
type Stat struct {
	Count int64
	Last  metrics.Point
	Best  metrics.Point // Value NaN when no value was finite
	// Of says what the value is: "trainer/0:0" (that rank's series), or "mean of 4
	// ranks".
	Of string
	// NonFinite is the first NaN or Inf value seen, when there was one.
	NonFinite *metrics.Alarm
}

// Run is one app of a comparison: its metrics, and what is alarming about them.
type Run struct {
	Handle string
	Stats  map[string]*Stat
	// Curve is each metric's value at each step (Stat), for comparisons at a step and
	// the chart.
	Curve map[string][]metrics.Point
	// Alarm says why the run stands out in the sweep (NaN, far above the median), or "".
	Alarm string
	// Names are its metrics in order of first appearance; Headline the one shown
	// first (the loss).
	Names    []string
	Headline string
}

// RunOf summarizes the metrics a store read of one app.
func RunOf(handle string, s *metrics.Store) *Run {
	r := &Run{Handle: handle, Stats: map[string]*Stat{}, Curve: map[string][]metrics.Point{}, Names: s.Names(), Headline: metrics.Headline(s)}
	for _, sum := range s.Summaries() {
		if sum.Setting {
			continue
		}
		st, curve := valueOf(s.Series(sum.Name), metrics.LowerIsBetter(sum.Name))
		st.Count = sum.Count
		if curve != nil {
			r.Curve[sum.Name] = curve
		}
		r.Stats[sum.Name] = st
	}
	for _, a := range s.Alarms() {
		if a.Kind != metrics.AlarmNaN && a.Kind != metrics.AlarmInf {
			continue
		}
		if st := r.Stats[a.Metric]; st != nil && st.NonFinite == nil {
			st.NonFinite = &a
		}
	}
	return r
}

// valueOf is a metric's value in a run (see Stat) and its curve.
func valueOf(series []*metrics.Series, lower bool) (*Stat, []metrics.Point) {
	var stepped []*metrics.Series
	for _, ser := range series {
		if slices.ContainsFunc(ser.Points(), func(p metrics.Point) bool { return p.Step >= 0 }) {
			stepped = append(stepped, ser)
		}
	}
	if len(stepped) > 1 {
		if pts, ok := meanAtSteps(stepped); ok {
			st := &Stat{Of: fmt.Sprintf("mean of %d ranks", len(stepped)), Last: pts[len(pts)-1], Best: bestOf(pts, lower)}
			return st, pts
		}
	}
	var ser *metrics.Series
	switch {
	case len(stepped) > 0:
		ser = slices.MinFunc(stepped, func(a, b *metrics.Series) int {
			return cmp.Or(cmp.Compare(a.Rank.Replica, b.Rank.Replica), cmp.Compare(a.Rank.Local, b.Rank.Local))
		})
	case len(series) > 0:
		ser = slices.MaxFunc(series, func(a, b *metrics.Series) int { return cmp.Compare(a.Count, b.Count) })
	default:
		return &Stat{Best: metrics.Point{Value: math.NaN()}}, nil
	}
	pts := slices.Clone(ser.Points())
	if len(stepped) > 0 {
		pts = slices.DeleteFunc(pts, func(p metrics.Point) bool { return p.Step < 0 })
		// A bar's drawing is at its position (issue #35), and may be read before the
		// step lines of the same steps (stderr beside stdout): the curve goes by step.
		slices.SortStableFunc(pts, func(a, b metrics.Point) int { return cmp.Compare(a.Step, b.Step) })
	}
	// Last and Best are read off the curve, so that the table, the chart and --json
	// agree, and Best's step is the step of that value (a progress bar's last frame,
	// read without a step, is not the value at any step).
	st := &Stat{Of: ser.Rank.String(), Last: ser.Last, Best: bestOf(pts, lower)}
	if len(pts) > 0 {
		st.Last = pts[len(pts)-1]
	}
	return st, pts
}

// meanAtSteps is the mean over the series at each step, when each has a value at
// exactly the same steps (its last at a step, for a step logged twice); ok is false
// otherwise.
func meanAtSteps(series []*metrics.Series) ([]metrics.Point, bool) {
	at := func(ser *metrics.Series) ([]int64, map[int64]metrics.Point) {
		m := map[int64]metrics.Point{}
		var steps []int64
		for _, p := range ser.Points() {
			if p.Step < 0 {
				continue
			}
			if _, ok := m[p.Step]; !ok {
				steps = append(steps, p.Step)
			}
			m[p.Step] = p
		}
		return steps, m
	}
	steps, first := at(series[0])
	maps := []map[int64]metrics.Point{first}
	for _, ser := range series[1:] {
		st, m := at(ser)
		if len(st) != len(steps) {
			return nil, false
		}
		for _, s := range steps {
			if _, ok := m[s]; !ok {
				return nil, false
			}
		}
		maps = append(maps, m)
	}
	out := make([]metrics.Point, 0, len(steps))
	for _, s := range steps {
		sum, last := 0.0, int64(0)
		for _, m := range maps {
			sum += m[s].Value
			last = max(last, m[s].Time)
		}
		out = append(out, metrics.Point{Step: s, Time: last, Value: sum / float64(len(maps))})
	}
	slices.SortFunc(out, func(a, b metrics.Point) int { return cmp.Compare(a.Step, b.Step) })
	return out, len(out) > 0
}

// bestOf is the best finite point of pts (Value NaN when none is finite).
func bestOf(pts []metrics.Point, lower bool) metrics.Point {
	best := metrics.Point{Step: -1, Value: math.NaN()}
	for _, p := range pts {
		if math.IsNaN(p.Value) || math.IsInf(p.Value, 0) {
			continue
		}
		if math.IsNaN(best.Value) || lower && p.Value < best.Value || !lower && p.Value > best.Value {
			best = p
		}
	}
	return best
}

// Names lists the metrics of runs, in order of first appearance (run by run).
func Names(runs []*Run) []string {
	var out []string
	seen := map[string]bool{}
	for _, r := range runs {
		for _, n := range r.Names {
			if !seen[n] {
				seen[n] = true
				out = append(out, n)
			}
		}
	}
	return out
}

// Sort orders runs by the best value of metric, the best first; runs without it go
// last, in their order.
func Sort(runs []*Run, metric string) {
	lower := metrics.LowerIsBetter(metric)
	best := func(r *Run) (float64, bool) {
		st := r.Stats[metric]
		if st == nil || math.IsNaN(st.Best.Value) {
			return 0, false
		}
		return st.Best.Value, true
	}
	slices.SortStableFunc(runs, func(a, b *Run) int {
		va, oka := best(a)
		vb, okb := best(b)
		switch {
		case !oka || !okb:
			if oka == okb {
				return 0
			}
			if oka {
				return -1
			}
			return 1
		case lower:
			return cmp.Compare(va, vb)
		}
		return cmp.Compare(vb, va)
	})
}

// MarkAlarms sets the Alarm of each run whose metric went NaN or Inf, or whose value
// at the furthest step every run has reached is more than factor times the sweep's
// median there (on the bad side: above it for a loss, below for an accuracy). The
// median needs three runs with a value at that step.
func MarkAlarms(runs []*Run, metric string, factor float64) {
	for _, r := range runs {
		if st := r.Stats[metric]; st != nil && st.NonFinite != nil {
			a := st.NonFinite
			r.Alarm = fmt.Sprintf("%s %s", metric, metrics.FormatValue(a.Value))
			if a.Step >= 0 {
				r.Alarm += fmt.Sprintf(" at step %d", a.Step)
			}
		}
	}
	if factor <= 1 {
		return
	}
	// The furthest step every run with a curve has reached.
	common := int64(math.MaxInt64)
	n := 0
	for _, r := range runs {
		pts := r.Curve[metric]
		if len(pts) == 0 || pts[len(pts)-1].Step < 0 {
			continue
		}
		n++
		common = min(common, pts[len(pts)-1].Step)
	}
	if n < 3 {
		return
	}
	vals := make([]float64, 0, n)
	at := make(map[*Run]float64, n)
	for _, r := range runs {
		v, ok := valueAt(r.Curve[metric], common)
		if !ok {
			continue
		}
		at[r] = v
		vals = append(vals, v)
	}
	if len(vals) < 3 {
		return
	}
	slices.Sort(vals)
	med := vals[len(vals)/2]
	if len(vals)%2 == 0 {
		med = (vals[len(vals)/2-1] + vals[len(vals)/2]) / 2
	}
	if !(med > 0) {
		return // a ratio means nothing across zero
	}
	lower := metrics.LowerIsBetter(metric)
	for r, v := range at {
		if r.Alarm != "" {
			continue
		}
		switch {
		case lower && v > factor*med:
			r.Alarm = fmt.Sprintf("%s %s at step %d: %.1fx the sweep's median %s", metric, metrics.FormatValue(v), common, v/med, metrics.FormatValue(med))
		case !lower && v > 0 && v < med/factor:
			r.Alarm = fmt.Sprintf("%s %s at step %d: 1/%.1f of the sweep's median %s", metric, metrics.FormatValue(v), common, med/v, metrics.FormatValue(med))
		}
	}
}

// valueAt is the finite value of the last point at or before step.
func valueAt(pts []metrics.Point, step int64) (float64, bool) {
	for i := len(pts) - 1; i >= 0; i-- {
		p := pts[i]
		if p.Step >= 0 && p.Step <= step && !math.IsNaN(p.Value) && !math.IsInf(p.Value, 0) {
			return p.Value, true
		}
	}
	return 0, false
}

// readParallel is how many apps' logs ReadRuns reads at once: the reading is mostly
// the disk and one core's parsing.
const readParallel = 4

// ReadRuns reads the metrics of the apps hs whose read is true (those that have run),
// a few at once, and returns a Run per app, in order. An app not read, or whose logs
// cannot be read (warn says why), has a Run without metrics.
func ReadRuns(ctx context.Context, src MetricsReader, hs []spec.Handle, read []bool, cfg metrics.Config, warn func(string)) []*Run {
	runs := make([]*Run, len(hs))
	sem := make(chan struct{}, readParallel)
	var wg sync.WaitGroup
	for i, h := range hs {
		runs[i] = &Run{Handle: h.String(), Stats: map[string]*Stat{}}
		if !read[i] {
			continue
		}
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			d, err := src.Describe(ctx, h)
			if err != nil || len(d.Status.Roles) == 0 {
				return // never launched
			}
			store := metrics.NewStore(cfg)
			if _, err := metrics.Read(ctx, src, h, d, time.Time{}, store, metrics.NewNamerOf(d)); err != nil && warn != nil {
				warn(fmt.Sprintf("metrics of %s: %v", h, err))
			}
			runs[i] = RunOf(h.String(), store)
		})
	}
	wg.Wait()
	return runs
}

// Headline is the metric a comparison of runs sorts by: the first run's headline.
func Headline(runs []*Run) string {
	for _, r := range runs {
		if r.Headline != "" {
			return r.Headline
		}
	}
	return ""
}
