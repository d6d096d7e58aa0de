package tui_test

import (
	"testing"
	"time"

	"github.com/wick-dev/wick/engine/spec"
	"github.com/wick-dev/wick/internal/testkit"
)

// TestWallHeaderShowsHang: a running app that logged two steps and then went quiet
// (its hang time set to 2s in its AppDef, as `wick run --hang-after 2s` does) raises
// the hang alarm in its wall's header, naming its only rank as at step 2.
func TestWallHeaderShowsHang(t *testing.T) {
	e := newEnv(t)
	app := &spec.AppDef{
		Name:     "quiet",
		Metadata: map[string]string{spec.MetaHangAfter: "2s"},
		Roles: []spec.Role{{Name: "trainer", Entrypoint: "sh", NumReplicas: 1,
			Args: []string{"-c", `echo "step 1 loss 2.5"; sleep 0.3; echo "step 2 loss 2.4"; sleep 120`}}},
	}
	h := e.launch(app)
	defer e.cancel(h)

	d := newDriver(t, e.opts, 160, 40)
	d.async = true // the wall follows a running app: its reads return as lines come
	d.send(tick())
	d.selected(h)
	d.keys("l")
	d.waitScreen("step 2 loss 2.4")
	deadline := time.Now().Add(testkit.Scale(cmdTimeout))
	for !d.shows("hang: no output or new step for") {
		if time.Now().After(deadline) {
			t.Fatalf("no hang alarm in the wall's header:\n%s", d.screen())
		}
		time.Sleep(300 * time.Millisecond)
		d.send(tick())
	}
	d.contains("(alarm after 2s); every rank stopped at step 2", "RUNNING")
	d.m.Close()
}
