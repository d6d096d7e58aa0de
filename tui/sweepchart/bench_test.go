package sweepchart

import (
	"math"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/wick-dev/wick/engine/metrics"
	"github.com/wick-dev/wick/engine/spec"
	"github.com/wick-dev/wick/engine/sweep"
	"github.com/wick-dev/wick/internal/testkit"
	"github.com/wick-dev/wick/themes"
	"github.com/wick-dev/wick/tui/chart"
	"github.com/wick-dev/wick/tui/common"
)

// Overlay sizes of the figure: 100 runs x 10k points, on a 200 x 50 screen.
const (
	benchRuns   = 100
	benchPoints = 10000
	benchW      = 200
	benchH      = 50
)

// benchCurve is a noisy falling loss of n steps; lr scales how fast it falls.
func benchCurve(n int, lr float64) []metrics.Point {
	pts := make([]metrics.Point, n)
	for i := range pts {
		noise := 0.05 * math.Sin(float64(i)*12.9898+lr*78.233)
		pts[i] = metrics.Point{Step: int64(i), Time: int64(i) * 1e8, Value: 0.3 + 3*math.Exp(-float64(i)*lr/1000) + noise}
	}
	return pts
}

// BenchmarkOverlay100x10k: one frame of the sweep chart (its View: the apps sorted by
// their best loss, the alarms against the median, the overlay drawn, in the dark
// theme's colors) of 100 finished apps that logged 10k steps of loss each, read into a
// metrics.Store as the view reads them (which keeps 4096 points of a series: 2 per
// step, averaged); beside it the rank chart's own drawing (chart.Render) of the same
// curves, what the overlay adds to the chart it reuses, and the overlay of the raw
// 10k points of each app. The figure asked: under 16 ms a frame.
func BenchmarkOverlay100x10k(b *testing.B) {
	theme := themes.Default()
	ctx := &common.Context{Theme: theme, Width: benchW, Height: benchH, Now: time.Now}
	m := New(ctx, "sweep-b3nchm4k")
	m.loaded = true
	m.snap.runs = map[string]*sweep.Run{}
	var series, raw []chart.Series
	for i := range benchRuns {
		lr := 0.5 + float64(i)/20
		h := "local_cwd://wick/demo-train-lr" + strconv.Itoa(i)
		pts := benchCurve(benchPoints, lr)
		m.snap.apps = append(m.snap.apps, spec.AppStatus{Handle: h, State: spec.Succeeded,
			Sweep: &spec.SweepRef{ID: "sweep-b3nchm4k", Names: []string{"lr"}, Values: map[string]string{"lr": strconv.FormatFloat(lr, 'g', -1, 64)}}})
		st := metrics.NewStore(metrics.DefaultConfig())
		var p metrics.Parsed
		for _, pt := range pts {
			p.Reset()
			p.Step, p.HasStep = pt.Step, true
			p.Samples = append(p.Samples, metrics.Sample{Name: "loss", Value: pt.Value})
			st.AddParsed(metrics.Rank{Role: "trainer", Local: 0}, time.Unix(0, pt.Time), &p)
		}
		run := sweep.RunOf(h, st)
		m.snap.runs[h] = run
		series = append(series, chart.Series{Label: "lr=" + strconv.Itoa(i), Points: run.Curve["loss"]})
		raw = append(raw, chart.Series{Label: "lr=" + strconv.Itoa(i), Points: pts})
	}
	m.snap.names = []string{"loss"}
	b.Logf("load %.1f", testkit.Load())
	b.Run("overlay-view", func(b *testing.B) {
		defer cpuPerOp(b)()
		for b.Loop() {
			m.gen++ // a new reading: drawn again
			_ = m.View()
		}
	})
	b.Run("overlay-view-unchanged", func(b *testing.B) {
		defer cpuPerOp(b)()
		for b.Loop() {
			_ = m.View()
		}
	})
	b.Run("rank-chart-render", func(b *testing.B) {
		o := chart.Options{Width: benchW, Height: benchH - headerLines, Style: theme.Prefix, Dim: func(s string) string { return theme.Muted.Render(s) }}
		defer cpuPerOp(b)()
		for b.Loop() {
			_ = chart.Render(series, o)
		}
	})
	b.Run("overlay-raw-10k", func(b *testing.B) {
		o := m.panel.Options(benchW, benchH-headerLines, func(s string) string { return theme.Muted.Render(s) })
		raws := make([]Series, len(raw))
		for i, r := range raw {
			raws[i] = Series{Label: r.Label, Points: r.Points}
		}
		defer cpuPerOp(b)()
		for b.Loop() {
			_ = Draw(raws, o, theme.Prefix)
		}
	})
	b.Run("overlay-view-log-smoothed", func(b *testing.B) {
		m.panel.ToggleLog()
		m.panel.CycleSmooth()
		defer m.panel.ToggleLog()
		defer cpuPerOp(b)()
		for b.Loop() {
			m.gen++
			_ = m.View()
		}
	})
}

// cpuPerOp reports the CPU time of the process per op ("cpu-ms/op") when the returned
// func is called: on a machine shared with other builds, the wall time per op counts
// the waits for a core too.
func cpuPerOp(b *testing.B) func() {
	cpu := func() time.Duration {
		var ru syscall.Rusage
		_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
		return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	}
	start := cpu()
	return func() {
		b.ReportMetric(float64(cpu()-start)/float64(time.Millisecond)/float64(b.N), "cpu-ms/op")
	}
}
