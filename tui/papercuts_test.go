package tui_test

import (
	"context"
	"strings"
	"testing"

	"github.com/wick-dev/wick/components"
	"github.com/wick-dev/wick/engine/local"
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
	d.selected(h)
	d.contains("1 app")
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

// TestFirstKeyReplacesAnUntouchedDefault: typing `4` on num_replicas (default 1) gives
// 4, not 14; a field first moved in with `end` is edited, not replaced; `?` says so.
func TestFirstKeyReplacesAnUntouchedDefault(t *testing.T) {
	e := newEnv(t)
	d := newDriver(t, e.opts, 120, 32)
	openForm(d, "utils.echo")
	d.contains("│hello world")
	d.focus("num_replicas", "tab")
	d.contains("│1 ")
	d.typ("4")
	d.contains("│4 ")
	d.lacks("│14", "│41")
	d.typ("2") // touched now: appended
	d.contains("│42 ")
	d.focus("msg", "shift+tab")
	d.keys("end")
	d.typ(" there")
	d.contains("│hello world there")
	d.keys("f1") // ? types into the field
	d.contains("Typing on a field's untouched value (a default) replaces it")
}

// TestSpaceHasOneMeaningInTheListsHelp: in the app list space marks; `?` lists it
// there and not again as page down under Moving.
func TestSpaceHasOneMeaningInTheListsHelp(t *testing.T) {
	e := newEnv(t)
	d := newDriver(t, e.opts, 120, 40)
	d.keys("?")
	s := d.screen()
	if n := strings.Count(s, "space"); n != 1 {
		t.Fatalf("space is listed %d times:\n%s", n, s)
	}
	d.contains("page down")
}

// TestFailedDryRunSaysSoAndHidesLaunch: utils.echo on local_dir with its docker image
// (not a directory) fails to plan: the preview says the dry run failed, offers esc to
// fix the arguments and no launch; enter says the same instead of "not ready".
func TestFailedDryRunSaysSoAndHidesLaunch(t *testing.T) {
	e := newEnv(t)
	d := newDriver(t, e.opts, 120, 24)
	openForm(d, "utils.echo")
	d.focus("scheduler", "tab")
	for range maxPresses {
		if strings.Contains(d.screen(), "◂ local_dir ▸") {
			break
		}
		d.keys("right")
	}
	d.contains("◂ local_dir ▸")
	d.keys("enter")
	d.contains("✗ the dry run failed:", "esc: back to the arguments to fix them")
	d.lacks("launch", "not ready")
	d.keys("enter")
	d.contains("the dry run failed: esc goes back to fix the arguments")
	d.lacks("not ready")
	d.keys("esc")
	d.contains("Arguments", "◂ local_dir ▸")
}

// TestNoticesStayWithTheirView: "sorted by name", said in the app list, is not at the
// foot of the form opened next; the filter's prompt says what enter does there.
func TestNoticesStayWithTheirView(t *testing.T) {
	e := newEnv(t)
	seed(e)
	d := newDriver(t, e.opts, 120, 24)
	d.keys("o")
	d.contains("sorted by name")
	openForm(d, "utils.echo")
	d.lacks("sorted by name")
	for i := 0; i < 5 && !strings.Contains(d.screen(), "Apps  5 apps"); i++ {
		d.keys("esc")
	}
	d.contains("Apps  5 apps")

	d.keys("/")
	d.contains("enter apply the filter", "esc stop typing")
	d.lacks("describe")
	d.typ("fail")
	d.keys("enter")
	d.contains("1 shown", "enter/d describe")
	d.lacks("apply the filter")
}
