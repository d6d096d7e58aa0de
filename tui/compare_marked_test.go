package tui_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/wick-dev/wick/components"
	"github.com/wick-dev/wick/engine/local"
	"github.com/wick-dev/wick/engine/spec"
	"github.com/wick-dev/wick/engine/sweep"
	"github.com/wick-dev/wick/internal/testkit"
)

// lossApp is a real local app that prints three steps of a loss of v and ends.
func lossApp(name, v string) *spec.AppDef {
	return &spec.AppDef{Name: name, Roles: []spec.Role{{Name: "t", Image: "/", Entrypoint: "sh",
		Args: []string{"-c", `for s in 1 2 3; do echo "step $s loss $0"; done`, v}, NumReplicas: 1}}}
}

// TestCompareMarkedApps: in the app list, space marks two apps launched alone and
// one app of a sweep (planned and launched through the Runner's one sweep call, as
// the form does); c compares the three marked apps, whatever sweep they are of: a
// column for the sweep's swept name ("-" for the apps of no sweep), the best loss
// first; p from there charts the three curves, each named by its values or its id.
func TestCompareMarkedApps(t *testing.T) {
	e := newEnv(t)
	a := e.launch(lossApp("alone-a", "2.5"))
	b := e.launch(lossApp("alone-b", "0.5"))
	e.wait(a)
	e.wait(b)
	ctx, cancel := context.WithTimeout(context.Background(), testkit.Scale(waitTimeout))
	defer cancel()
	// The script gets the swept value as --x V: its loss.
	if err := os.WriteFile(filepath.Join(e.root, "work", "loss.sh"), []byte("echo \"step 1 loss $2\"; echo \"step 2 loss $2\"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	p, err := e.r.PlanSweep(ctx, sweep.Request{
		Component: "utils.sh", Args: []string{"--", "sh", "loss.sh"},
		Params:    []sweep.Param{{Name: "x", Values: []string{"1.25"}}},
		Scheduler: local.NameCwd, Lookup: components.Lookup{},
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := e.r.LaunchSweep(ctx, p); err != nil {
		t.Fatal(err)
	}
	swApp := p.Sweep.Entries[0].Handle
	testkit.Wait(t, waitTimeout, "the sweep's app ended", func() (bool, string) {
		st, err := e.r.Status(ctx, e.handle(swApp))
		return err == nil && st.State.Terminal(), ""
	})
	e.wait(swApp)

	d := newDriver(t, e.opts, 160, 40)
	d.waitScreen("alone-a")
	d.waitScreen(p.Sweep.ID)
	d.keys("z") // unfold the sweep's row (the newest first)
	d.waitScreen("sh-x1.25")
	for _, name := range []string{"sh-x1.25", "alone-b", "alone-a"} {
		d.selectRow(name)
		d.keys("space")
	}
	d.contains("● sh-x1.25", "● alone-b", "● alone-a")
	d.keys("c")
	d.waitScreen("3 apps · sorted by the lowest best loss")
	scr := d.screen()
	var order []string
	for _, l := range strings.Split(scr, "\n") {
		f := strings.Fields(l)
		if len(f) > 2 && (strings.HasPrefix(f[0], "alone-") || strings.HasPrefix(f[0], "sh-x")) {
			order = append(order, f[0][:strings.LastIndex(f[0], "-")]+" x="+f[1])
		}
	}
	if strings.Join(order, ", ") != "alone-b x=-, sh-x1.25 x=1.25, alone-a x=-" {
		t.Errorf("compare rows: %v:\n%s", order, scr)
	}
	d.contains("compare 3 marked apps", "X", "LAST LOSS")
	d.keys("p")
	d.waitScreen("3 marked apps · 3 apps: 3 succeeded")
	d.contains("x=1.25")
}

// selectRow moves the app list's cursor to the first row naming name, from the top.
func (d *driver) selectRow(name string) {
	d.t.Helper()
	d.keys("home")
	for range 20 {
		for _, l := range strings.Split(d.screen(), "\n") {
			if strings.Contains(l, "▸") && strings.Contains(l, name) {
				return
			}
		}
		d.keys("down")
	}
	d.t.Fatalf("no row names %s:\n%s", name, d.screen())
}
