package sweep

import (
	"math"
	"strings"
	"testing"

	"github.com/wick-dev/wick/engine/metrics"
)

func curveRun(h string, vals ...float64) *Run {
	r := &Run{Handle: h, Stats: map[string]*Stat{}, Curve: map[string][]metrics.Point{}}
	st := &Stat{Best: metrics.Point{Value: math.NaN()}}
	for i, v := range vals {
		p := metrics.Point{Step: int64(i + 1), Value: v}
		r.Curve["acc"] = append(r.Curve["acc"], p)
		st.Count++
		st.Last = p
		if math.IsNaN(st.Best.Value) || v > st.Best.Value {
			st.Best = p
		}
	}
	r.Stats["acc"] = st
	return r
}

// TestMarkAlarmsHigherIsBetter: for an accuracy, the run far below the median is
// marked, at the furthest step every run reached, and the best sorts first.
func TestMarkAlarmsHigherIsBetter(t *testing.T) {
	runs := []*Run{curveRun("a", 0.5, 0.8), curveRun("b", 0.5, 0.9, 0.95), curveRun("c", 0.1, 0.1), curveRun("d", 0.6, 0.85)}
	MarkAlarms(runs, "acc", 3)
	if !strings.Contains(runs[2].Alarm, "acc 0.1 at step 2: 1/8.2 of the sweep's median 0.825") {
		t.Errorf("c: %q", runs[2].Alarm)
	}
	for _, r := range []*Run{runs[0], runs[1], runs[3]} {
		if r.Alarm != "" {
			t.Errorf("%s marked: %q", r.Handle, r.Alarm)
		}
	}
	Sort(runs, "acc")
	var order []string
	for _, r := range runs {
		order = append(order, r.Handle)
	}
	if strings.Join(order, "") != "bdac" {
		t.Errorf("order %v", order)
	}
}
