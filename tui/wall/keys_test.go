package wall_test

import (
	"testing"
	"time"

	"github.com/wick-dev/wick/internal/viewtest"
	"github.com/wick-dev/wick/tui/common"
	"github.com/wick-dev/wick/tui/wall"
)

// TestWallRefreshReadsAgain: ctrl+r reads every replica again from its first line.
// The lines are those of the logs, once each (none doubled), and the search runs
// again over them.
func TestWallRefreshReadsAgain(t *testing.T) {
	e := newEnv(t)
	h := e.run(shApp("four", 4, fourWorkers))
	e.wait(h)
	d := e.open(h, 160, 48, nil)
	// 4 replicas of 30 lines, a warning and "done": 128 lines.
	d.waitFor("end of logs", "w3 done", "128 lines held")
	d.keys("i", "/")
	d.typ("done")
	d.keys("enter")
	d.waitFor("4 matches")
	d.keys("ctrl+r")
	d.waitFor("end of logs", "w3 done", "128 lines held", "4 matches")
	d.lacks("256 lines")
}

// TestWallPagesOfPanes: more panes than fit are tiled a page at a time; ] and [ turn
// the pages (each focuses its first pane) and the header says which page is shown.
func TestWallPagesOfPanes(t *testing.T) {
	e := newEnv(t)
	h := e.run(shApp("many", 12, `echo "w$K says hi"`))
	e.wait(h)
	d := e.open(h, 80, 24, nil)
	d.waitFor("end of logs", "w0 says hi")
	d.keys("i")
	d.contains("page 1/", "▸ worker/0")
	d.keys("]")
	d.contains("page 2/")
	d.lacks("▸ worker/0")
	d.keys("[")
	d.contains("page 1/", "▸ worker/0", "w0 says hi")
}

// TestWallEscClosesTheInnermost: esc closes what is open, the innermost first (the
// search field, then the selection, then the zoom), and only then goes back: the
// order in which the wall's parts are asked (Model.do).
func TestWallEscClosesTheInnermost(t *testing.T) {
	e := newEnv(t)
	h := e.run(shApp("esc", 2, `echo "w$K says hi"`))
	e.wait(h)
	// The root's esc row beside the wall's (the root goes back when the view does not).
	vc := viewtest.Context(t, 120, 20, time.Now(), wall.Actions(), []common.Action{common.NewAction(common.ActBack, "back", []string{"esc"}, true)})
	vc.Backend = e.r
	d := viewtest.New(t, vc, wall.New(vc, h, wall.Options{}))
	d.WaitFor("end of logs", "w1 says hi")
	d.Keys("i", "z", "v", "/")
	d.Type("says")
	d.Lacks("zoomed on") // the header is the search field's while it is typed in
	back := func(want string, unwanted ...string) {
		t.Helper()
		d.Keys("esc")
		if len(d.Unhandled) > 0 {
			t.Fatalf("esc went back with %q still open:\n%s", want, d.Screen())
		}
		d.Contains(want)
		d.Lacks(unwanted...)
	}
	back("selecting: ↑/↓ extend", "matches")
	back("zoomed on worker/0", "selecting")
	back("worker/1", "zoomed on")
	d.Keys("esc")
	if len(d.Unhandled) != 1 || d.Unhandled[0] != common.ActBack {
		t.Fatalf("the last esc was not left to the root (back to the app list): %v", d.Unhandled)
	}
}
