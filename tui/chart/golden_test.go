package chart

import (
	"testing"

	"github.com/wick-dev/wick/engine/metrics"
	"github.com/wick-dev/wick/internal/viewtest"
)

// TestGoldenTwoRanks: the chart of two flat ranks, each row as testdata/two_ranks.golden
// explains it from the code that draws it.
func TestGoldenTwoRanks(t *testing.T) {
	flat := func(v float64) []metrics.Point {
		pts := make([]metrics.Point, 40)
		for i := range pts {
			pts[i] = metrics.Point{Step: int64(i), Time: int64(i) * 1e9, Value: v}
		}
		return pts
	}
	out := Render([]Series{{Label: "rank 0", Points: flat(4)}, {Label: "rank 1", Points: flat(0)}}, Options{Width: 30, Height: 8})
	viewtest.Golden(t, "testdata/two_ranks.golden", out)
}
