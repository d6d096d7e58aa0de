package tui_test

import (
	"image/color"
	"strings"
	"testing"

	tea "charm.land/bubbletea/v2"

	"github.com/wick-dev/wick/internal/testkit"
)

// TestSweepFromTheForm: in the argument form, ctrl+g turns an argument into a list
// of values, each checked as the component checks it (a bad one is named), and
// brings the "max parallel" field; ctrl+g again makes it one value again. Enter
// opens the sweep's preview, the grid as `wick run --sweep --dryrun` prints it (the
// Runner's PlanSweep); enter launches it, and the app list shows the sweep's row
// until its three apps succeeded, its row selected.
func TestSweepFromTheForm(t *testing.T) {
	e := newEnv(t)
	before := e.launch(lossApp("before", "1"))
	e.wait(before)
	d := newDriver(t, e.opts, 160, 48)
	d.waitScreen("▸ local_cwd://wick/before-") // selected: the launch must move the cursor to the sweep
	openForm(d, "utils.echo")

	d.focus("num_replicas", "tab")
	d.keys("ctrl+g")
	d.contains("max parallel")
	d.typ("1,x")
	d.contains(`✗ "x": want an int`)
	d.keys("ctrl+g") // one value again: "1,x" is not an integer either
	d.lacks("max parallel")
	d.keys("ctrl+u")
	d.typ("1")

	d.focus("msg", "shift+tab")
	d.keys("ctrl+g")
	d.typ("a,b,c")
	d.contains("sweep: 3 values of string")
	d.focus("max parallel", "tab")
	d.typ("0")
	d.contains("✗ want 1 or more")
	d.keys("backspace")
	d.typ("2")
	d.keys("enter")
	d.waitScreen("=== SWEEP sweep-")
	d.contains("3 apps of utils.echo on local_cwd, at most 2 at once", "MSG", "=== APP 1 OF 3",
		"Chosen when each app is launched")
	scr := d.screen()
	for _, v := range []string{"a", "b", "c"} {
		if !strings.Contains(scr, "local_cwd://wick/echo-msg"+v+"-") {
			t.Errorf("no app of msg=%s in the grid:\n%s", v, scr)
		}
	}
	d.keys("enter")
	d.contains("launched sweep sweep-")
	d.waitScreen("sweep of 3: 3 succeeded")
	d.waitUntil("the new sweep's row selected", func(scr string) bool {
		for _, l := range strings.Split(scr, "\n") {
			if strings.Contains(l, "▸ + sweep-") && strings.Contains(l, "sweep of 3") {
				return true
			}
		}
		return false
	})
}

// TestSweepScriptFlagsFromTheForm: ctrl+g on the script's arguments of utils.sh opens
// the field of its swept flags (as --sweep sweeps a name the component does not
// have); a name the component has is refused there; the preview's grid sets --lr V
// after the script's arguments, one app per value of the range.
func TestSweepScriptFlagsFromTheForm(t *testing.T) {
	e := newEnv(t)
	d := newDriver(t, e.opts, 160, 48)
	openForm(d, "utils.sh")
	d.focus("-- args", "tab")
	d.typ("echo")
	d.keys("ctrl+g")
	d.contains("▸  -- sweep flags", "max parallel")
	d.typ("cpu=1,2")
	d.keys("enter")
	d.contains("cpu is an argument of utils.sh: sweep its field")
	d.keys("ctrl+u")
	d.typ("lr=0.1..0.2:0.1")
	d.contains("sweep: 2 points")
	d.keys("enter")
	d.waitScreen("=== SWEEP sweep-")
	d.contains("2 apps of utils.sh on local_cwd", "LR", "local_cwd://wick/sh-lr0.1-", "local_cwd://wick/sh-lr0.2-", `echo --lr 0.1`)
	d.keys("esc")
	d.keys("ctrl+g") // on the flags' field: none swept any more
	d.lacks("-- sweep flags", "max parallel")
}

// TestSweepPreviewFollowsTheTheme: the sweep's preview is drawn again in the new
// theme when the terminal's background changes, as the dry run's preview is; before,
// it kept the colors it was planned in until the user left it.
func TestSweepPreviewFollowsTheTheme(t *testing.T) {
	e := newEnv(t)
	opts := e.opts
	opts.Theme = "auto"
	d := newDriver(t, opts, 160, 48)
	openForm(d, "utils.echo")
	d.focus("msg", "tab")
	d.keys("ctrl+g")
	d.typ("a,b")
	d.keys("enter")
	d.waitScreen("=== SWEEP sweep-")
	dark := d.m.Screen()
	d.send(tea.BackgroundColorMsg{Color: color.White})
	testkit.Wait(t, cmdTimeout, "the sweep preview drawn in the light theme", func() (bool, string) {
		d.send(tick())
		light := d.m.Screen()
		// The frame around it follows the theme at once; the grid's own lines only
		// once the preview rendered them again.
		return grid(light) != grid(dark), light
	})
	d.contains("=== SWEEP sweep-")
}

// grid is the sweep preview's grid as drawn, colors included: from its title to its
// first app's plan.
func grid(screen string) string {
	i, j := strings.Index(screen, "SWEEP sweep-"), strings.Index(screen, "APP 1 OF")
	if i < 0 || j < i {
		return ""
	}
	return screen[i:j]
}
