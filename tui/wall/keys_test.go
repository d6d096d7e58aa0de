package wall_test

import "testing"

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
