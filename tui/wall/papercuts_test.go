package wall_test

import "testing"

// TestOneLineHeldIsSingular: the status line of a wall holding one line says "1 line
// held", and a long save path is cut in its middle, its start kept.
func TestOneLineHeldIsSingular(t *testing.T) {
	e := newEnv(t)
	h := e.run(shApp("one", 1, "echo the only line"))
	e.wait(h)
	d := e.open(h, 120, 20, nil)
	d.waitFor("the only line", "1 line held")
	d.lacks("1 lines held")
	d.keys("S")
	d.keys("ctrl+u")
	d.typ("/home/newcomer/projects/wick-experiments/runs/2026-11-25/one-line-app/worker-0-combined.log")
	d.contains("save to: /home/newcomer/", "…", "/worker-0-combined.log")
	d.keys("esc")
}
