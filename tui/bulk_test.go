package tui_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/wick-dev/wick/engine/docker"
	"github.com/wick-dev/wick/engine/local"
	"github.com/wick-dev/wick/engine/sched"
	"github.com/wick-dev/wick/engine/spec"
	"github.com/wick-dev/wick/internal/testkit"
)

// TestBulkCancelShowsProgress: a bulk cancel of containers that wait out their grace
// period says how far it has got while it runs, then how it ended.
func TestBulkCancelShowsProgress(t *testing.T) {
	img := scopeImage(t)
	reg := &sched.Registry{}
	local.Register(reg)
	reg.Register(docker.Name, docker.New)
	e := newEnvWith(t, envConfig{reg: reg})
	ctx, cancel := context.WithTimeout(context.Background(), testkit.Scale(2*time.Minute))
	defer cancel()
	var hs []spec.Handle
	for _, name := range []string{"one", "two", "three"} {
		app := &spec.AppDef{Name: name, Roles: []spec.Role{spec.NewRole("worker", img, "/helper", "stubborn")}}
		h, err := e.r.Run(ctx, app, docker.Name, spec.Cfg{docker.OptStopTimeout: 3}, "", nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = e.r.Delete(context.Background(), h, true) })
		hs = append(hs, h)
	}

	d := newDriver(t, e.opts, 160, 24)
	d.waitScreen("3 running")
	d.keys("space", "space", "space")
	d.contains("3 marked")
	d.async = true // the cancel takes the grace period: run it as Bubble Tea would
	d.keys("x")
	// The confirmation comes once the apps' states are read again (appops.Bulk): a
	// listing of the Engine, which takes more than a moment on a busy machine.
	d.waitScreen("Cancel 3 marked apps?")
	d.keys("y")
	d.waitScreen("cancelling ")
	if !strings.Contains(d.screen(), "/3 apps…") {
		t.Fatalf("no progress:\n%s", d.screen())
	}
	d.waitScreen("cancelled 3 apps")
	d.lacks("cancelling ")
	for _, h := range hs {
		st, err := e.r.Status(ctx, h)
		if err != nil || st.State != spec.Cancelled {
			t.Errorf("%s: %v %v", h, st, err)
		}
	}
}
