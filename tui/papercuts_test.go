package tui_test

import (
	"context"
	"testing"

	"github.com/wick-dev/wick/engine/local"
	"github.com/wick-dev/wick/components"
)

// TestRelaunchOfARelaunchKeepsItsCall: an app launched from `wick run utils.echo ...`,
// relaunched as is with `r`, can itself be relaunched with edits: `e` on the relaunch
// opens the form of utils.echo filled with the first app's arguments.
func TestRelaunchOfARelaunchKeepsItsCall(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	info, err := e.r.DryRunComponent(ctx, "utils.echo", []string{"--msg", "first of its name", "--num_replicas=2"}, local.NameCwd, nil, "", components.Lookup{})
	if err != nil {
		t.Fatal(err)
	}
	hd, err := e.r.Schedule(ctx, info, nil)
	if err != nil {
		t.Fatal(err)
	}
	h := hd.String()
	e.wait(h)

	d := newDriver(t, e.opts, 120, 32)
	d.send(tick())
	d.contains("▸ "+h, "1 app")
	d.keys("r")
	d.contains("Relaunch " + h + " as is?")
	d.keys("y")
	d.contains("launched local_cwd://wick/echo-", "2 apps")
	nh := selectedHandle(t, d)
	if nh == h {
		t.Fatalf("the relaunch is not selected: %s", nh)
	}
	e.wait(nh)
	d.keys("e")
	d.lacks("not known")
	d.contains("utils.echo", "│first of its name", "num_replicas")
}
