package compare

import (
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/wick-dev/wick/engine/metrics"
	"github.com/wick-dev/wick/engine/sweep"
	"github.com/wick-dev/wick/themes"
	"github.com/wick-dev/wick/tui/common"
)

// BenchmarkChart100x10k draws one frame of the compare view's chart: 100 apps of a
// sweep, each a loss curve of 10,000 steps read into a metrics.Store (as the view
// reads them), on a 160x40 terminal; beside it, the rank chart's case of one app.
func BenchmarkChart100x10k(b *testing.B) {
	view := func(n int) *Model {
		m := New(&common.Context{Theme: themes.Plain(), Width: 160, Height: 40}, "sweep-bench", []string{"lr"}, nil)
		for a := range n {
			st := metrics.NewStore(metrics.DefaultConfig())
			var p metrics.Parsed
			for i := range 10_000 {
				p.Reset()
				p.Step, p.HasStep = int64(i), true
				v := 0.3 + 3*math.Exp(-float64(i)/(2000+float64(a)*50)) + 0.01*float64((i*7+a)%13)
				p.Samples = append(p.Samples, metrics.Sample{Name: "loss", Value: v})
				st.AddParsed(metrics.Rank{Role: "trainer", Local: -1}, time.Unix(int64(i), 0), &p)
			}
			m.runs = append(m.runs, sweep.RunOf(fmt.Sprint("app", a), st))
			m.labels = append(m.labels, fmt.Sprintf("lr=%d", a))
		}
		m.metrics, m.loaded, m.chart = []string{"loss"}, true, true
		return m
	}
	for _, n := range []int{100, 1} {
		m := view(n)
		b.Run(fmt.Sprintf("apps-%d", n), func(b *testing.B) {
			for b.Loop() {
				_ = m.View()
			}
		})
	}
}
