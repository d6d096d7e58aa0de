package tui_test

import (
	"strconv"
	"strings"
	"testing"

	"github.com/wick-dev/wick/internal/testkit"
)

// waitScreen sends ticks until the screen shows want.
func (d *driver) waitScreen(want string) {
	d.t.Helper()
	d.waitUntil("the screen shows "+strconv.Quote(want), func(scr string) bool { return strings.Contains(scr, want) })
}

// waitUntil ticks the model until its screen satisfies ok, for cmdTimeout at most on
// a quiet machine (testkit.Wait scales it with the load).
func (d *driver) waitUntil(what string, ok func(screen string) bool) {
	d.t.Helper()
	testkit.Wait(d.t, cmdTimeout, what, func() (bool, string) {
		d.send(tick())
		scr := d.screen()
		return ok(scr), "\n" + scr
	})
}

func TestLocalLaunchDescribeLogs(t *testing.T) {
	e := newEnv(t)
	d := newDriver(t, e.opts, 160, 48)
	d.contains("No apps yet")
	openForm(d, "utils.echo")
	d.contains("Run options · local_cwd", "log_dir", "prepend_cwd")
	d.keys("ctrl+u")
	d.typ("hello from the ui")
	d.keys("enter")
	d.contains("=== SCHEDULER REQUEST (local_cwd) ===", "hello from the ui")
	d.keys("enter")
	d.contains("launched local_cwd://wick/echo-")
	d.waitScreen("SUCCEEDED")
	d.contains("▸ local_cwd://wick/echo-", "0/1")

	d.keys("d")
	d.contains("state:    SUCCEEDED", "echo/0", "=== APPLICATION ===", "logs:     /")
	d.keys("l")
	d.waitScreen("end of logs")
	d.contains("hello from the ui")
	d.keys("esc", "esc")

	// Relaunch: the same AppDef, a new app.
	d.keys("r", "y")
	d.contains("launched local_cwd://wick/echo-")
	d.waitScreen("2 apps")
	d.waitUntil("both apps SUCCEEDED", func(scr string) bool { return strings.Count(scr, "SUCCEEDED") == 2 })

	// Delete the selected (newest) app after confirming.
	d.keys("D", "y")
	d.contains("deleted local_cwd://wick/echo-")
	d.waitScreen("1 app ")
}

func TestLocalCancelRunningApp(t *testing.T) {
	e := newEnv(t)
	d := newDriver(t, e.opts, 160, 48)
	openForm(d, "utils.sh")
	d.focus("-- args", "tab")
	d.typ("sleep 30")
	d.keys("enter", "enter")
	d.waitScreen("RUNNING")
	d.keys("q")
	if !strings.Contains(d.m.QuitNote(), "1 app is still running and keeps running; `wick list` shows it, `wick ui` comes back to it") {
		t.Fatalf("quit note = %q", d.m.QuitNote())
	}
	d.keys("x")
	d.contains("Cancel local_cwd://wick/sh-")
	d.keys("y")
	d.contains("cancelled local_cwd://wick/sh-")
	d.waitScreen("CANCELLED")
}
