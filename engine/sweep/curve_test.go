package sweep

import (
	"testing"
	"time"

	"github.com/wick-dev/wick/engine/metrics"
	"github.com/wick-dev/wick/engine/sched"
)

// TestCurveIsTheStepsOfTheLongestSeries: demo.train's replica writes its progress bar
// on stderr ("loss=2.89", no rank prefix, no step) beside its ranks' step lines; when
// the bar's line is read first, its value has no step. The app's curve (the chart of
// a sweep, and the median check of MarkAlarms and --stop-on-nan) is its rank's
// steps, without that value, so that the chart keeps a step axis.
func TestCurveIsTheStepsOfTheLongestSeries(t *testing.T) {
	st := metrics.NewStore(metrics.DefaultConfig())
	t0 := time.Unix(1000, 0)
	add := func(text string) {
		st.Add(sched.Line{Role: "trainer", Replica: 0, Text: text, Time: t0})
	}
	add("Epoch 0: 100%|██████████| 3/3 [00:00<00:00, 200.00it/s, loss=2.8924]")
	for _, l := range []string{"[rank 0] epoch 0 step 0 loss 2.9589", "[rank 0] epoch 0 step 1 loss 2.9091", "[rank 0] epoch 0 step 2 loss 2.8924"} {
		add(l)
	}
	pts := RunOf("local_cwd://wick/demo-train-1", st).Curve["loss"]
	if len(pts) != 3 {
		t.Fatalf("the curve: %v, want the 3 steps' values", pts)
	}
	for i, p := range pts {
		if p.Step != int64(i) {
			t.Errorf("point %d: step %d, want %d (%v)", i, p.Step, i, pts)
		}
	}
}
