package tui_test

import (
	"testing"
	"time"

	"github.com/wick-dev/wick/engine/spec"
	"github.com/wick-dev/wick/internal/testkit"
)

// TestAppListMarksAlarmsUnopened: an app whose loss went NaN is marked ⚠ in the app
// list without its log wall ever being opened, describe lists the alarm, and a running
// app is marked as soon as its bad step is written. The next UI knows the finished
// app's alarm from the file it keeps.
func TestAppListMarksAlarmsUnopened(t *testing.T) {
	e := newEnv(t)
	sh := func(name, script string) *spec.AppDef {
		return &spec.AppDef{Name: name, Roles: []spec.Role{{Name: name, Entrypoint: "sh", Args: []string{"-c", script}, NumReplicas: 1}}}
	}
	bad := e.launch(sh("diverged", `echo "step 1 loss 2.5"; echo "step 2 loss nan"`))
	good := e.launch(sh("healthy", `echo "step 1 loss 2.5"; echo "step 2 loss 2.4"`))
	e.wait(bad)
	e.wait(good)
	gate := t.TempDir() + "/gate"
	live := e.launch(sh("running", `echo "step 1 loss 2.5"; i=0; while [ ! -e "`+gate+`" ] && [ $i -lt 600 ]; do sleep 0.05; i=$((i+1)); done; echo "step 2 loss inf"; sleep 30`))

	d := newDriver(t, e.opts, 160, 48)
	d.waitScreen("⚠ diverged")
	d.lacks("⚠ healthy", "⚠ running")

	// The running app: marked once its bad step is in its logs.
	writeFile(t, gate, "")
	deadline := time.Now().Add(testkit.Scale(cmdTimeout))
	for !d.shows("⚠ running") {
		if time.Now().After(deadline) {
			t.Fatalf("the running app's alarm never showed:\n%s", d.screen())
		}
		time.Sleep(200 * time.Millisecond)
		d.send(tick())
	}
	e.cancel(live)

	// Describe lists the alarm, its rank named.
	d.keys("/")
	d.typ("diverged")
	d.keys("enter", "d")
	d.waitScreen("ALARMS")
	d.contains("! loss on diverged/0 is NaN at step 2")
	t.Logf("describe:\n%s", d.screen())
	d.keys("esc")
	d.m.Close()

	// A new UI marks the finished app from what the last one kept.
	d2 := newDriver(t, e.opts, 160, 48)
	d2.waitScreen("⚠ diverged")
	d2.lacks("⚠ healthy")
}
