package sweep

import (
	"math"
	"testing"
	"time"

	"github.com/wick-dev/wick/engine/metrics"
	"github.com/wick-dev/wick/engine/sched"
)

// TestCurveIsTheStepsOfTheLongestSeries: demo.train's replica writes its progress bar
// on stderr ("loss=2.89", no rank prefix) beside its ranks' step lines; when the bar's
// line is read first, its value is at the bar's position (3/3: step 3, issue #35). The
// app's curve (the chart of a sweep, and the median check of MarkAlarms and
// --stop-on-nan) is its rank's steps in order, so that the chart keeps a step axis.
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
	if len(pts) != 4 {
		t.Fatalf("the curve: %v, want the 3 steps' values and the bar's", pts)
	}
	for i, p := range pts {
		if p.Step != int64(i) {
			t.Errorf("point %d: step %d, want %d (%v)", i, p.Step, i, pts)
		}
	}
}

// TestRunValueIsDefined: a run's value for a metric is the mean over its ranks at each
// step when every rank logs it at the same steps, else rank 0's series; never the rank
// that printed last (two identical apps showed 2.6232 and 2.5663 as their LAST LOSS).
// BEST @STEP is the step of that value's best.
func TestRunValueIsDefined(t *testing.T) {
	t0 := time.Unix(1000, 0)
	run := func(lines map[int][]string, order []int) *Stat {
		st := metrics.NewStore(metrics.DefaultConfig())
		idx := map[int]int{}
		for _, rep := range order {
			st.Add(sched.Line{Role: "trainer", Replica: rep, Text: lines[rep][idx[rep]], Time: t0})
			idx[rep]++
		}
		return RunOf("local_cwd://wick/a", st).Stats["loss"]
	}
	// Both ranks log steps 1-3 (rank 1 last): the mean at each step, 2.7 2.6 2.3.
	all := map[int][]string{
		0: {"step 1 loss 2.6", "step 2 loss 2.5", "step 3 loss 2.4"},
		1: {"step 1 loss 2.8", "step 2 loss 2.7", "step 3 loss 2.2"},
	}
	s := run(all, []int{0, 1, 0, 1, 0, 1})
	if s.Of != "mean of 2 ranks" || s.Last.Step != 3 || math.Abs(s.Last.Value-2.3) > 1e-9 || s.Best.Step != 3 || math.Abs(s.Best.Value-2.3) > 1e-9 {
		t.Errorf("all ranks: %+v", s)
	}
	// The same lines read in another order: the same value.
	if s2 := run(all, []int{1, 1, 1, 0, 0, 0}); s2.Last != s.Last || s2.Best != s.Best {
		t.Errorf("another order: %+v, want %+v", s2, s)
	}
	// Rank 1 logs steps 1-2 only: rank 0's series, whoever printed last.
	some := map[int][]string{
		0: {"step 1 loss 2.6", "step 2 loss 2.5", "step 3 loss 2.55"},
		1: {"step 1 loss 2.8", "step 2 loss 2.1"},
	}
	s = run(some, []int{0, 0, 0, 1, 1})
	if s.Of != "trainer/0" || s.Last.Value != 2.55 || s.Last.Step != 3 || s.Best.Value != 2.5 || s.Best.Step != 2 {
		t.Errorf("rank 0: %+v", s)
	}
}
