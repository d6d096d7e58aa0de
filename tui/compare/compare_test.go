package compare_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/wick-dev/wick/engine/runner"
	"github.com/wick-dev/wick/engine/spec"
	"github.com/wick-dev/wick/internal/testkit"
	"github.com/wick-dev/wick/internal/viewtest"
	"github.com/wick-dev/wick/tui/compare"
)

func TestMain(m *testing.M) { viewtest.Main(m) }

// trainer runs a real local app that prints three steps of a loss of v and ends.
func trainer(t *testing.T, r *runner.Runner, v string) spec.Handle {
	t.Helper()
	app := &spec.AppDef{Name: "t", Roles: []spec.Role{{Name: "t", Image: "/", Entrypoint: "sh",
		Args: []string{"-c", `for s in 1 2 3; do echo "step $s loss $0"; done`, v}, NumReplicas: 1}}}
	h, err := r.Run(context.Background(), app, "local_cwd", nil, "", nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), testkit.Scale(time.Minute))
	defer cancel()
	if st, err := r.Wait(ctx, h, 20*time.Millisecond); err != nil || st.State != spec.Succeeded {
		t.Fatalf("%s: %v %v", v, st, err)
	}
	return h
}

// TestCompareSortsByBestLossAndMarksOutliers: the view reads every app's metrics and
// shows one row per app, the best loss first, the NaN and the far-above-median runs
// marked.
func TestCompareSortsByBestLossAndMarksOutliers(t *testing.T) {
	r := viewtest.Runner(t)
	var apps []compare.App
	for _, v := range []string{"1.2", "9", "1", "nan", "1.1"} {
		apps = append(apps, compare.App{Handle: trainer(t, r, v), Values: map[string]string{"v": v}, State: spec.Succeeded})
	}
	vc := viewtest.Context(t, 160, 30, time.Now(), compare.Actions())
	vc.Backend = r
	d := viewtest.New(t, vc, compare.New(vc, "sweep-test", []string{"v"}, apps))
	screen := d.WaitFor("5 apps · sorted by the lowest best loss", "LAST LOSS")
	var order []string
	for _, l := range strings.Split(screen, "\n") {
		if f := strings.Fields(l); len(f) > 2 && strings.HasPrefix(f[0], "t-") {
			order = append(order, f[1])
		}
	}
	if strings.Join(order, " ") != "1 1.1 1.2 9 nan" {
		t.Errorf("rows in order %v:\n%s", order, screen)
	}
	d.Contains("! loss 9 at step 3: 7.8x the sweep's median 1.15", "! loss NaN at step 1")

	// p: the sweep's chart (tui/sweepchart), every app's curve.
	d.Keys("p")
	if v := d.Pushed(); len(v) != 1 || v[0].Title() != "chart sweep-test" {
		t.Errorf("p pushed %v, want the chart of sweep-test", v)
	}
}
